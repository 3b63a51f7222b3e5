/**
 * The websockets against the real server with a real `ws` client: `publish!` channels with and without a
 * query, the close reason of an invalid query, the `/index` feed, basic auth and TLS on the upgrade request,
 * and a subscriber that stops reading: its messages are dropped and counted while the others get everything.
 */
import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createCa } from '../helpers/certs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const AUTH = { username: 'watcher', password: 's3cret' };
const authHeader = `Basic ${b64(`${AUTH.username}:${AUTH.password}`)}`;

let server: TestServer;

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json', authorization: authHeader },
  body: JSON.stringify(body),
});
const addStream = async (name: string, config: string) => {
  const response = await server.request(`/api/v1/stream/${name}`, json('POST', { config: b64(config) }));
  expect(response.status).toBe(200);
};
const push = async (name: string, events: unknown[]) => {
  const response = await server.request(`/api/v1/stream/${name}`, json('PUT', { events }));
  expect(response.status).toBe(200);
};
const wsUrl = (path: string) => server.url.replace(/^http/, 'ws') + path;

/** A subscriber that records what it receives (JSON, one event per message). */
async function subscribe(
  path: string,
  headers: Record<string, string> = { authorization: authHeader },
  base = server.url,
) {
  const socket = new WebSocket(base.replace(/^http/, 'ws') + path, { headers });
  const received: Record<string, unknown>[] = [];
  const binary: boolean[] = [];
  socket.on('message', (data, isBinary) => {
    received.push(JSON.parse(data.toString()) as Record<string, unknown>);
    binary.push(isBinary);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  return { socket, received, binary, closed };
}

async function metric(line: RegExp): Promise<number> {
  const text = await (await server.request('/metrics', { headers: { authorization: authHeader } })).text();
  const found = text.split('\n').find((one) => line.test(one));
  return found === undefined ? 0 : Number(found.split(' ').pop());
}

beforeAll(async () => {
  server = await startServer({
    config: {
      http: { 'basic-auth': AUTH },
      streams: {
        websocket: { 'max-buffered-bytes': 4096, 'max-connections': 4 },
        'async-queues': { later: { 'queue-size': 100 } },
      },
    },
  });
  await addStream(
    'alerts',
    '{:actions {:action :sdo :children [{:action :publish! :params [:alerts]} {:action :where :params [[:= :state "critical"]] :children [{:action :publish! :params [:critical]}]}]}}',
  );
  await addStream('hosts', '{:actions {:action :index :params [[:host]]} :default true}');
}, 60_000);
afterAll(async () => {
  await server.kill9();
});

describe('channels', () => {
  it('sends each published event as JSON in a binary frame, to every subscriber of its channel', async () => {
    const all = await subscribe('/channel/alerts');
    const critical = await subscribe('/channel/critical');
    const before = await metric(/^websocket_connections_count /);
    expect(before).toBeGreaterThanOrEqual(2);
    const events = [
      { host: 'a', service: 'cpu', state: 'ok', metric: 0.5, time: 1_000_000_000 },
      { host: 'b', service: 'cpu', state: 'critical', metric: 0.99, time: 2_000_000_000, tags: ['x'] },
    ];
    await push('alerts', events);
    await waitFor(() => all.received.length === 2 && critical.received.length === 1, {
      message: 'the published events',
    });
    expect(all.received).toEqual(events);
    expect(all.binary).toEqual([true, true]);
    expect(critical.received).toEqual([events[1]]);
    all.socket.close();
    critical.socket.close();
    await all.closed;
  });

  it('sends only the events matching the query (base64 EDN condition)', async () => {
    const query = b64('[:and [:= :host "b"] [:> :metric 0.9]]');
    const filtered = await subscribe(`/channel/alerts?query=${encodeURIComponent(query)}`);
    const everything = await subscribe(`/channel/alerts?query=${b64('true')}`);
    await push('alerts', [
      { host: 'a', metric: 0.95, time: 1 },
      { host: 'b', metric: 0.5, time: 2 },
      { host: 'b', metric: 0.95, time: 3 },
      { host: 'b', time: 4 },
    ]);
    await waitFor(() => everything.received.length === 4, { message: 'every event on the unfiltered subscriber' });
    expect(filtered.received).toEqual([{ host: 'b', metric: 0.95, time: 3 }]);
    filtered.socket.close();
    everything.socket.close();
  });

  it('closes with 1008 and a reason naming the problem when the query is invalid', async () => {
    const notBase64 = await subscribe('/channel/alerts?query=%25%25%25');
    expect(await notBase64.closed).toEqual({
      code: 1008,
      reason: 'Invalid websocket query (base64 EDN condition): invalid base64',
    });
    // base64url, which Node's decoder reads silently, is not the standard base64 the query is documented as.
    const urlSafe = await subscribe('/channel/alerts?query=Wzo9IDpob3N0ICI_PyJd');
    expect(await urlSafe.closed).toEqual({
      code: 1008,
      reason: 'Invalid websocket query (base64 EDN condition): invalid base64',
    });
    const notUtf8 = await subscribe(
      `/channel/alerts?query=${encodeURIComponent(Buffer.from('[:= :host "\xe9"]', 'latin1').toString('base64'))}`,
    );
    expect(await notUtf8.closed).toEqual({
      code: 1008,
      reason: 'Invalid websocket query (base64 EDN condition): the base64 does not decode to UTF-8 text',
    });
    const unknownOperator = await subscribe(`/channel/alerts?query=${encodeURIComponent(b64('[:like :host "a"]'))}`);
    const closed = await unknownOperator.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/^Invalid websocket query \(base64 EDN condition\): .*like/);
    const badEdn = await subscribe(`/channel/alerts?query=${encodeURIComponent(b64('[:= :host'))}`);
    expect((await badEdn.closed).code).toBe(1008);
  });
});

describe('async-queue!', () => {
  it('publishes from a queue declared in streams.async-queues', async () => {
    await addStream(
      'queued',
      '{:actions {:action :async-queue! :params [:later] :children [{:action :publish! :params [:queued]}]}}',
    );
    const subscriber = await subscribe('/channel/queued');
    await push('queued', [{ host: 'q', time: 1 }]);
    await waitFor(() => subscriber.received.length === 1, { message: 'the event published from the queue' });
    expect(subscriber.received).toEqual([{ host: 'q', time: 1 }]);
    subscriber.socket.close();
    const unknown = await server.request(
      '/api/v1/stream/unknown-queue',
      json('POST', { config: b64('{:actions {:action :async-queue! :params [:nope] :children []}}') }),
    );
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: string }).error).toMatch(/Async queue :nope not found/);
  });
});

