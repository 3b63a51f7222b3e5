/**
 * The Riemann TCP server over real sockets, with a test client speaking the framing, and an ingest function the
 * test controls: routing, replies, queries, oversized and malformed frames, backpressure.
 */
import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Event } from '../../../src/stream/event.ts';
import { loadProtos } from '../../../src/stream/ingest/protos.ts';
import { RiemannTcpServer } from '../../../src/stream/ingest/riemann-tcp.ts';
import { waitFor } from '../../helpers/wait.ts';

interface Reply {
  ok?: boolean;
  error?: string;
}

/** A Riemann client for the tests: sends framed Msgs, collects framed replies. */
class TestClient {
  private buffer = Buffer.alloc(0);
  readonly replies: Reply[] = [];
  ended = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      while (this.buffer.length >= 4 && this.buffer.length >= 4 + this.buffer.readUInt32BE(0)) {
        const length = this.buffer.readUInt32BE(0);
        const type = loadProtos().riemannMsg;
        this.replies.push(type.toObject(type.decode(this.buffer.subarray(4, 4 + length))) as Reply);
        this.buffer = this.buffer.subarray(4 + length);
      }
    });
    for (const closing of ['end', 'close']) {
      socket.on(closing, () => {
        this.ended = true;
      });
    }
    socket.on('error', () => undefined);
  }

  static open(port: number): Promise<TestClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new TestClient(socket)));
      socket.once('error', reject);
    });
  }

  /** Writes one frame; false when the socket's write buffer is full (TCP pushes back). */
  send(object: Record<string, unknown>): boolean {
    const type = loadProtos().riemannMsg;
    return this.sendRaw(Buffer.from(type.encode(type.fromObject(object)).finish()));
  }

  sendRaw(body: Buffer, declaredLength = body.length): boolean {
    const header = Buffer.alloc(4);
    header.writeUInt32BE(declaredLength, 0);
    return this.socket.write(Buffer.concat([header, body]));
  }

  async waitFor(count: number, timeoutMs = 5000): Promise<Reply[]> {
    await waitFor(() => this.replies.length >= count, {
      timeoutMs,
      message: `${count} replies (${this.replies.length} arrived)`,
    });
    return this.replies.slice(0, count);
  }

  async waitForEnd(timeoutMs = 5000): Promise<void> {
    await waitFor(() => this.ended, { timeoutMs, intervalMs: 20, message: 'the server ending the connection' });
  }
}

const servers: RiemannTcpServer[] = [];
const clients: TestClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  for (const server of servers.splice(0)) await server.close();
});

interface Harness {
  port: number;
  registry: Registry;
  pushed: { target: string; events: Event[] }[];
  state: { full: boolean; offered: number };
  client(): Promise<TestClient>;
}

async function start(
  options: { maxFrameBytes?: number; maxConnections?: number; knownStreams?: string[] } = {},
): Promise<Harness> {
  const registry = new Registry();
  const pushed: { target: string; events: Event[] }[] = [];
  const state = { full: false, offered: 0 };
  const known = new Set(['default', ...(options.knownStreams ?? [])]);
  const server = new RiemannTcpServer({
    host: '127.0.0.1',
    port: 0,
    maxFrameBytes: options.maxFrameBytes ?? 1024 * 1024,
    maxConnections: options.maxConnections ?? 16,
    retryMs: 5,
    registry,
    logger: pino({ level: 'silent' }),
    ingest: async (target, events) => {
      state.offered++;
      if (!known.has(target)) throw new Error(`Stream ${target} not found`);
      if (state.full) return false;
      pushed.push({ target, events });
      return true;
    },
  });
  servers.push(server);
  const { port } = await server.listen();
  return {
    port,
    registry,
    pushed,
    state,
    async client() {
      const client = await TestClient.open(port);
      clients.push(client);
      return client;
    },
  };
}

async function metric(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const values = (await registry.getMetricsAsJSON()).flatMap((m) =>
    m.values.map((v) => ({ ...v, metricName: (v as { metricName?: string }).metricName ?? m.name })),
  );
  const value = values.find(
    (v) => v.metricName === name && Object.entries(labels).every(([k, l]) => v.labels[k] === l),
  );
  return Number(value?.value ?? 0);
}

