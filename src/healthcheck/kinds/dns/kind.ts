/**
 * DNS check: resolve `domain` (A and AAAA by default, or one `record-type`) with a c-ares Resolver, on the
 * system's name servers or on `resolver`, within the timeout. `expected-ips` and `expected-values` (answers as
 * records.ts writes them: `10 mx.example.com`) must all be in the answer.
 * Addresses (A, AAAA) are looked up in /etc/hosts first, as Go's resolver does, unless `resolver` is set.
 * Extension over upstream: `resolver`, `record-type` and `expected-values` (docs/checks.md, DNS).
 */
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { durationToMs, formatDuration } from '../../../common/duration.ts';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  errorText,
  ipField,
  nonEmpty,
  parseBase,
  timeoutText,
  withFields,
} from '../common.ts';
import { Problems } from '../problems.ts';
import {
  canonicalIp,
  canonicalValue,
  expectedValueField,
  queryRecords,
  RECORD_TYPES,
  type RecordType,
} from './records.ts';
import { lookupHostsFile } from './hosts-file.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, type Prepared } from '../types.ts';
import { CheckValidationError } from '../validation-error.ts';

export interface DnsDefinition extends BaseDefinition {
  kind: 'dns';
  domain: string;
  expectedIps: string[];
  /** Answer lines that must all be in the answer, in records.ts's form for the record type. */
  expectedValues: string[];
  /** `host[:port]` as written; the system's name servers when absent. */
  resolver?: string;
  /** Absent: A and AAAA, like Go's LookupIPAddr. */
  recordType?: RecordType;
}

const dnsSchema = checkSchema({
  domain: Type.String(),
  'expected-ips': Type.Optional(Type.Array(Type.String())),
  'expected-values': Type.Optional(Type.Array(Type.String())),
  resolver: Type.Optional(Type.String()),
  'record-type': Type.Optional(Type.String()),
});

function parseDns(raw: unknown): DnsDefinition {
  const { input, problems } = Problems.shape(dnsSchema, raw);
  const base = parseBase('dns', input, problems);
  const domain = problems.check(() => nonEmpty('domain', input.domain), '');
  let recordType = input['record-type'];
  if (recordType !== undefined && !(RECORD_TYPES as readonly string[]).includes(recordType)) {
    problems.add('record-type', `must be one of ${RECORD_TYPES.join(', ')}, got ${JSON.stringify(recordType)}`);
    // The expected values are checked as for A and AAAA records.
    recordType = undefined;
  }
  const expectedIps = (input['expected-ips'] ?? []).map((ip, i) =>
    problems.check(() => ipField(`expected-ips[${i}]`, ip), ip),
  );
  if (expectedIps.length > 0 && recordType !== undefined && recordType !== 'A' && recordType !== 'AAAA') {
    problems.add('expected-ips', `only applies to A and AAAA records, not ${recordType}`);
  }
  const type = recordType as RecordType | undefined;
  const expectedValues = (input['expected-values'] ?? []).map((value, i) =>
    problems.check(() => expectedValueField(`expected-values[${i}]`, value, type), value),
  );
  if (input.resolver !== undefined) problems.check(() => resolverServer(input.resolver as string), undefined);
  problems.throwIfAny();
  return withFields(base, {
    domain,
    expectedIps,
    expectedValues,
    ...(input.resolver !== undefined ? { resolver: input.resolver } : {}),
    ...(recordType !== undefined ? { recordType: recordType as RecordType } : {}),
  });
}

/** `1.2.3.4`, `1.2.3.4:53`, `::1`, `[::1]:53` → the form `Resolver.setServers` takes. */
function resolverServer(text: string): string {
  const invalid = (): CheckValidationError =>
    new CheckValidationError(
      'resolver',
      `must be an IP address with an optional port, such as "127.0.0.1:53" or "[::1]:53", got ${JSON.stringify(text)}`,
    );
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
    if (!(number >= 1 && number <= 65535))
      throw new CheckValidationError('resolver', `port must be between 1 and 65535, got ${JSON.stringify(port)}`);
    return host.includes(':') ? `[${host}]:${number}` : `${host}:${number}`;
  }
  return host;
}

function dnsToJson(def: DnsDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.timeout = formatDuration(def.timeoutNs);
  if (def.expectedIps.length > 0) json['expected-ips'] = def.expectedIps;
  if (def.expectedValues.length > 0) json['expected-values'] = def.expectedValues;
  json.domain = def.domain;
  if (def.resolver !== undefined) json.resolver = def.resolver;
  if (def.recordType !== undefined) json['record-type'] = def.recordType;
  json.kind = def.kind;
  return json;
}

function dnsSummary(def: DnsDefinition): string {
  return describeCheck('DNS', def.description, def.domain);
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

async function runDns(def: DnsDefinition, signal: AbortSignal): Promise<void> {
  const answer = await resolve(def, signal);
  if (def.expectedValues.length > 0) {
    const lines = new Set(answer.map((line) => canonicalValue(def.recordType, line)));
    const missing = def.expectedValues.filter((value) => !lines.has(canonicalValue(def.recordType, value)));
    if (missing.length > 0) {
      const quoted = (values: string[]): string => values.map((value) => JSON.stringify(value)).join(', ');
      throw new CheckFailure(
        `the values ${quoted(missing)} were not found in the ${def.recordType ?? 'A and AAAA'} records of ${def.domain}: ${quoted(answer)}`,
      );
    }
  }
  if (def.expectedIps.length === 0) return;
  const found = new Set(answer.map((ip) => (isIP(ip) === 0 ? ip : canonicalIp(ip))));
  const missing = def.expectedIps.filter((ip) => !found.has(canonicalIp(ip)));
  if (missing.length > 0) {
    // The trailing space is upstream's.
    throw new CheckFailure(
      `the IP addresses ${missing.join(', ')} were not found. The DNS result was ${answer.join(', ')} `,
    );
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
    const answer =
      type === undefined ? await lookupAddresses(resolver, def.domain) : await queryRecords(resolver, def.domain, type);
    if (answer.length === 0) throw new Error(`no ${type ?? 'A or AAAA'} records for ${def.domain}`);
    return answer;
  } catch (error) {
    throw new CheckFailure(
      `Fail to lookup IP for domain: ${signal.aborted ? timeoutText(def.timeoutNs) : errorText(error)}`,
    );
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
