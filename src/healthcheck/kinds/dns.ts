/**
 * DNS check: resolve `domain` (A and AAAA by default, or one `record-type`) with a c-ares Resolver, on the
 * system's name servers or on `resolver`, within the timeout. `expected-ips` must all be in the answer.
 * Addresses (A, AAAA) are looked up in /etc/hosts first, as Go's resolver does, unless `resolver` is set.
 * Extension over upstream: `resolver` and `record-type` (docs/checks.md, DNS).
 */
import { Resolver } from 'node:dns/promises';
import { isIP, isIPv4 } from 'node:net';
import { Type } from '@sinclair/typebox';
import { durationToMs, formatDuration } from '../../common/duration.ts';
import { baseToJson, checkSchema, describeCheck, errorText, ipField, nonEmpty, parseBase, timeoutText, validateShape, withFields } from './common.ts';
import { lookupHostsFile } from './hosts-file.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, CheckValidationError, type Prepared } from './types.ts';

const RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS'] as const;
type RecordType = (typeof RECORD_TYPES)[number];

export interface DnsDefinition extends BaseDefinition {
  kind: 'dns';
  domain: string;
  expectedIps: string[];
  /** `host[:port]` as written; the system's name servers when absent. */
  resolver?: string;
  /** Absent: A and AAAA, like Go's LookupIPAddr. */
  recordType?: RecordType;
}

const dnsSchema = checkSchema({
  domain: Type.String(),
  'expected-ips': Type.Optional(Type.Array(Type.String())),
  resolver: Type.Optional(Type.String()),
  'record-type': Type.Optional(Type.String()),
});

function parseDns(raw: unknown): DnsDefinition {
  const input = validateShape(dnsSchema, raw);
  const base = parseBase('dns', input);
  const domain = nonEmpty('domain', input.domain);
  const recordType = input['record-type'];
  if (recordType !== undefined && !(RECORD_TYPES as readonly string[]).includes(recordType)) {
    throw new CheckValidationError('record-type', `must be one of ${RECORD_TYPES.join(', ')}, got ${JSON.stringify(recordType)}`);
  }
  const expectedIps = (input['expected-ips'] ?? []).map((ip, i) => ipField(`expected-ips[${i}]`, ip));
  if (expectedIps.length > 0 && recordType !== undefined && recordType !== 'A' && recordType !== 'AAAA') {
    throw new CheckValidationError('expected-ips', `only applies to A and AAAA records, not ${recordType}`);
  }
  if (input.resolver !== undefined) resolverServer(input.resolver);
  return withFields(base, {
    domain,
    expectedIps,
    ...(input.resolver !== undefined ? { resolver: input.resolver } : {}),
    ...(recordType !== undefined ? { recordType: recordType as RecordType } : {}),
  });
}

/** `1.2.3.4`, `1.2.3.4:53`, `::1`, `[::1]:53` → the form `Resolver.setServers` takes. */
function resolverServer(text: string): string {
  const invalid = (): CheckValidationError =>
    new CheckValidationError('resolver', `must be an IP address with an optional port, such as "127.0.0.1:53" or "[::1]:53", got ${JSON.stringify(text)}`);
  let host = text;
  let port: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed !== null) {
    host = bracketed[1] as string;
    port = bracketed[2];
  } else if (isIP(text) === 0) {
    const colon = text.lastIndexOf(':');
    if (colon === -1) throw invalid();
    host = text.slice(0, colon);
    port = text.slice(colon + 1);
  }
  if (isIP(host) === 0 || (bracketed !== null && !host.includes(':'))) throw invalid();
  if (port !== undefined) {
    const number = /^\d+$/.test(port) ? Number(port) : NaN;
    if (!(number >= 1 && number <= 65535)) throw new CheckValidationError('resolver', `port must be between 1 and 65535, got ${JSON.stringify(port)}`);
    return host.includes(':') ? `[${host}]:${number}` : `${host}:${number}`;
  }
  return host;
}