describe('Riemann TCP server', () => {
  it('answers ok, routes by the stream attribute and keeps frame order', async () => {
    const harness = await start({ knownStreams: ['web'] });
    const client = await harness.client();
    client.send({ events: [{ service: 'a', metricD: 1 }] });
    client.send({ events: [{ service: 'b', attributes: [{ key: 'stream', value: 'web' }] }, { service: 'c' }] });
    expect(await client.waitFor(2)).toEqual([{ ok: true }, { ok: true }]);
    expect(harness.pushed.map(({ target, events }) => [target, events.map((e) => e.service)])).toEqual([
      ['default', ['a']],
      ['web', ['b']],
      ['default', ['c']],
    ]);
    expect(harness.pushed[1]?.events[0]?.stream).toBe('web');
    expect(await metric(harness.registry, 'tcp_connections')).toBe(1);
    expect(await metric(harness.registry, 'tcp_requests_duration_seconds_count')).toBe(2);
  });

  it('refuses queries and unknown streams with an error reply, and goes on', async () => {
    const harness = await start();
    const client = await harness.client();
    client.send({ query: { string: 'true' } });
    client.send({ events: [{ service: 'x', attributes: [{ key: 'stream', value: 'nope' }] }] });
    client.send({ events: [{ service: 'after' }] });
    expect(await client.waitFor(3)).toEqual([
      { ok: false, error: 'queries are not supported' },
      { ok: false, error: 'Stream nope not found' },
      { ok: true },
    ]);
    expect(await metric(harness.registry, 'tcp_frames_rejected_total', { reason: 'query' })).toBe(1);
    expect(await metric(harness.registry, 'tcp_frames_rejected_total', { reason: 'stream_error' })).toBe(1);
  });

  it('answers a malformed frame with an error and keeps the connection', async () => {
    const harness = await start();
    const client = await harness.client();
    client.sendRaw(Buffer.from([0x32, 0x05, 0x1a]));
    client.send({ events: [{ service: 'fine' }] });
    const [bad, good] = await client.waitFor(2);
    expect(bad?.ok).toBe(false);
    expect(bad?.error).toMatch(/^malformed Riemann Msg: /);
    expect(good).toEqual({ ok: true });
    expect(await metric(harness.registry, 'tcp_frames_rejected_total', { reason: 'malformed' })).toBe(1);
  });

  it('answers a frame over the limit with an error and closes, without reading it', async () => {
    const harness = await start({ maxFrameBytes: 2048 });
    const client = await harness.client();
    client.sendRaw(Buffer.alloc(100), 10_000_000);
    const [reply] = await client.waitFor(1);
    expect(reply).toEqual({ ok: false, error: 'frame of 10000000 bytes is over the limit of 2048 bytes' });
    await client.waitForEnd();
    expect(harness.pushed).toEqual([]);
    expect(await metric(harness.registry, 'tcp_frames_rejected_total', { reason: 'too_large' })).toBe(1);
  });

  it('reassembles frames split across reads and several frames in one read', async () => {
    const harness = await start();
    const client = await harness.client();
    const type = loadProtos().riemannMsg;
    const frames = [1, 2, 3].map((i) => {
      const body = Buffer.from(type.encode(type.fromObject({ events: [{ service: `s${i}` }] })).finish());
      const header = Buffer.alloc(4);
      header.writeUInt32BE(body.length, 0);
      return Buffer.concat([header, body]);
    });
    const all = Buffer.concat(frames);
    client.socket.write(all.subarray(0, 2));
    // eslint-disable-next-line no-restricted-syntax -- keeps the writes apart, so that the server reads them apart
    await new Promise((resolve) => setTimeout(resolve, 30));
    client.socket.write(all.subarray(2, 9));
    // eslint-disable-next-line no-restricted-syntax -- keeps the writes apart, so that the server reads them apart
    await new Promise((resolve) => setTimeout(resolve, 30));
    client.socket.write(all.subarray(9));
    expect(await client.waitFor(3)).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    expect(harness.pushed.map(({ events }) => events[0]?.service)).toEqual(['s1', 's2', 's3']);
  });

  it('drops connections past max-connections, counted', async () => {
    const harness = await start({ maxConnections: 1 });
    const first = await harness.client();
    first.send({ events: [{ service: 'first' }] });
    await first.waitFor(1);
    const second = await harness.client();
    await second.waitForEnd();
    expect(await metric(harness.registry, 'tcp_connections_dropped_total', { reason: 'max_connections' })).toBe(1);
    first.send({ events: [{ service: 'still' }] });
    expect(await first.waitFor(2)).toEqual([{ ok: true }, { ok: true }]);
  });

  it('stops reading while the backlog is full, so TCP pushes back on the sender, and resumes when it drains', async () => {
    const harness = await start();
    harness.state.full = true;
    const client = await harness.client();
    const event = { service: 'bulk', host: 'h'.repeat(4000), metricD: 1 };
    client.send({ events: [event] });
    // eslint-disable-next-line no-restricted-syntax -- proves no reply comes while the backlog is full
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(client.replies).toEqual([]);
    expect(await metric(harness.registry, 'tcp_connections_paused')).toBe(1);
    // Keep writing: the server reads nothing, so the kernel buffers fill and the client's writes back up.
    let sent = 1;
    while (client.socket.writableLength < 4 * 1024 * 1024 && sent < 200_000) {
      client.send({ events: [event] });
      sent++;
      if (sent % 1000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(client.socket.writableLength).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    expect(harness.pushed).toEqual([]);
    harness.state.full = false;
    const replies = await client.waitFor(sent, 30_000);
    expect(replies.every((reply) => reply.ok === true)).toBe(true);
    expect(harness.pushed.length).toBe(sent);
    expect(await metric(harness.registry, 'tcp_connections_paused')).toBe(0);
  });
});