describe('index feed', () => {
  it('streams every update of a stream index, and of the default streams without ?stream', async () => {
    const feed = await subscribe(`/index?stream=hosts&query=${encodeURIComponent(b64('[:= :host "web-1"]'))}`);
    const defaults = await subscribe('/index');
    const other = await subscribe('/index?stream=alerts');
    await push('hosts', [
      { host: 'web-1', metric: 1, time: 1_000_000_000 },
      { host: 'web-2', metric: 2, time: 2_000_000_000 },
      { host: 'web-1', state: 'expired', time: 3_000_000_000 },
    ]);
    await waitFor(() => feed.received.length === 2 && defaults.received.length === 3, { message: 'the index updates' });
    expect(feed.received).toEqual([
      { host: 'web-1', metric: 1, time: 1_000_000_000 },
      { host: 'web-1', state: 'expired', time: 3_000_000_000 },
    ]);
    expect(defaults.received.map((event) => event.host)).toEqual(['web-1', 'web-2', 'web-1']);
    expect(other.received).toEqual([]);
    for (const one of [feed, defaults, other]) one.socket.close();
  });
});

describe('connection cap', () => {
  it('closes the websockets past streams.websocket.max-connections with 1013', async () => {
    await waitFor(async () => (await metric(/^websocket_connections_count /)) === 0, {
      message: "the earlier tests' websockets closing",
    });
    const open = await Promise.all([1, 2, 3, 4].map(() => subscribe('/channel/cap')));
    const extra = await subscribe('/channel/cap');
    expect(await extra.closed).toEqual({ code: 1013, reason: 'Too many websocket connections (limit 4), retry later' });
    expect(await metric(/^websocket_connections_count /)).toBe(4);
    for (const one of open) one.socket.close();
    await Promise.all(open.map((one) => one.closed));
  });
});

describe('auth', () => {
  it('refuses the upgrade without the basic auth credentials', async () => {
    const refused = new WebSocket(wsUrl('/channel/alerts'));
    const status = await new Promise<number>((resolve, reject) => {
      refused.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      refused.once('open', () => reject(new Error('the upgrade was accepted without credentials')));
    });
    expect(status).toBe(401);
    const wrong = new WebSocket(wsUrl('/channel/alerts'), {
      headers: { authorization: `Basic ${b64('watcher:nope')}` },
    });
    await expect(
      new Promise((resolve, reject) => (wrong.once('error', reject), wrong.once('open', resolve))),
    ).rejects.toThrow(/401/);
  });
});

