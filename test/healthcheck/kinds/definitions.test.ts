import { describe, expect, it } from 'vitest';
import {
  CHECK_KINDS,
  type CheckDefinition,
  CheckValidationError,
  checkSummary,
  checkToJson,
  configKeyOf,
  isKindName,
  KIND_NAMES,
  type KindName,
  parseCheck,
} from '../../../src/healthcheck/kinds/index.ts';

const MINIMAL: Record<KindName, Record<string, unknown>> = {
  http: { target: '127.0.0.1', port: 8080, 'valid-status': [200] },
  tcp: { target: '127.0.0.1', port: 22 },
  dns: { domain: 'example.org' },
  tls: { target: 'example.org', port: 443 },
  websocket: { url: 'ws://127.0.0.1:8080/live' },
  grpc: { target: '127.0.0.1', port: 50051 },
  smtp: { target: 'mail.example.org', tls: 'starttls' },
  imap: { target: 'mail.example.org', tls: 'tls', 'expiration-delay': '720h' },
  pop3: { target: 'mail.example.org' },
  icmp: { target: '127.0.0.1' },
  domain: { domain: 'example.org', 'rdap-url': 'http://127.0.0.1:8080/rdap', 'expiration-delay': '720h' },
  command: { command: 'true' },
  heartbeat: {},
};

/** The kinds the scheduler runs: a heartbeat has no timeout (test below). */
const RUN_KINDS = KIND_NAMES.filter((kind) => kind !== 'heartbeat');

function parse(kind: KindName, raw: Record<string, unknown>): CheckDefinition {
  return parseCheck(kind, { name: 'c', timeout: '1s', interval: '10s', ...MINIMAL[kind], ...raw });
}

