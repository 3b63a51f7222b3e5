import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckValidationError, checkToJson, parseCheck } from '../../../../src/healthcheck/kinds/index.ts';
import { type DnsTable, type DnsTarget, startDnsTarget } from '../../../helpers/targets.ts';
import { check } from '../run.ts';

const TABLE: DnsTable = {
  'example.test': {
    A: ['10.0.0.1', '10.0.0.3'],
    AAAA: ['fd00::2'],
    MX: [
      { priority: 10, exchange: 'mx1.example.test' },
      { priority: 20, exchange: 'mx2.example.test' },
    ],
    TXT: ['v=spf1 -all', 'google-site-verification=abc'],
    NS: ['ns1.example.test', 'ns2.example.test'],
    CAA: [
      { flags: 0, tag: 'issue', value: 'letsencrypt.org' },
      { flags: 128, tag: 'iodef', value: 'mailto:sec@example.test' },
    ],
  },
  '_sip._tcp.example.test': { SRV: [{ priority: 10, weight: 5, port: 5060, target: 'sip.example.test' }] },
  'www.example.test': { CNAME: 'edge.example.test' },
};

function rejection(raw: Record<string, unknown>): string {
  try {
    parseCheck('dns', { name: 'c', timeout: '1s', interval: '10s', domain: 'example.test', ...raw });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('DNS check record types with expected values', () => {
  let server: DnsTarget;
  beforeAll(async () => {
    server = await startDnsTarget(TABLE);
  });
  afterAll(() => server.close());

  const dns = (type: string, domain: string, expected: string[]): Promise<string> =>
    check('dns', { resolver: server.address, domain, 'record-type': type, 'expected-values': expected });

  it('finds the expected values of each record type, names and quotes compared loosely', async () => {
    expect(await dns('A', 'example.test', ['10.0.0.3'])).toBe('success');
    expect(await dns('AAAA', 'example.test', ['fd00:0:0:0:0:0:0:2'])).toBe('success');
    expect(await dns('CNAME', 'www.example.test', ['Edge.Example.Test.'])).toBe('success');
    expect(await dns('MX', 'example.test', ['20 mx2.example.test', '10 MX1.example.test.'])).toBe('success');
    expect(await dns('TXT', 'example.test', ['v=spf1 -all'])).toBe('success');
    expect(await dns('NS', 'example.test', ['ns2.example.test.'])).toBe('success');
    expect(await dns('SRV', '_sip._tcp.example.test', ['10 5 5060 sip.example.test'])).toBe('success');
    expect(await dns('CAA', 'example.test', ['0 issue "letsencrypt.org"', '128 iodef mailto:sec@example.test'])).toBe(
      'success',
    );
    expect(
      await check('dns', {
        resolver: server.address,
        domain: 'example.test',
        'expected-values': ['fd00::2', '10.0.0.1'],
      }),
    ).toBe('success');
  });

  it('names the missing values and the whole answer', async () => {
    expect(await dns('MX', 'example.test', ['10 mx1.example.test', '30 mx3.example.test'])).toBe(
      'the values "30 mx3.example.test" were not found in the MX records of example.test: "10 mx1.example.test", "20 mx2.example.test"',
    );
    expect(await dns('SRV', '_sip._tcp.example.test', ['10 5 5061 sip.example.test'])).toBe(
      'the values "10 5 5061 sip.example.test" were not found in the SRV records of _sip._tcp.example.test: "10 5 5060 sip.example.test"',
    );
    expect(await dns('CAA', 'example.test', ['0 issue "digicert.com"'])).toBe(
      'the values "0 issue \\"digicert.com\\"" were not found in the CAA records of example.test: "0 issue \\"letsencrypt.org\\"", "128 iodef \\"mailto:sec@example.test\\""',
    );
    expect(await dns('TXT', 'example.test', ['v=spf1 ~all'])).toMatch(
      /^the values "v=spf1 ~all" were not found in the TXT records of example.test: /,
    );
    expect(await dns('SRV', 'example.test', ['10 5 5060 sip.example.test'])).toBe(
      'Fail to lookup IP for domain: querySrv ENODATA example.test',
    );
    expect(await dns('CAA', 'nope.test', ['0 issue "x"'])).toBe(
      'Fail to lookup IP for domain: queryCaa ENOTFOUND nope.test',
    );
  });

  it('refuses expected values that cannot be answers of the type, naming the field', () => {
    expect(rejection({ 'record-type': 'PTR' })).toBe(
      'record-type: must be one of A, AAAA, CNAME, MX, TXT, NS, SRV, CAA, got "PTR"',
    );
    expect(rejection({ 'record-type': 'MX', 'expected-values': ['mx.example.test'] })).toBe(
      'expected-values[0]: must be "<priority> <exchange>", such as "10 mx.example.com" for MX records, got "mx.example.test"',
    );
    expect(rejection({ 'record-type': 'SRV', 'expected-values': ['10 sip.example.test'] })).toMatch(
      /^expected-values\[0\]: must be "<priority> <weight> <port> <target>"/,
    );
    expect(rejection({ 'record-type': 'CAA', 'expected-values': ['issue letsencrypt.org'] })).toMatch(
      /^expected-values\[0\]: must be "<flags> <tag> <value>"/,
    );
    expect(rejection({ 'record-type': 'A', 'expected-values': ['fd00::1'] })).toBe(
      'expected-values[0]: must be an IPv4 address for A records, got "fd00::1"',
    );
    expect(rejection({ 'expected-values': ['example.test'] })).toBe(
      'expected-values[0]: must be an IP address for A and AAAA records, got "example.test"',
    );
    expect(rejection({ 'record-type': 'CNAME', 'expected-values': ['a b'] })).toMatch(
      /^expected-values\[0\]: must be a name such as/,
    );
    expect(rejection({ 'record-type': 'TXT', 'expected-values': [''] })).toBe('expected-values[0]: must not be empty');
  });

  it('lists expected-values as written', () => {
    const def = parseCheck('dns', {
      name: 'c',
      timeout: '1s',
      interval: '10s',
      domain: 'example.test',
      'record-type': 'SRV',
      'expected-values': ['1 2 3 a.test'],
    });
    expect(checkToJson(def)).toMatchObject({ 'record-type': 'SRV', 'expected-values': ['1 2 3 a.test'] });
  });
});
