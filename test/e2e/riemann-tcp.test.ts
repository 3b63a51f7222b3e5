/**
 * The Riemann TCP input through the real server, fed by the real client (Debian's riemann-c-client), over plain
 * TCP and over TLS with client certificates; the events are then found in the streams' indexes with every field.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CertFiles, createCa, type TestCa } from '../helpers/certs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const run = promisify(execFile);
const RIEMANN_CLIENT = 'riemann-client';
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

interface Target {
  server: TestServer;
  port: number;
}

async function startWithTcp(tcp: Record<string, unknown>): Promise<Target> {
  const server = await startServer({ config: { streams: { tcp: { host: '127.0.0.1', port: 0, ...tcp } } } });
  const line = await server.waitForLog(/Riemann TCP input listening/);
  const port = Number(/listening on [\d.]+:(\d+)/.exec(line)?.[1]);
  for (const [name, isDefault] of [
    ['main', true],
    ['web', false],
  ] as const) {
    const config = `{:default ${isDefault} :actions {:action :index :params [[:host :service]]}}`;
    const response = await server.request(`/api/v1/stream/${name}`, json('POST', { config: b64(config) }));
    expect(response.status).toBe(200);
  }
  return { server, port };
}

async function search(server: TestServer, stream: string, query: string): Promise<Record<string, unknown>[]> {
  const response = await server.request(`/api/v1/index/${stream}/search`, json('POST', { query: b64(query) }));
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: Record<string, unknown>[] }).events;
}

function send(port: number, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(RIEMANN_CLIENT, ['send', ...args, '127.0.0.1', String(port)], { timeout: 10_000 });
}

const EVENT_ARGS = [
  '-S',
  'svc',
  '-h',
  'host',
  '-d',
  '1.5',
  '-s',
  'ok',
  '-a',
  'k=v',
  '-t',
  'tag',
  '-D',
  'described',
  '-L',
  '60',
];

function expectFullEvent(
  event: Record<string, unknown> | undefined,
  host: string,
  before: number,
  after: number,
): void {
  expect(event).toMatchObject({
    service: 'svc',
    host,
    metric: 1.5,
    state: 'ok',
    k: 'v',
    tags: ['tag'],
    description: 'described',
    ttl: 60,
  });
  expect(event?.time).toBeGreaterThanOrEqual(before - 1e9);
  expect(event?.time).toBeLessThanOrEqual(after + 1e9);
}

describe('Riemann TCP with riemann-client', () => {
  let plain: Target;
  beforeAll(async () => {
    plain = await startWithTcp({});
  });
  afterAll(async () => {
    await plain.server.stop();
  });

  it('indexes an event sent by the real client into the default streams, with every field', async () => {
    const before = Date.now() * 1e6;
    await send(plain.port, EVENT_ARGS);
    const after = Date.now() * 1e6;
    const events = await search(plain.server, 'main', '[:= :service "svc"]');
    expect(events).toHaveLength(1);
    expectFullEvent(events[0], 'host', before, after);
    expect(await search(plain.server, 'web', '[:= :service "svc"]')).toEqual([]);
  });

  it('sends an event with a stream attribute to that stream only', async () => {
    await send(plain.port, ['-S', 'routed', '-h', 'h2', '-i', '7', '-a', 'stream=web']);
    expect(await search(plain.server, 'web', '[:= :service "routed"]')).toMatchObject([
      { service: 'routed', host: 'h2', metric: 7, stream: 'web' },
    ]);
    expect(await search(plain.server, 'main', '[:= :service "routed"]')).toEqual([]);
  });

  it('reports an unknown target stream to the client as an error', async () => {
    await expect(send(plain.port, ['-S', 'lost', '-a', 'stream=nope'])).rejects.toMatchObject({
      stderr: expect.stringMatching(/Stream nope not found/),
    });
  });

  it('exposes the TCP metrics', async () => {
    const text = await (await plain.server.request('/metrics')).text();
    expect(text).toMatch(/^tcp_requests_duration_seconds_count \d+/m);
    expect(text).toMatch(/^tcp_connections_total [1-9]/m);
    expect(text).toMatch(/^tcp_frames_rejected_total\{reason="stream_error"\} 1/m);
  });
});

describe('Riemann TCP over TLS with client certificates', () => {
  let ca: TestCa;
  let client: CertFiles;
  let secure: Target;
  beforeAll(async () => {
    ca = createCa();
    const server = ca.issue('server', { ips: ['127.0.0.1'], dns: ['localhost'] });
    client = ca.issue('client', { client: true });
    secure = await startWithTcp({ key: server.key, cert: server.cert, cacert: ca.cert });
  });
  afterAll(async () => {
    await secure.server.stop();
  });

  it('accepts the real client presenting a certificate and indexes its event', async () => {
    const before = Date.now() * 1e6;
    await send(secure.port, [
      '-G',
      '-o',
      `cafile=${ca.cert}`,
      '-o',
      `certfile=${client.cert}`,
      '-o',
      `keyfile=${client.key}`,
      ...EVENT_ARGS,
      '-h',
      'tls-host',
    ]);
    const after = Date.now() * 1e6;
    const events = await search(secure.server, 'main', '[:= :host "tls-host"]');
    expect(events).toHaveLength(1);
    expectFullEvent(events[0], 'tls-host', before, after);
  });

  it('refuses a client without a certificate', async () => {
    await expect(send(secure.port, ['-G', '-o', `cafile=${ca.cert}`, '-S', 'nocert', '-h', 'anon'])).rejects.toThrow();
    expect(await search(secure.server, 'main', '[:= :host "anon"]')).toEqual([]);
  });
});