function dnsToJson(def: DnsDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.timeout = formatDuration(def.timeoutNs);
  if (def.expectedIps.length > 0) json['expected-ips'] = def.expectedIps;
  json.domain = def.domain;
  if (def.resolver !== undefined) json.resolver = def.resolver;
  if (def.recordType !== undefined) json['record-type'] = def.recordType;
  json.kind = def.kind;
  return json;
}

function dnsSummary(def: DnsDefinition): string {
  return describeCheck('DNS', def.description, def.domain);
}

/** The records of one type as strings (IPs, names, `10 mx.example`, TXT chunks joined). */
async function query(resolver: Resolver, domain: string, type: RecordType): Promise<string[]> {
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
  }
}

/** A and AAAA together succeed when either has addresses (Go's LookupIPAddr); the A error is reported first. */
async function lookupAddresses(resolver: Resolver, domain: string): Promise<string[]> {
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(domain), resolver.resolve6(domain)]);
  const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
  if (addresses.length > 0) return addresses;
  if (v4.status === 'rejected') throw v4.reason;
  if (v6.status === 'rejected') throw v6.reason;
  throw new Error(`no addresses for ${domain}`);
}

/** Canonical text of an IP so that `::1` equals `0:0:0:0:0:0:0:1` and `::ffff:10.0.0.1` equals `10.0.0.1`. */
function canonicalIp(ip: string): string {
  if (isIPv4(ip)) return ip;
  const v6 = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
  if (mapped === null) return v6;
  const high = parseInt(mapped[1] as string, 16);
  const low = parseInt(mapped[2] as string, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

async function runDns(def: DnsDefinition, signal: AbortSignal): Promise<void> {
  const answer = await resolve(def, signal);
  if (def.expectedIps.length === 0) return;
  const found = new Set(answer.map((ip) => (isIP(ip) === 0 ? ip : canonicalIp(ip))));
  const missing = def.expectedIps.filter((ip) => !found.has(canonicalIp(ip)));
  if (missing.length > 0) {
    // The trailing space is upstream's.
    throw new CheckFailure(`the IP addresses ${missing.join(', ')} were not found. The DNS result was ${answer.join(', ')} `);
  }
}

async function resolve(def: DnsDefinition, signal: AbortSignal): Promise<string[]> {
  const type = def.recordType;
  // An IP literal resolves to itself, as in Go.
  if ((type === undefined || type === 'A' || type === 'AAAA') && isIP(def.domain) !== 0) return [def.domain];
  if (signal.aborted) throw new CheckFailure(`Fail to lookup IP for domain: ${timeoutText(def.timeoutNs)}`);
  // As Go's resolver: addresses come from /etc/hosts first, unless a name server was named explicitly.
  if (def.resolver === undefined && (type === undefined || type === 'A' || type === 'AAAA')) {
    const pinned = await lookupHostsFile(def.domain, type === 'A' ? 4 : type === 'AAAA' ? 6 : null);
    if (pinned.length > 0) return pinned;
  }
  // A Resolver per run: it reads the system's resolv.conf afresh, and cancel() only touches this run. The run
  // signal is the deadline; c-ares' own timeout is only a backstop set past it.
  const resolver = new Resolver({ timeout: durationToMs(def.timeoutNs) + 1_000, tries: 1 });
  if (def.resolver !== undefined) resolver.setServers([resolverServer(def.resolver)]);
  const onAbort = (): void => resolver.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const answer = type === undefined ? await lookupAddresses(resolver, def.domain) : await query(resolver, def.domain, type);
    if (answer.length === 0) throw new Error(`no ${type ?? 'A or AAAA'} records for ${def.domain}`);
    return answer;
  } catch (error) {
    throw new CheckFailure(`Fail to lookup IP for domain: ${signal.aborted ? timeoutText(def.timeoutNs) : errorText(error)}`);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

export const dnsKind: CheckKind<DnsDefinition> = {
  kind: 'dns',
  schema: dnsSchema,
  parse: parseDns,
  toJson: dnsToJson,
  summary: dnsSummary,
  prepare: (def) => Promise.resolve<Prepared>({ run: (signal) => runDns(def, signal), close: () => Promise.resolve() }),
};
