/**
 * The record types a DNS check can ask for, each answer written as one line of text in zone-file order (as `dig
 * +short` prints it), and the `expected-values` compared with those lines: names without case or trailing dot,
 * addresses canonically, CAA values with or without their quotes.
 */
import type { Resolver } from 'node:dns/promises';
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { CheckValidationError } from '../validation-error.ts';

export const RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SRV', 'CAA'] as const;
export type RecordType = (typeof RECORD_TYPES)[number];

/** What an expected value of each type looks like, for the validation message. */
const VALUE_FORMS: Record<RecordType, { form: RegExp; example: string }> = {
  A: { form: /^/, example: '"192.0.2.1"' },
  AAAA: { form: /^/, example: '"2001:db8::1"' },
  CNAME: { form: /^[^\s]+$/, example: 'a name such as "www.example.com"' },
  NS: { form: /^[^\s]+$/, example: 'a name such as "ns1.example.com"' },
  MX: { form: /^\d+ [^\s]+$/, example: '"<priority> <exchange>", such as "10 mx.example.com"' },
  TXT: { form: /^/, example: 'any text' },
  SRV: {
    form: /^\d+ \d+ \d+ [^\s]+$/,
    example: '"<priority> <weight> <port> <target>", such as "10 5 5060 sip.example.com"',
  },
  CAA: { form: /^\d+ [A-Za-z0-9]+ .+$/, example: '"<flags> <tag> <value>", such as "0 issue \\"letsencrypt.org\\""' },
};

/** Validates `expected-values[i]` for the type (undefined: A and AAAA together). */
export function expectedValueField(field: string, value: string, type: RecordType | undefined): string {
  if (type === undefined || type === 'A' || type === 'AAAA') {
    const family = type === 'A' ? isIPv4(value) : type === 'AAAA' ? isIPv6(value) : isIP(value) !== 0;
    if (!family)
      throw new CheckValidationError(
        field,
        `must be an ${type === 'A' ? 'IPv4' : type === 'AAAA' ? 'IPv6' : 'IP'} address for ${type ?? 'A and AAAA'} records, got ${JSON.stringify(value)}`,
      );
    return value;
  }
  if (value === '') throw new CheckValidationError(field, 'must not be empty');
  const { form, example } = VALUE_FORMS[type];
  if (!form.test(value))
    throw new CheckValidationError(field, `must be ${example} for ${type} records, got ${JSON.stringify(value)}`);
  return value;
}

/** `Example.COM.` → `example.com`. */
function canonicalName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

/** Canonical text of an IP so that `::1` equals `0:0:0:0:0:0:0:1` and `::ffff:10.0.0.1` equals `10.0.0.1`. */
export function canonicalIp(ip: string): string {
  if (isIPv4(ip)) return ip;
  const v6 = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
  if (mapped === null) return v6;
  const high = parseInt(mapped[1] as string, 16);
  const low = parseInt(mapped[2] as string, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** The form an answer line and an expected value are compared in. */
export function canonicalValue(type: RecordType | undefined, value: string): string {
  switch (type) {
    case undefined:
    case 'A':
    case 'AAAA':
      return isIP(value) === 0 ? value : canonicalIp(value);
    case 'TXT':
      return value;
    case 'CAA': {
      const [flags, tag, ...rest] = value.split(' ');
      const text = rest.join(' ');
      const unquoted = text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1) : text;
      return `${flags} ${(tag as string).toLowerCase()} ${unquoted}`;
    }
    default: {
      // The name is the last word (MX, SRV) or the whole value (CNAME, NS).
      const space = value.lastIndexOf(' ');
      return value.slice(0, space + 1) + canonicalName(value.slice(space + 1));
    }
  }
}

/** The CAA property tags Node reports (each record object has `critical` and one of them). */
const CAA_TAGS = ['issue', 'issuewild', 'iodef', 'contactemail', 'contactphone'] as const;

/** The records of one type as lines (IPs, names, `10 mx.example`, TXT chunks joined, `0 issue "ca.example"`). */
export async function queryRecords(resolver: Resolver, domain: string, type: RecordType): Promise<string[]> {
  switch (type) {
    case 'A':
      return resolver.resolve4(domain);
    case 'AAAA':
      return resolver.resolve6(domain);
    case 'CNAME':
      return resolver.resolveCname(domain);
    case 'MX':
      return (await resolver.resolveMx(domain)).map((mx) => `${mx.priority} ${mx.exchange}`);
    case 'TXT':
      return (await resolver.resolveTxt(domain)).map((chunks) => chunks.join(''));
    case 'NS':
      return resolver.resolveNs(domain);
    case 'SRV':
      return (await resolver.resolveSrv(domain)).map((srv) => `${srv.priority} ${srv.weight} ${srv.port} ${srv.name}`);
    case 'CAA':
      return (await resolver.resolveCaa(domain)).map((caa) => {
        const record = caa as unknown as Record<string, unknown>;
        const tag = CAA_TAGS.find((name) => typeof record[name] === 'string') ?? 'issue';
        return `${caa.critical} ${tag} ${JSON.stringify(record[tag] ?? '')}`;
      });
  }
}
