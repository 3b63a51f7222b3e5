/**
 * Checks of every kind created through the API against real local targets, their results, history, uptime and
 * metric series.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckResult } from '../../src/healthcheck/results/repository.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  closedPort,
  createTestPki,
  type DnsTarget,
  type HttpTarget,
  startDnsTarget,
  startHttpTarget,
  startTcpTarget,
  startTlsTarget,
  type TcpTarget,
  type TestPki,
  type TlsTarget,
} from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

type Result = CheckResult;

let server: TestServer;
let http: HttpTarget;
let tcp: TcpTarget;
let dns: DnsTarget;
let tls: TlsTarget;
let expiring: TlsTarget;
let pki: TestPki;
let closed: number;

beforeAll(async () => {
  pki = createTestPki();
  [server, http, tcp, dns, tls, expiring, closed] = await Promise.all([
    // The API's checks may name files under healthchecks.api-files-dir only (docs/hardening.md).
    startServer({ config: { 'healthchecks-labels': ['env'], healthchecks: { 'api-files-dir': pki.dir } } }),
    startHttpTarget({ handler: (_request, response) => response.end('hello world') }),
    startTcpTarget(),
    startDnsTarget({ 'svc.test': { A: ['10.0.0.1', '10.0.0.2'] } }),
    startTlsTarget(pki.server),
    startTlsTarget(pki.expiringSoon),
    closedPort(),
  ]);
});

afterAll(async () => {
  await Promise.all([server.kill9(), http.close(), tcp.close(), dns.close(), tls.close(), expiring.close()]);
});

async function create(kind: string, definition: Record<string, unknown>): Promise<void> {
  const response = await server.request(`/api/v1/healthcheck/${kind}`, {
    method: 'POST',
    body: JSON.stringify({ interval: '1s', timeout: '1s', ...definition }),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status, await response.clone().text()).toBe(201);
}

async function resultOf(name: string): Promise<Result> {
  return waitFor(
    async () => {
      const response = await server.request(`/api/v1/result/${name}`);
      expect(response.status).toBe(200);
      return (await response.json()) as Result;
    },
    { intervalMs: 100 },
  );
}

describe('checks of every kind, created through the API', () => {
  it('HTTP: success when the status is valid and the body matches, upstream messages otherwise', async () => {
    await create('http', {
      name: 'http-ok',
      target: '127.0.0.1',
      port: http.port,
      path: '/health',
      'valid-status': [200],
      'body-regexp': ['hello'],
      labels: { env: 'prod' },
    });
    await create('http', { name: 'http-status', target: '127.0.0.1', port: http.port, 'valid-status': [201] });
    await create('http', {
      name: 'http-regexp',
      target: '127.0.0.1',
      port: http.port,
      'valid-status': [200],
      'body-regexp': ['^bye'],
    });
    expect(await resultOf('http-ok')).toMatchObject({
      success: true,
      message: 'success',
      labels: { env: 'prod' },
      summary: `HTTP healthcheck on 127.0.0.1:${http.port}`,
      source: 'api',
    });
    expect(
      http.requests.some((request) => request.path === '/health' && request.headers['user-agent'] === 'Cabourotte'),
    ).toBe(true);
    expect(await resultOf('http-status')).toMatchObject({
      success: false,
      message: "HTTP request failed: status 200. Body: 'hello world'",
    });
    expect(await resultOf('http-regexp')).toMatchObject({
      success: false,
      message: 'healthcheck body does not match regex ^bye: hello world',
    });
  });

  it('TCP: an open port succeeds, a closed one fails, should-fail inverts', async () => {
    await create('tcp', { name: 'tcp-open', target: '127.0.0.1', port: tcp.port });
    await create('tcp', { name: 'tcp-closed', target: '127.0.0.1', port: closed });
    await create('tcp', { name: 'tcp-should-fail', target: '127.0.0.1', port: closed, 'should-fail': true });
    expect(await resultOf('tcp-open')).toMatchObject({ success: true });
    expect((await resultOf('tcp-closed')).message).toMatch(
      new RegExp(`^TCP connection failed on 127\\.0\\.0\\.1:${closed}: `),
    );
    expect(await resultOf('tcp-should-fail')).toMatchObject({
      success: true,
      summary: `TCP healthcheck on 127.0.0.1:${closed}. This healthcheck has should-fail=true.`,
    });
  });

  it('DNS: resolves through the configured resolver, with the expected-ips subset rule', async () => {
    await create('dns', {
      name: 'dns-ok',
      domain: 'svc.test',
      resolver: dns.address,
      'record-type': 'A',
      'expected-ips': ['10.0.0.2'],
    });
    await create('dns', {
      name: 'dns-missing',
      domain: 'svc.test',
      resolver: dns.address,
      'record-type': 'A',
      'expected-ips': ['10.0.0.9'],
    });
    expect(await resultOf('dns-ok')).toMatchObject({ success: true, summary: 'DNS healthcheck on svc.test' });
    expect((await resultOf('dns-missing')).message).toMatch(/^the IP addresses 10\.0\.0\.9 were not found/);
    expect(dns.queries.some((query) => query.name === 'svc.test')).toBe(true);
  });

  it('TLS: a certificate signed by the given CA succeeds, one expiring within expiration-delay fails', async () => {
    await create('tls', { name: 'tls-ok', target: 'localhost', port: tls.port, cacert: pki.ca });
    await create('tls', {
      name: 'tls-expiring',
      target: 'localhost',
      port: expiring.port,
      cacert: pki.ca,
      'expiration-delay': '720h',
    });
    expect(await resultOf('tls-ok')).toMatchObject({
      success: true,
      summary: `TLS healthcheck on localhost:${tls.port}`,
    });
    expect((await resultOf('tls-expiring')).message).toMatch(
      new RegExp(`^the certificate for localhost:${expiring.port} will expire at `),
    );
  });

  it('command: exit code 0 succeeds, another fails with the code and stderr', async () => {
    await create('command', { name: 'cmd-ok', command: 'true' });
    await create('command', { name: 'cmd-ko', command: 'sh', arguments: ['-c', 'echo oops >&2; exit 3'] });
    expect(await resultOf('cmd-ok')).toMatchObject({ success: true, summary: 'command true' });
    expect((await resultOf('cmd-ko')).message).toMatch(/^The command failed with code=3, stderr=oops/);
  });
});

describe('history, uptime and metrics', () => {
  it('keeps the raw history newest first and aggregates uptime', async () => {
    await create('tcp', { name: 'hist', target: '127.0.0.1', port: tcp.port, interval: '300ms', timeout: '300ms' });
    const history = await waitFor(
      async () => {
        const body = (await (await server.request('/api/v1/result/hist/history')).json()) as { result: Result[] };
        expect(body.result.length).toBeGreaterThanOrEqual(4);
        return body.result;
      },
      { timeoutMs: 8000, intervalMs: 200 },
    );
    const stamps = history.map((entry) => entry['healthcheck-timestamp']);
    expect([...stamps].sort((a, b) => b - a)).toEqual(stamps);
    expect(Object.keys(history[0] as object)).toEqual([
      'name',
      'success',
      'healthcheck-timestamp',
      'message',
      'duration',
    ]);
    const limited = (await (await server.request('/api/v1/result/hist/history?limit=2')).json()) as {
      result: Result[];
    };
    expect(limited.result).toHaveLength(2);
    const refused = await server.request('/api/v1/result/hist/history?limit=zero');
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ message: 'Invalid limit "zero": expected a positive integer' });
    expect((await server.request('/api/v1/result/hist/history?limit=0')).status).toBe(400);
    const uptime = (await (await server.request('/api/v1/result/hist/uptime')).json()) as {
      name: string;
      uptime: Record<string, { runs: number; ratio: number }>;
    };
    expect(uptime.name).toBe('hist');
    expect(Object.keys(uptime.uptime)).toEqual(['1h', '24h', '7d', '30d']);
    expect(uptime.uptime['1h']!.runs).toBeGreaterThanOrEqual(4);
    expect(uptime.uptime['1h']!.ratio).toBe(1);
    expect(uptime.uptime['30d']!.runs).toBe(uptime.uptime['1h']!.runs);
    for (const path of ['/api/v1/result/nope/history', '/api/v1/result/nope/uptime']) {
      expect(await (await server.request(path)).json()).toEqual({ message: 'Healthcheck nope not found' });
    }
  });

  it('exposes healthcheck_total and healthcheck_duration_seconds with the configured labels, and drops them with the check', async () => {
    await create('tcp', {
      name: 'metered',
      target: '127.0.0.1',
      port: tcp.port,
      labels: { env: 'staging', team: 'x' },
    });
    await resultOf('metered');
    const metrics = async () => (await server.request('/metrics')).text();
    await waitFor(async () => {
      const text = await metrics();
      expect(text).toMatch(/^healthcheck_total\{name="metered",env="staging",status="success"\} \d+$/m);
      expect(text).toMatch(/^healthcheck_duration_seconds_count\{name="metered",env="staging"\} \d+$/m);
      expect(text).toMatch(/^healthcheck_scheduling_lag_seconds_count \d+$/m);
    });
    expect((await server.request('/api/v1/healthcheck/metered', { method: 'DELETE' })).status).toBe(200);
    const after = await metrics();
    expect(after).not.toContain('name="metered"');
    expect((await server.request('/api/v1/result/metered')).status).toBe(404);
    expect((await server.request('/api/v1/result/metered/history')).status).toBe(404);
  });

  it('drops the series of a replaced check and records the new one under its new labels', async () => {
    await create('tcp', { name: 'relabelled', target: '127.0.0.1', port: tcp.port, labels: { env: 'a' } });
    await waitFor(async () =>
      expect(await (await server.request('/metrics')).text()).toContain('name="relabelled",env="a"'),
    );
    await create('tcp', { name: 'relabelled', target: '127.0.0.1', port: tcp.port, labels: { env: 'b' } });
    expect(await (await server.request('/metrics')).text()).not.toContain('name="relabelled",env="a"');
    await waitFor(async () =>
      expect(await (await server.request('/metrics')).text()).toContain('name="relabelled",env="b"'),
    );
  });
});