describe('slow subscriber', () => {
  /** A websocket client that completes the handshake and then never reads. */
  async function stalledSubscriber(base: string, path: string, headers: Record<string, string>): Promise<Socket> {
    const url = new URL(base);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${b64('0123456789abcdef')}\r\nSec-WebSocket-Version: 13\r\n${Object.entries(headers)
          .map(([key, value]) => `${key}: ${value}\r\n`)
          .join('')}\r\n`,
    );
    const head = await new Promise<string>((resolve) =>
      socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))),
    );
    expect(head).toMatch(/^HTTP\/1.1 101/);
    socket.pause();
    return socket;
  }

  it('drops and counts the messages of a subscriber that does not read, the others get every event', async () => {
    // A server of its own with an 8 MiB cap: the reading subscriber is given each batch (4 MB) before the next
    // one is pushed, so it never holds more than the cap however loaded the machine; the stalled one is sent
    // 40 MB, past the kernel's socket buffers and the cap, so its messages are dropped.
    const roomy = await startServer({ config: { streams: { websocket: { 'max-buffered-bytes': 8 * 1024 * 1024 } } } });
    try {
      const response = await roomy.request('/api/v1/stream/fanout', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ config: b64('{:actions {:action :publish! :params [:fanout]}}') }),
      });
      expect(response.status).toBe(200);
      const stalled = await stalledSubscriber(roomy.url, '/channel/fanout', {});
      const reader = await subscribe('/channel/fanout', {}, roomy.url);
      const description = 'x'.repeat(100_000);
      const batches = 10;
      const perBatch = 40;
      for (let batch = 0; batch < batches; batch++) {
        const pushed = await roomy.request('/api/v1/stream/fanout', {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            events: Array.from({ length: perBatch }, (_, i) => ({
              host: 'h',
              service: `s${batch}`,
              metric: i,
              time: batch * perBatch + i,
              description,
            })),
          }),
        });
        expect(pushed.status).toBe(200);
        await waitFor(() => reader.received.length === (batch + 1) * perBatch, {
          timeoutMs: 30_000,
          message: `batch ${batch} on the reading subscriber`,
        });
      }
      expect(reader.received.map((event) => event.time)).toEqual(
        Array.from({ length: batches * perBatch }, (_, i) => i),
      );
      const text = await (await roomy.request('/metrics')).text();
      const dropped = text
        .split('\n')
        .find((line) => line.startsWith('websocket_messages_dropped_total{reason="slow_subscriber"}'));
      expect(Number(dropped?.split(' ').pop())).toBeGreaterThan(0);
      stalled.destroy();
      reader.socket.close();
    } finally {
      await roomy.stop();
    }
  }, 120_000);
});

describe('TLS', () => {
  it('serves the websockets over wss with the server certificate', async () => {
    const ca = createCa();
    const leaf = ca.issue('server', { ips: ['127.0.0.1'] });
    const secure = await startServer({ config: { http: { key: leaf.key, cert: leaf.cert } } });
    try {
      const b64config = b64('{:actions {:action :publish! :params [:tls]}}');
      const url = secure.url.replace(/^https/, 'wss');
      const socket = new WebSocket(`${url}/channel/tls`, { ca: readFileSync(ca.cert) });
      const received: string[] = [];
      socket.on('message', (data) => received.push(data.toString()));
      await new Promise((resolve, reject) => (socket.once('open', resolve), socket.once('error', reject)));
      const { request, Agent } = await import('undici');
      const dispatcher = new Agent({ connect: { ca: readFileSync(ca.cert) } });
      const post = await request(`${secure.url}/api/v1/stream/tls`, {
        method: 'POST',
        dispatcher,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ config: b64config }),
      });
      expect(post.statusCode).toBe(200);
      await post.body.text();
      const put = await request(`${secure.url}/api/v1/stream/tls`, {
        method: 'PUT',
        dispatcher,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ host: 'secure', time: 1 }] }),
      });
      expect(put.statusCode).toBe(200);
      await put.body.text();
      await waitFor(() => received.length === 1, { message: 'the event over wss' });
      expect(JSON.parse(received[0] as string)).toEqual({ host: 'secure', time: 1 });
      socket.close();
      await dispatcher.close();
    } finally {
      await secure.kill9();
    }
  }, 60_000);
});

describe('shutdown', () => {
  it('closes the open websockets on SIGTERM and exits 0', async () => {
    const own = await startServer();
    try {
      const socket = new WebSocket(`${own.url.replace(/^http/, 'ws')}/channel/any`);
      await new Promise((resolve, reject) => (socket.once('open', resolve), socket.once('error', reject)));
      const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
      const started = Date.now();
      expect(await own.stop()).toBe(0);
      expect(await closed).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await own.kill9();
    }
  }, 30_000);
});
