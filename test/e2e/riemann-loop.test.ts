/**
 * Vigie's Riemann exporter into Vigie's own Riemann TCP input: the same protocol from both ends
 * (docs/alerting.md, docs/configuration.md). One real server runs checks (one ok, one failing, with labels) and
 * exports their results to a second real server's `streams.tcp`, over plain TCP and over TLS with client
 * certificates; the second indexes them, and every field of the indexed events is checked against the result
 * the first server reports for the same run. Then a receiver that is down when the sender starts: the events
 * arrive once it is up.
 */
import { hostname } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa } from '../helpers/certs.ts';
import { makeDataDir, startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

interface ApiResult {
  name: string;
  summary: string;
  message: string;
  success: boolean;
  duration: number;
  source: string;
  'healthcheck-timestamp': number;
}

/** A receiver whose default stream indexes events by `:healthcheck`, defined in a stream file so that it exists
 *  before the first event arrives. */
async function startReceiver(tcp: Record<string, unknown>): Promise<{ server: TestServer; port: number }> {
  const dataDir = makeDataDir();
  mkdirSync(join(dataDir, 'streams'));
  writeFileSync(
    join(dataDir, 'streams', 'received.edn'),
    '{:received {:default true :actions {:action :index :params [[:healthcheck]]}}}',
  );
  const server = await startServer({ dataDir, config: { streams: { tcp: { host: '127.0.0.1', port: 0, ...tcp } } } });
  const line = await server.waitForLog(/Riemann TCP input listening/);
  return { server, port: Number(/listening on [\d.]+:(\d+)/.exec(line)?.[1]) };
}

/** A sender with two checks every second, `web` (ok) and `down` (failing), both labelled. */
async function startSender(target: HttpTarget, riemann: Record<string, unknown>): Promise<TestServer> {
  return startServer({
    config: {
      'http-checks': [
        {
          name: 'web',
          target: '127.0.0.1',
          port: target.port,
          protocol: 'http',
          path: '/',
          'valid-status': [200],
          timeout: '1s',
          interval: '1s',
          labels: { env: 'test', team: 'core' },
        },
      ],
      'tcp-checks': [
        {
          name: 'down',
          target: '127.0.0.1',
          port: await closedPort(),
          timeout: '1s',
          interval: '1s',
          labels: { env: 'prod' },
        },
      ],
      exporters: { riemann: [{ name: 'loop', host: '127.0.0.1', ttl: '30s', ...riemann }] },
    },
  });
}

async function indexed(receiver: TestServer): Promise<Record<string, unknown>[]> {
  const response = await receiver.request('/api/v1/index/received/search', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: b64('[:always-true]') }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: Record<string, unknown>[] }).events;
}

/**
 * Waits until the receiver's index holds the run of `name` that the sender reports as its latest (same time and
 * duration: checks run every second, so the two are read until they agree), and returns both.
 */
async function sameRun(
  sender: TestServer,
  receiver: TestServer,
  name: string,
): Promise<{ event: Record<string, unknown>; result: ApiResult }> {
  return waitFor(
    async () => {
      const result = (await (await sender.request(`/api/v1/result/${name}`)).json()) as ApiResult;
      const event = (await indexed(receiver)).find((candidate) => candidate.healthcheck === name);
      return (
        event?.time === result['healthcheck-timestamp'] * 1e9 && event.metric === result.duration && { event, result }
      );
    },
    { timeoutMs: 15_000, message: `the receiver indexing the sender's latest run of ${name}` },
  );
}

/** Every field of an indexed event against the result it came from, as docs/alerting.md maps it. */
function expectMapped(event: Record<string, unknown>, result: ApiResult, labels: Record<string, string>): void {
  expect(event).toEqual({
    host: hostname(),
    service: 'cabourotte-healthcheck',
    state: result.success ? 'ok' : 'critical',
    metric: result.duration,
    description: `${result.summary}: ${result.message}`,
    tags: ['cabourotte'],
    ttl: 30,
    time: result['healthcheck-timestamp'] * 1e9,
    healthcheck: result.name,
    source: 'configuration',
    ...labels,
  });
}

describe.each([
  ['plain TCP', false],
  ['TLS with client certificates', true],
])('Riemann exporter into the Riemann TCP input over %s', (_name, tls) => {
  let target: HttpTarget;
  let receiver: { server: TestServer; port: number };
  let sender: TestServer;

  beforeAll(async () => {
    target = await startHttpTarget();
    let serverTls: Record<string, unknown> = {};
    let clientTls: Record<string, unknown> = {};
    if (tls) {
      const ca = createCa();
      const serverCert = ca.issue('receiver', { ips: ['127.0.0.1'] });
      const clientCert = ca.issue('sender', { client: true });
      serverTls = { key: serverCert.key, cert: serverCert.cert, cacert: ca.cert };
      clientTls = { key: clientCert.key, cert: clientCert.cert, cacert: ca.cert };
    }
    receiver = await startReceiver(serverTls);
    sender = await startSender(target, { port: receiver.port, ...clientTls });
  }, 60_000);

  afterAll(async () => {
    await sender?.stop();
    await receiver?.server.stop();
    await target?.close();
  });

  it('indexes the ok result with every field, its labels as attributes', async () => {
    const { event, result } = await sameRun(sender, receiver.server, 'web');
    expect(result.success).toBe(true);
    expectMapped(event, result, { env: 'test', team: 'core' });
  });

  it('indexes the failing result as critical, with its error in the description', async () => {
    const { event, result } = await sameRun(sender, receiver.server, 'down');
    expect(result.success).toBe(false);
    expectMapped(event, result, { env: 'prod' });
    expect(event.description).toMatch(/refused/i);
  });

  it('counts what was sent on one side and received on the other, nothing rejected', async () => {
    const sent = await (await sender.request('/metrics')).text();
    expect(sent).toMatch(/^exporter_sent_total\{name="loop"\} [1-9]/m);
    expect(sent).not.toMatch(/^exporter_dropped_total\{name="loop",reason="(rejected|retries_exhausted)"\} [1-9]/m);
    const received = await (await receiver.server.request('/metrics')).text();
    expect(received).toMatch(/^tcp_connections_total [1-9]/m);
    expect(received).not.toMatch(/^tcp_frames_rejected_total\{[^}]*\} [1-9]/m);
  });
});

describe('Riemann exporter into a Riemann TCP input that starts later', () => {
  let target: HttpTarget;
  let sender: TestServer;
  let receiver: { server: TestServer; port: number } | null = null;

  beforeAll(async () => {
    target = await startHttpTarget();
  });

  afterAll(async () => {
    await sender?.stop();
    await receiver?.server.stop();
    await target?.close();
  });

  it('reconnects in the background and delivers once the receiver is up', async () => {
    const port = await closedPort();
    sender = await startSender(target, { port });
    await sender.waitForLog(/cannot connect to 127\.0\.0\.1:\d+, retrying in the background/);
    // Results are produced (and queue) while nothing listens.
    await waitFor(async () => (await sender.request('/api/v1/result/web')).status === 200, { timeoutMs: 10_000 });
    receiver = await startReceiver({ port });
    const { event, result } = await sameRun(sender, receiver.server, 'web');
    expectMapped(event, result, { env: 'test', team: 'core' });
    expect((await sameRun(sender, receiver.server, 'down')).event.state).toBe('critical');
    await sender.waitForLog(/Riemann exporter loop connected to/);
  }, 60_000);
});
