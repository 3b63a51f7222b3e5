import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lookupHostsFile } from '../../../../src/healthcheck/kinds/dns/hosts-file.ts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DnsTable, type DnsTarget, startDnsTarget } from '../../../helpers/targets.ts';
import { check } from '../run.ts';

const TABLE: DnsTable = {
  'example.test': {
    A: ['10.0.0.1', '10.0.0.3'],
    AAAA: ['::2'],
    MX: [{ priority: 10, exchange: 'mx.example.test' }],
    TXT: ['v=spf1 -all'],
    NS: ['ns1.example.test'],
  },
  'alias.test': { CNAME: 'example.test' },
  'v6only.test': { AAAA: ['fd00::1'] },
  'empty.test': {},
};

describe('DNS check', () => {
  let server: DnsTarget;
  beforeAll(async () => {
    server = await startDnsTarget(TABLE);
  });
  beforeEach(() => {
    server.queries.length = 0;
  });
  afterAll(() => server.close());

  const dns = (raw: Record<string, unknown>): Promise<string> => check('dns', { resolver: server.address, ...raw });

  it('looks up A and AAAA by default, on the configured resolver', async () => {
    expect(await dns({ domain: 'example.test' })).toBe('success');
    expect(server.queries.map((query) => query.type).sort()).toEqual(['A', 'AAAA']);
  });

  it('succeeds when only one family has addresses', async () => {
    expect(await dns({ domain: 'v6only.test', 'expected-ips': ['fd00::1'] })).toBe('success');
  });

  it('queries only the given record-type', async () => {
    expect(await dns({ domain: 'example.test', 'record-type': 'A', 'expected-ips': ['10.0.0.3'] })).toBe('success');
    expect(server.queries).toEqual([{ name: 'example.test', type: 'A' }]);
    expect(await dns({ domain: 'example.test', 'record-type': 'AAAA', 'expected-ips': ['10.0.0.1'] })).toBe(
      'the IP addresses 10.0.0.1 were not found. The DNS result was ::2 ',
    );
  });

  it('accepts the other record types when the answer has records', async () => {
    for (const type of ['MX', 'TXT', 'NS'])
      expect(await dns({ domain: 'example.test', 'record-type': type })).toBe('success');
    expect(await dns({ domain: 'alias.test', 'record-type': 'CNAME' })).toBe('success');
    expect(await dns({ domain: 'example.test', 'record-type': 'CNAME' })).toBe(
      'Fail to lookup IP for domain: queryCname ENODATA example.test',
    );
  });

  it('treats expected-ips as a subset of the answer, comparing IPs semantically', async () => {
    for (const expected of [['10.0.0.1'], ['10.0.0.3', '10.0.0.1'], ['0:0:0:0:0:0:0:2'], ['::ffff:10.0.0.1']]) {
      expect(await dns({ domain: 'example.test', 'expected-ips': expected })).toBe('success');
    }
  });

  it('names the missing IPs and the whole answer (with upstream trailing space)', async () => {
    expect(await dns({ domain: 'example.test', 'expected-ips': ['10.0.0.4', '10.0.0.1', '::5'] })).toBe(
      'the IP addresses 10.0.0.4, ::5 were not found. The DNS result was 10.0.0.1, 10.0.0.3, ::2 ',
    );
  });

  it('fails on NXDOMAIN and on an empty answer with the Node error', async () => {
    expect(await dns({ domain: 'nope.test' })).toBe('Fail to lookup IP for domain: queryA ENOTFOUND nope.test');
    expect(await dns({ domain: 'empty.test' })).toBe('Fail to lookup IP for domain: queryA ENODATA empty.test');
  });

  it('resolves an IP literal to itself without a query', async () => {
    expect(await dns({ domain: '10.9.9.9', 'expected-ips': ['10.9.9.9'] })).toBe('success');
    expect(server.queries).toEqual([]);
  });
});

describe('DNS check deadlines and IPv6 resolvers', () => {
  it('uses a resolver on ::1', async () => {
    const server = await startDnsTarget(TABLE, { host: '::1' });
    try {
      expect(server.address).toMatch(/^\[::1\]:\d+$/);
      expect(await check('dns', { domain: 'example.test', resolver: server.address, 'record-type': 'A' })).toBe(
        'success',
      );
      expect(server.queries).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('times out against a resolver that never answers', async () => {
    const silent = await startDnsTarget(TABLE, { silent: true });
    try {
      const started = performance.now();
      expect(
        await check('dns', { domain: 'example.test', resolver: silent.address, timeout: '300ms', interval: '1s' }),
      ).toBe('Fail to lookup IP for domain: timed out after 300ms');
      expect(performance.now() - started).toBeLessThan(1500);
      expect(silent.queries.length).toBeGreaterThan(0);
    } finally {
      await silent.close();
    }
  });
});

describe('DNS check and /etc/hosts', () => {
  it('answers localhost from /etc/hosts, as Go does, with no name server involved', async () => {
    expect(await check('dns', { domain: 'localhost', 'expected-ips': ['127.0.0.1'] })).toBe('success');
    expect(await check('dns', { domain: 'LOCALHOST.', 'record-type': 'A', 'expected-ips': ['127.0.0.1'] })).toBe(
      'success',
    );
  });
});

describe('lookupHostsFile', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'vigie-hosts-')), 'hosts');
  writeFileSync(
    file,
    '# comment\n127.0.0.1 localhost\n10.1.2.3  db.internal db # pinned\nfd00::7 db.internal\n::1 localhost ip6-localhost\n',
  );

  it('finds every address of a name, honouring the family, ignoring case, comments and a trailing dot', async () => {
    expect(await lookupHostsFile('db.internal', null, file)).toEqual(['10.1.2.3', 'fd00::7']);
    expect(await lookupHostsFile('DB', 4, file)).toEqual(['10.1.2.3']);
    expect(await lookupHostsFile('db.internal.', 6, file)).toEqual(['fd00::7']);
    expect(await lookupHostsFile('localhost', 6, file)).toEqual(['::1']);
    expect(await lookupHostsFile('pinned', null, file)).toEqual([]);
    expect(await lookupHostsFile('db', null, `${file}.missing`)).toEqual([]);
  });
});
