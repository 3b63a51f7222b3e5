import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../../../src/config/load.ts';
import type { Event } from '../../../src/stream/event.ts';
import { resolveOutputs } from '../../../src/stream/outputs/index.ts';
import { parseOutputConfig } from '../../../src/stream/outputs/schema.ts';
import { buildOutputsFrom, RecordingObserver } from '../../helpers/outputs.ts';
import { waitFor } from '../../helpers/wait.ts';

const events = (count: number, from = 0): Event[] =>
  Array.from({ length: count }, (_, i) => ({ service: 'svc', metric: from + i, time: (from + i) * 1e9 }));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vigie-outputs-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('file output', () => {
  it('appends one JSON line per event, in order, in batches and on close', async () => {
    const path = join(dir, 'events.jsonl');
    const counts = new RecordingObserver();
    const registry = buildOutputsFrom(
      { archive: { type: 'file', path, 'batch-size': 2, 'flush-interval': '1h' } },
      counts,
    );
    registry.send('archive', events(3));
    registry.send('archive', { host: 'h', state: 'ok', metric: Number.NaN, attributes: { 'a/b': 1 } });
    registry.send('archive', null);
    // Two full batches go at once; nothing waits for the hour-long flush interval.
    await waitFor(() => counts.sentTotal === 4);
    registry.send('archive', { last: true });
    expect(registry.queueSizes()).toEqual({ archive: 1 });
    await registry.close(1000);
    const lines = (await readFile(path, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    expect(lines).toEqual([
      ...events(3),
      { host: 'h', state: 'ok', metric: null, attributes: { 'a/b': 1 } },
      { last: true },
    ]);
    expect(counts.sentTotal).toBe(5);
    // After close, events are refused and counted.
    expect(registry.send('archive', { late: true })).toBe(true);
    expect(counts.drops.shutdown).toBe(1);
    expect(registry.send('unknown', { x: 1 })).toBe(false);
  });

  it('flushes a partial batch after flush-interval', async () => {
    const path = join(dir, 'interval.jsonl');
    const registry = buildOutputsFrom({ out: { type: 'file', path, 'flush-interval': '50ms' } });
    registry.send('out', { n: 1 });
    await expectFileEventually(path, '{"n":1}\n');
    expect(registry.queueSizes()).toEqual({ out: 0 });
    await registry.close(1000);
  });
});

async function expectFileEventually(path: string, content: string): Promise<void> {
  await waitFor(async () => expect(await readFile(path, 'utf8').catch(() => '')).toBe(content), {
    timeoutMs: 2000,
    intervalMs: 10,
  });
}

describe('http output', () => {
  let server: Server;
  let url: string;
  const received: { headers: IncomingMessage['headers']; rawHeaders: string[]; body: Event[] }[] = [];
  /** Statuses to answer next, in order; 200 once empty. */
  const script: number[] = [];
  let hold: Promise<void> | null = null;

  beforeAll(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        void (hold ?? Promise.resolve()).then(() => {
          const status = script.shift() ?? 200;
          if (status === 200)
            received.push({
              headers: request.headers,
              rawHeaders: request.rawHeaders,
              body: JSON.parse(Buffer.concat(chunks).toString()) as Event[],
            });
          response.writeHead(status).end(status === 200 ? '' : 'no');
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ingest`;
  });
  afterEach(() => {
    received.length = 0;
    script.length = 0;
    hold = null;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('POSTs JSON arrays of batch-size events with the configured headers', async () => {
    const counts = new RecordingObserver();
    const registry = buildOutputsFrom(
      { hook: { type: 'http', url, headers: { authorization: 'Bearer t' }, 'batch-size': 10, 'flush-interval': '1h' } },
      counts,
    );
    for (const event of events(25)) registry.send('hook', event);
    await waitFor(() => counts.sentTotal === 20);
    expect(received.map((request) => request.body.length)).toEqual([10, 10]);
    await registry.close(1000);
    expect(received.map((request) => request.body.length)).toEqual([10, 10, 5]);
    expect(received.flatMap((request) => request.body)).toEqual(events(25));
    expect(received[0]?.headers).toMatchObject({
      authorization: 'Bearer t',
      'content-type': 'application/json',
      'user-agent': 'vigie',
    });
  });

  it('lets configured headers replace the defaults whatever the case of their names', async () => {
    const counts = new RecordingObserver();
    const registry = buildOutputsFrom(
      {
        hook: {
          type: 'http',
          url,
          headers: { 'Content-Type': 'application/vnd.events+json', 'User-Agent': 'collector-client' },
          'flush-interval': '10ms',
        },
      },
      counts,
    );
    registry.send('hook', events(1)[0] as Event);
    await waitFor(() => counts.sentTotal === 1);
    await registry.close(1000);
    const raw = received[0]?.rawHeaders ?? [];
    const sent = (name: string) => raw.filter((_value, i) => i % 2 === 1 && raw[i - 1]?.toLowerCase() === name);
    expect(sent('content-type')).toEqual(['application/vnd.events+json']);
    expect(sent('user-agent')).toEqual(['collector-client']);
  });

  it('retries a 503 with backoff and then delivers', async () => {
    const counts = new RecordingObserver();
    script.push(503, 503);
    const registry = buildOutputsFrom(
      { hook: { type: 'http', url, 'batch-size': 3, 'retry-backoff': '10ms' } },
      counts,
    );
    registry.send('hook', events(3));
    await waitFor(() => counts.sentTotal === 3);
    expect(counts.failures).toHaveLength(2);
    expect(counts.failures[0]).toMatch(/answered 503/);
    expect(received.flatMap((request) => request.body)).toEqual(events(3));
    expect(counts.drops).toEqual({});
    await registry.close(1000);
  });

  it('drops a batch after the last retry', async () => {
    const counts = new RecordingObserver();
    script.push(500, 500, 500);
    const registry = buildOutputsFrom(
      { hook: { type: 'http', url, 'batch-size': 2, retries: 2, 'retry-backoff': '5ms' } },
      counts,
    );
    registry.send('hook', events(2));
    await waitFor(() => counts.drops.retries_exhausted === 2);
    expect(counts.failures).toHaveLength(3);
    expect(received).toEqual([]);
    await registry.close(1000);
  });

  it('drops a batch refused with 400 without retrying', async () => {
    const counts = new RecordingObserver();
    script.push(400);
    const registry = buildOutputsFrom({ hook: { type: 'http', url, 'batch-size': 2, 'retry-backoff': '5ms' } }, counts);
    registry.send('hook', events(2));
    registry.send('hook', events(2, 2));
    await waitFor(() => counts.sentTotal === 2);
    expect(counts.drops).toEqual({ rejected: 2 });
    expect(counts.failures).toHaveLength(1);
    expect(received.flatMap((request) => request.body)).toEqual(events(2, 2));
    await registry.close(1000);
  });

  it('counts events over queue-size as dropped while the destination is slow', async () => {
    const counts = new RecordingObserver();
    let release: () => void = () => undefined;
    hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const registry = buildOutputsFrom({ hook: { type: 'http', url, 'batch-size': 5, 'queue-size': 10 } }, counts);
    registry.send('hook', events(5));
    // The first batch is in flight (held by the server); ten more fit in the queue, five overflow.
    await waitFor(() => registry.queueSizes().hook === 0);
    registry.send('hook', events(15, 5));
    expect(registry.queueSizes()).toEqual({ hook: 10 });
    expect(counts.drops).toEqual({ queue_full: 5 });
    release();
    await registry.close(2000);
    expect(received.flatMap((request) => request.body)).toEqual(events(15));
    expect(counts.sentTotal).toBe(15);
  });

  it('gives up on a hung destination at the close timeout and counts what was left', async () => {
    const counts = new RecordingObserver();
    hold = new Promise<void>(() => undefined);
    const registry = buildOutputsFrom({ hook: { type: 'http', url, 'batch-size': 2 } }, counts);
    registry.send('hook', events(3));
    const started = Date.now();
    await registry.close(200);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(counts.drops.shutdown).toBe(3);
  });

  it('retries when nothing listens, then drops', async () => {
    const counts = new RecordingObserver();
    const registry = buildOutputsFrom(
      { hook: { type: 'http', url: 'http://127.0.0.1:1/x', 'batch-size': 1, retries: 1, 'retry-backoff': '5ms' } },
      counts,
    );
    registry.send('hook', { a: 1 });
    await waitFor(() => counts.drops.retries_exhausted === 1);
    expect(counts.failures[0]).toMatch(/^POST http:\/\/127\.0\.0\.1:1\/x failed: /);
    await registry.close(1000);
  });
});

describe('output config', () => {
  it('resolves defaults and durations', () => {
    expect(parseOutputConfig('a', { type: 'http', url: 'http://127.0.0.1/x' })).toEqual({
      type: 'http',
      url: 'http://127.0.0.1/x',
      headers: {},
      timeoutMs: 10_000,
      batching: { queueSize: 10_000, batchSize: 1_000, flushIntervalMs: 1_000, retries: 3, retryBackoffMs: 200 },
    });
    expect(
      parseOutputConfig('b', { type: 'file', path: '/tmp/x', 'flush-interval': '250ms', retries: 0 }),
    ).toMatchObject({
      batching: { flushIntervalMs: 250, retries: 0 },
    });
  });

  it('names the output and the key of every problem', () => {
    const problem = (raw: unknown) => {
      try {
        parseOutputConfig('out', raw);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        const config = error as ConfigError;
        return `${config.key}: ${config.problem}`;
      }
      return 'accepted';
    };
    expect(problem({ type: 'kafka' })).toBe(
      'streams.outputs.out.type: must be one of "file", "http", "prometheus", "pagerduty", "elasticsearch", "webhook", "slack", "email", got "kafka"',
    );
    expect(problem({ type: 'file' })).toBe('streams.outputs.out.path: is required');
    expect(problem({ type: 'file', path: 'x', pth: 'y' })).toMatch(/^streams\.outputs\.out\.pth: unknown key "pth"/);
    expect(problem({ type: 'http', url: 'http://h', timeout: 5 })).toMatch(
      /^streams\.outputs\.out\.timeout: must be a duration string/,
    );
    expect(problem({ type: 'http', url: 'http://h', 'flush-interval': '0s' })).toBe(
      'streams.outputs.out.flush-interval: must be positive, got "0s"',
    );
    expect(problem({ type: 'prometheus', url: 'ftp://h' })).toMatch(/^streams\.outputs\.out\.url: /);
    expect(problem({ type: 'http', url: 'http://h', headers: { a: 1 } })).toMatch(
      /^streams\.outputs\.out\.headers\.a: must be a string/,
    );
    expect(problem('file')).toBe('streams.outputs.out: must be a mapping');
    expect(() => resolveOutputs({ good: { type: 'file', path: 'x' }, bad: { type: 'file' } })).toThrow(
      /streams\.outputs\.bad\.path/,
    );
  });
});

describe('outputs in the config file', () => {
  it('are resolved once by the config loader: defaults applied, durations in ms, kind-specific messages', () => {
    const config = parseConfigText(
      'streams:\n  outputs:\n    lines: {type: file, path: /tmp/x, flush-interval: 250ms}\n',
      '/etc/vigie.yaml',
    );
    expect(config.streams.outputs).toEqual({
      lines: {
        type: 'file',
        path: '/tmp/x',
        batching: { queueSize: 10_000, batchSize: 1_000, flushIntervalMs: 250, retries: 3, retryBackoffMs: 200 },
      },
    });
    expect(() => parseConfigText('streams:\n  outputs:\n    lines: {type: file}\n', '/etc/vigie.yaml')).toThrow(
      '/etc/vigie.yaml: streams.outputs.lines.path: is required',
    );
  });
});