/** The message of the CheckValidationError thrown for `raw`. */
function rejection(
  kind: KindName,
  raw: Record<string, unknown>,
  base: Record<string, unknown> = { name: 'c', timeout: '1s', interval: '10s' },
): string {
  try {
    parseCheck(kind, { ...base, ...MINIMAL[kind], ...raw });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('base fields, for every kind', () => {
  it.each(RUN_KINDS)('%s: validates name, durations and the interval rule', (kind) => {
    expect(rejection(kind, {}, { timeout: '1s', interval: '1s' })).toBe('name: is required');
    expect(rejection(kind, { name: '' })).toBe('name: must not be empty');
    expect(rejection(kind, { name: 'x'.repeat(256) })).toBe('name: must be at most 255 characters long');
    expect(parse(kind, { name: 'é'.repeat(255) }).name).toHaveLength(255);
    expect(rejection(kind, { name: 'a/b' })).toBe('name: must not contain "/"');
    expect(rejection(kind, { name: 'a\nb' })).toBe('name: must not contain control characters');
    expect(rejection(kind, {}, { name: 'c', interval: '10s' })).toBe('timeout: is required');
    expect(rejection(kind, { timeout: '0s' })).toBe('timeout: must be greater than 0, got "0s"');
    expect(rejection(kind, { timeout: '-1s' })).toBe('timeout: must be greater than 0, got "-1s"');
    expect(rejection(kind, { interval: 10 })).toBe(
      'interval: must be a duration string such as "10s" or "1m30s", got the number 10',
    );
    expect(rejection(kind, { timeout: 5 })).toBe(
      'timeout: must be a duration string such as "10s" or "1m30s", got the number 5',
    );
    expect(rejection(kind, { interval: '10 s' })).toBe('interval: time: unknown unit " s" in duration "10 s"');
    expect(rejection(kind, {}, { name: 'c', timeout: '1s' })).toBe('interval: is required (unless one-off is true)');
    expect(rejection(kind, { timeout: '3s', interval: '1s' })).toBe(
      'interval: must be greater than or equal to the timeout (interval 1s < timeout 3s)',
    );
    expect(parse(kind, { timeout: '3s', interval: '3s' }).intervalNs).toBe(3e9);
  });

  it.each(RUN_KINDS)('%s: rejects unknown keys, naming them', (kind) => {
    expect(rejection(kind, { foo: 1 })).toBe('unknown key "foo"');
    expect(rejection(kind, { tiemout: '1s' })).toBe('unknown key "tiemout" (did you mean "timeout"?)');
  });

  it('normalises the base fields', () => {
    const def = parse('tcp', {
      description: 'db',
      interval: '1m30s',
      timeout: '500ms',
      labels: { env: 'prod' },
      source: 'ignored',
    });
    expect(def).toMatchObject({
      kind: 'tcp',
      name: 'c',
      description: 'db',
      intervalNs: 90e9,
      timeoutNs: 5e8,
      oneOff: false,
      labels: { env: 'prod' },
    });
    expect(def).not.toHaveProperty('source');
    expect(parse('tcp', {}).labels).toEqual({});
    expect(rejection('tcp', { labels: { env: 1 } })).toBe('labels.env: must be a string, got the number 1');
  });

  it('needs no interval for a one-off check, spelled one-off or oneoff', () => {
    const base = { name: 'c', timeout: '1s' };
    expect(parseCheck('tcp', { ...base, ...MINIMAL.tcp, 'one-off': true })).toMatchObject({
      oneOff: true,
      intervalNs: 0,
    });
    expect(parseCheck('tcp', { ...base, ...MINIMAL.tcp, oneoff: true })).toMatchObject({ oneOff: true });
    expect(parseCheck('tcp', { ...base, ...MINIMAL.tcp, oneoff: true, 'one-off': true })).toMatchObject({
      oneOff: true,
    });
    expect(rejection('tcp', { oneoff: true, 'one-off': false }, base)).toBe(
      'oneoff: conflicts with one-off (they are two spellings of one option; keep one)',
    );
  });

  it('accepts the read-only kind back only when it matches', () => {
    expect(parse('dns', { kind: 'dns' }).kind).toBe('dns');
    expect(rejection('dns', { kind: 'http' })).toBe('kind: must be "dns" for a dns check, got "http"');
  });
});

describe('HTTP definition', () => {
  it('defaults method GET and protocol http', () => {
    expect(parse('http', {})).toMatchObject({
      method: 'GET',
      protocol: 'http',
      path: '',
      redirect: false,
      insecure: false,
      bodyRegexp: [],
    });
    expect(parse('http', { method: '' })).toMatchObject({ method: 'GET' });
  });

  it('checks every field, naming it', () => {
    expect(rejection('http', { port: 0 })).toBe('port: must be between 1 and 65535, got 0');
    expect(rejection('http', { port: 70000 })).toBe('port: must be between 1 and 65535, got 70000');
    expect(rejection('http', { port: '80' })).toBe('port: must be an integer, got the string "80"');
    expect(rejection('http', { target: '' })).toBe('target: must not be empty');
    expect(rejection('http', { 'valid-status': [] })).toBe('valid-status: must list at least one status code');
    expect(rejection('http', { 'valid-status': [200, 700] })).toBe(
      'valid-status[1]: must be between 100 and 599, got 700',
    );
    expect(rejection('http', { protocol: 'ftp' })).toBe('protocol: must be "http" or "https", got "ftp"');
    expect(rejection('http', { method: 'get' })).toBe(
      'method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, got "get"',
    );
    expect(rejection('http', { path: 'health' })).toBe('path: must start with "/", got "health"');
    expect(rejection('http', { 'body-regexp': ['ok', '('] })).toBe(
      'body-regexp[1]: must be a valid RE2 regular expression: missing closing ): `(`',
    );
    expect(rejection('http', { 'body-regexp': ['(a)\\1'] })).toBe(
      'body-regexp[0]: must be a valid RE2 regular expression: backreferences (\\1) are not supported: the linear-time engine (RE2) cannot run them',
    );
    expect(rejection('http', { 'source-ip': 'localhost' })).toBe('source-ip: must be an IP address, got "localhost"');
    expect(rejection('http', { cert: '/c.pem' })).toBe(
      'key: is required when cert is set (a client certificate needs both)',
    );
    expect(rejection('http', { key: '/k.pem' })).toBe(
      'cert: is required when key is set (a client certificate needs both)',
    );
    expect(rejection('http', { headers: { 'Bad Name': 'x' } })).toBe('headers.Bad Name: is not a valid header name');
    expect(rejection('http', { headers: { X: 'a\r\nb' } })).toBe('headers.X: must not contain CR, LF or NUL');
    expect(rejection('http', { redirect: 'yes' })).toBe('redirect: must be true or false, got the string "yes"');
    expect(() => parseCheck('http', { name: 'c', timeout: '1s', interval: '1s', target: 'h', port: 1 })).toThrow(
      'valid-status: is required',
    );
  });

  it('accepts server-name and its YAML spelling servername', () => {
    expect(parse('http', { 'server-name': 'a.example' })).toMatchObject({ serverName: 'a.example' });
    expect(parse('http', { servername: 'a.example' })).toMatchObject({ serverName: 'a.example' });
    expect(parse('http', { 'server-name': '' })).not.toHaveProperty('serverName');
    expect(rejection('http', { 'server-name': 'a', servername: 'b' })).toBe(
      'servername: conflicts with server-name (they are two spellings of one option; keep one)',
    );
  });
});

describe('TCP, DNS, TLS and command definitions', () => {
  it('TCP: port and source-ip', () => {
    expect(rejection('tcp', { port: 65536 })).toBe('port: must be between 1 and 65535, got 65536');
    expect(rejection('tcp', { 'source-ip': '1.2.3' })).toBe('source-ip: must be an IP address, got "1.2.3"');
    expect(parse('tcp', { 'source-ip': '::1', 'should-fail': true })).toMatchObject({
      sourceIp: '::1',
      shouldFail: true,
    });
  });

  it('DNS: domain, expected-ips, record-type and resolver', () => {
    expect(rejection('dns', { domain: '' })).toBe('domain: must not be empty');
    expect(rejection('dns', { 'expected-ips': ['10.0.0.1', 'nope'] })).toBe(
      'expected-ips[1]: must be an IP address, got "nope"',
    );
    expect(rejection('dns', { 'record-type': 'PTR' })).toBe(
      'record-type: must be one of A, AAAA, CNAME, MX, TXT, NS, SRV, CAA, got "PTR"',
    );
    expect(rejection('dns', { 'record-type': 'MX', 'expected-ips': ['10.0.0.1'] })).toBe(
      'expected-ips: only applies to A and AAAA records, not MX',
    );
    for (const resolver of ['127.0.0.1', '127.0.0.1:5353', '::1', '[::1]:53', '[fd00::1]']) {
      expect(parse('dns', { resolver })).toMatchObject({ resolver });
    }
    for (const resolver of ['dns.example:53', '[127.0.0.1]:53', '', 'dns.example']) {
      expect(rejection('dns', { resolver })).toMatch(/^resolver: must be an IP address with an optional port/);
    }
    expect(rejection('dns', { resolver: '127.0.0.1:0' })).toBe('resolver: port must be between 1 and 65535, got "0"');
    expect(rejection('dns', { resolver: '127.0.0.1:' })).toBe('resolver: port must be between 1 and 65535, got ""');
  });

  it('TLS: expiration-delay and client certificates', () => {
    expect(parse('tls', { 'expiration-delay': '240h' })).toMatchObject({ expirationDelayNs: 240 * 3600e9 });
    expect(rejection('tls', { 'expiration-delay': 'foo' })).toBe('expiration-delay: time: invalid duration "foo"');
    expect(rejection('tls', { 'expiration-delay': '-1h' })).toBe('expiration-delay: must not be negative, got "-1h"');
    expect(rejection('tls', { 'expiration-delay': 86400 })).toBe(
      'expiration-delay: must be a duration string such as "10s" or "1m30s", got the number 86400',
    );
    expect(rejection('tls', { key: '/k.pem' })).toBe(
      'cert: is required when key is set (a client certificate needs both)',
    );
    expect(parse('tls', { servername: 'x.example' })).toMatchObject({ serverName: 'x.example' });
  });

  it('command: command and arguments', () => {
    expect(rejection('command', { command: '' })).toBe('command: must not be empty');
    expect(rejection('command', { arguments: ['-l', 2] })).toMatch(/^arguments: /);
    expect(parse('command', { arguments: null })).not.toHaveProperty('arguments');
    expect(parse('command', { arguments: ['-l'] })).toMatchObject({ arguments: ['-l'] });
  });
});

describe('listing form', () => {
  it('HTTP: upstream key order, Go durations, protocol even when not given, then kind', () => {
    const def = parse('http', {
      description: 'web',
      interval: '1m30s',
      timeout: '1500ms',
      labels: { env: 'prod' },
      host: 'vhost',
      body: 'b',
      query: { a: '1' },
      headers: { X: 'y' },
      path: '/health',
      'source-ip': '127.0.0.1',
      'body-regexp': ['ok'],
      cacert: '/ca.pem',
      cert: '/c.pem',
      key: '/k.pem',
    });
    const json = checkToJson(def, 'api');
    expect(Object.keys(json)).toEqual([
      'name',
      'description',
      'interval',
      'one-off',
      'source',
      'labels',
      'valid-status',
      'target',
      'host',
      'method',
      'port',
      'redirect',
      'body',
      'query',
      'headers',
      'protocol',
      'path',
      'source-ip',
      'body-regexp',
      'insecure',
      'server-name',
      'timeout',
      'key',
      'cert',
      'cacert',
      'kind',
    ]);
    expect(json).toMatchObject({
      interval: '1m30s',
      timeout: '1.5s',
      source: 'api',
      protocol: 'http',
      method: 'GET',
      'server-name': '',
      kind: 'http',
    });
    expect(Object.keys(checkToJson(parse('http', {})))).toEqual([
      'name',
      'description',
      'interval',
      'one-off',
      'source',
      'valid-status',
      'target',
      'method',
      'port',
      'redirect',
      'protocol',
      'insecure',
      'server-name',
      'timeout',
      'kind',
    ]);
  });

  it('TCP, DNS, TLS, command: upstream key order', () => {
    expect(checkToJson(parse('tcp', { labels: { from: 'disc' }, interval: '5s' }), 'discovery:disco')).toStrictEqual({
      name: 'c',
      description: '',
      interval: '5s',
      'one-off': false,
      source: 'discovery:disco',
      labels: { from: 'disc' },
      target: '127.0.0.1',
      port: 22,
      timeout: '1s',
      'should-fail': false,
      kind: 'tcp',
    });
    expect(Object.keys(checkToJson(parse('tcp', { 'source-ip': '127.0.0.1' })))).toEqual([
      'name',
      'description',
      'interval',
      'one-off',
      'source',
      'target',
      'port',
      'source-ip',
      'timeout',
      'should-fail',
      'kind',
    ]);
    expect(
      Object.keys(
        checkToJson(parse('dns', { 'expected-ips': ['10.0.0.1'], resolver: '127.0.0.1', 'record-type': 'A' })),
      ),
    ).toEqual([
      'name',
      'description',
      'interval',
      'one-off',
      'source',
      'timeout',
      'expected-ips',
      'domain',
      'resolver',
      'record-type',
      'kind',
    ]);
    expect(
      Object.keys(
        checkToJson(parse('tls', { 'source-ip': '::1', key: '/k', cert: '/c', cacert: '/ca', 'server-name': 's' })),
      ),
    ).toEqual([
      'name',
      'description',
      'interval',
      'one-off',
      'source',
      'target',
      'port',
      'source-ip',
      'timeout',
      'key',
      'cert',
      'cacert',
      'server-name',
      'insecure',
      'expiration-delay',
      'kind',
    ]);
    expect(checkToJson(parse('tls', {}))).toMatchObject({ 'expiration-delay': '0s' });
    expect(checkToJson(parse('tls', {}))).not.toHaveProperty('server-name');
    expect(checkToJson(parse('command', {}))).toStrictEqual({
      name: 'c',
      description: '',
      interval: '10s',
      'one-off': false,
      source: '',
      command: 'true',
      arguments: null,
      timeout: '1s',
      kind: 'command',
    });
    expect(checkToJson(parse('command', { arguments: [] }))).toMatchObject({ arguments: [] });
    expect(checkToJson(parseCheck('tcp', { name: 'o', timeout: '1s', 'one-off': true, ...MINIMAL.tcp }))).toMatchObject(
      { interval: '0s', 'one-off': true },
    );
  });

  it.each(RUN_KINDS)('%s: a listed definition parses back to the same definition', (kind) => {
    const def = parse(kind, { description: 'd', labels: { a: 'b' }, interval: '2h45m', timeout: '250ms' });
    expect(parseCheck(kind, checkToJson(def, 'api'))).toStrictEqual(def);
  });
});

describe('summaries', () => {
  it('follow upstream formats', () => {
    expect(checkSummary(parse('http', { description: 'my http' }))).toBe('HTTP healthcheck my http on 127.0.0.1:8080');
    expect(checkSummary(parse('http', { target: '::1' }))).toBe('HTTP healthcheck on ::1:8080');
    expect(checkSummary(parse('tcp', {}))).toBe('TCP healthcheck on 127.0.0.1:22');
    expect(checkSummary(parse('tcp', { 'should-fail': true }))).toBe(
      'TCP healthcheck on 127.0.0.1:22. This healthcheck has should-fail=true.',
    );
    expect(checkSummary(parse('tcp', { description: 'db', 'should-fail': true }))).toBe(
      'TCP healthcheck db on 127.0.0.1:22. This healthcheck has should-fail=true.',
    );
    expect(checkSummary(parse('dns', {}))).toBe('DNS healthcheck on example.org');
    expect(checkSummary(parse('dns', { description: 'resolver' }))).toBe('DNS healthcheck resolver on example.org');
    expect(checkSummary(parse('tls', { description: 'cert' }))).toBe('TLS healthcheck cert on example.org:443');
    expect(checkSummary(parse('command', {}))).toBe('command true');
    expect(checkSummary(parse('command', { description: 'disk' }))).toBe('disk, command true');
  });
});

describe('registry', () => {
  it('has one closed TypeBox schema per kind and maps config keys', () => {
    for (const kind of KIND_NAMES) {
      expect(CHECK_KINDS[kind].kind).toBe(kind);
      expect(CHECK_KINDS[kind].schema).toMatchObject({ type: 'object', additionalProperties: false });
    }
    expect(KIND_NAMES.map(configKeyOf)).toEqual([
      'http-checks',
      'tcp-checks',
      'dns-checks',
      'tls-checks',
      'websocket-checks',
      'grpc-checks',
      'smtp-checks',
      'imap-checks',
      'pop3-checks',
      'domain-checks',
      'icmp-checks',
      'command-checks',
      'heartbeat-checks',
    ]);
    expect(KIND_NAMES.every(isKindName)).toBe(true);
    expect(isKindName('bulk')).toBe(false);
  });

  it('rejects a definition that is not an object', () => {
    expect(() => parseCheck('tcp', 'nope')).toThrow(/must be a mapping/);
    expect(() => parseCheck('tcp', null)).toThrow(CheckValidationError);
  });
});

describe('heartbeat definition', () => {
  const heartbeat = (raw: Record<string, unknown>) =>
    parseCheck('heartbeat', { name: 'backup', interval: '1h', ...raw });
  const refusal = (raw: Record<string, unknown>) => {
    try {
      heartbeat(raw);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('accepted');
  };

  it('takes interval and grace (1m by default), no timeout', () => {
    expect(heartbeat({})).toMatchObject({
      kind: 'heartbeat',
      name: 'backup',
      intervalNs: 3600e9,
      graceNs: 60e9,
      oneOff: false,
      labels: {},
    });
    expect(heartbeat({ grace: '0s', labels: { team: 'ops' } })).toMatchObject({ graceNs: 0, labels: { team: 'ops' } });
    expect(refusal({ timeout: '1s' })).toBe('unknown key "timeout"');
    expect(refusal({ interval: undefined })).toBe('interval: is required');
    expect(refusal({ interval: '0s' })).toBe('interval: must be greater than 0, got "0s"');
    expect(refusal({ grace: '-1m' })).toBe('grace: must not be negative, got "-1m"');
    expect(refusal({ name: 'a/b' })).toBe('name: must not contain "/"');
    expect(refusal({ 'one-off': true })).toMatch(/^one-off: /);
    expect(refusal({ kind: 'http' })).toBe('kind: must be "heartbeat" for a heartbeat check, got "http"');
  });

  it('lists as it parses back, and summarises its expectation', () => {
    const def = heartbeat({ description: 'nightly backup', labels: { a: 'b' }, grace: '5m' });
    expect(checkToJson(def, 'api')).toStrictEqual({
      name: 'backup',
      description: 'nightly backup',
      interval: '1h0m0s',
      'one-off': false,
      source: 'api',
      labels: { a: 'b' },
      grace: '5m0s',
      kind: 'heartbeat',
    });
    expect(parseCheck('heartbeat', checkToJson(def, 'api'))).toStrictEqual(def);
    expect(checkSummary(def)).toBe('Heartbeat healthcheck nightly backup expected every 1h0m0s (grace 5m0s)');
  });
});
