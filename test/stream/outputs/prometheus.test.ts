import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Event } from '../../../src/stream/event.ts';
import type { DropReason, OutputObserver } from '../../../src/stream/outputs/index.ts';
import { eventsToSeries, sanitiseLabelName, sanitiseMetricName } from '../../../src/stream/outputs/prometheus.ts';
import { buildOutputsFrom } from '../../helpers/outputs.ts';
import { waitFor } from '../../helpers/wait.ts';

const PROMETHEUS = '/usr/bin/prometheus';
const hasPrometheus = existsSync(PROMETHEUS);
if (!hasPrometheus)
  console.warn(`skipping the real Prometheus test: ${PROMETHEUS} does not exist (apt-get install prometheus)`);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const found = await waitFor(async () => (await probe().catch(() => undefined)) ?? false, {
    timeoutMs,
    intervalMs: 100,
    message: what,
  });
  return found as T;
}

interface QueryResult {
  metric: Record<string, string>;
  value: [number, string];
}

describe.skipIf(!hasPrometheus)('prometheus output against a real Prometheus', () => {
  let dir: string;
  let child: ChildProcess;
  let base: string;
  let stderr = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vigie-prometheus-'));
    const config = join(dir, 'prometheus.yml');
    await writeFile(config, 'global:\n  scrape_interval: 1h\n');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(
      PROMETHEUS,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--web.enable-remote-write-receiver',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    await until(
      async () => ((await fetch(`${base}/-/ready`)).ok ? true : undefined),
      20_000,
      'Prometheus to be ready',
    ).catch((error: Error) => {
      throw new Error(`${error.message}; stderr: ${stderr}`);
    });
  });

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function query(promql: string): Promise<QueryResult[] | undefined> {
    const response = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await response.json()) as { data: { result: QueryResult[] } };
    return body.data.result.length > 0 ? body.data.result : undefined;
  }

  it('writes samples with labels that Prometheus stores and answers queries about', async () => {
    const drops: Partial<Record<DropReason, number>> = {};
    let sent = 0;
    const observer: OutputObserver = {
      sent: (_output, count) => {
        sent += count;
      },
      dropped: (_output, reason, count) => {
        drops[reason] = (drops[reason] ?? 0) + count;
      },
      failed: () => undefined,
    };
    const registry = buildOutputsFrom(
      { prom: { type: 'prometheus', url: `${base}/api/v1/write`, 'flush-interval': '50ms' } },
      observer,
    );
    const now = Date.now() * 1e6;
    registry.send('prom', [
      {
        service: 'vigie.test-latency',
        host: 'web-1',
        state: 'ok',
        metric: 0.25,
        time: now - 2e9,
        attributes: { 'http.method': 'GET', code: 200 },
      },
      {
        service: 'vigie.test-latency',
        host: 'web-1',
        state: 'ok',
        metric: 0.5,
        time: now - 1e9,
        attributes: { 'http.method': 'GET' },
      },
      { name: 'vigie_test_count', host: 'web-2', metric: 7, time: now, description: 'free text stays out' },
      { service: 'no_metric', host: 'web-3', metric: null, time: now },
      { host: 'nameless', metric: 1, time: now },
    ]);
    const latency = await until(() => query('vigie_test_latency'), 10_000, 'the latency series');
    expect(latency).toEqual([
      {
        metric: { __name__: 'vigie_test_latency', host: 'web-1', state: 'ok', http_method: 'GET' },
        value: [expect.any(Number), '0.5'],
      },
    ]);
    const count = await until(() => query('vigie_test_count'), 10_000, 'the count series');
    expect(count).toEqual([
      { metric: { __name__: 'vigie_test_count', host: 'web-2' }, value: [expect.any(Number), '7'] },
    ]);
    const history = await until(() => query('count_over_time(vigie_test_latency[1m])'), 10_000, 'the latency history');
    expect(history[0]?.value[1]).toBe('2');
    await registry.close(2000);
    expect(sent).toBe(3);
    expect(drops).toEqual({ unusable: 2 });
  });
});

describe('prometheus output mapping', () => {
  it('groups events by label set and orders samples by time', () => {
    const events: Event[] = [
      { service: 'm', host: 'a', metric: 2, time: 2e6 },
      { service: 'm', host: 'b', metric: 9, time: 1e6 },
      { service: 'm', host: 'a', metric: 1, time: 1e6 },
    ];
    expect(eventsToSeries(events)).toEqual([
      {
        labels: { __name__: 'm', host: 'a' },
        samples: [
          { value: 1, timestampMs: 1 },
          { value: 2, timestampMs: 2 },
        ],
      },
      { labels: { __name__: 'm', host: 'b' }, samples: [{ value: 9, timestampMs: 1 }] },
    ]);
  });

  it('prefers service to name, keeps name as a label then, and lets top-level fields win over attributes', () => {
    const [series] = eventsToSeries([
      { service: 's', name: 'n', host: 'top', metric: 1, time: 0, attributes: { host: 'attr', __x: 'reserved' } },
    ]);
    expect(series?.labels).toEqual({ __name__: 's', name: 'n', host: 'top' });
  });

  it('sanitises metric and label names', () => {
    expect(sanitiseMetricName('http.requests-total:rate')).toBe('http_requests_total:rate');
    expect(sanitiseMetricName('5xx')).toBe('_5xx');
    expect(sanitiseLabelName('trace-id')).toBe('trace_id');
    expect(sanitiseLabelName('a:b')).toBe('a_b');
  });
});
