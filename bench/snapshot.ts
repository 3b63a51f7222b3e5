/**
 * Index snapshots under load (docs/hardening.md, "Snapshots that never block"): the real server with a
 * 1,000,000-entry index (ttl 3600), snapshot-interval 2s. `/healthz` is called back to back, one at a time,
 * while the first round writes the whole index and again while the next writes the 10 % of the entries that
 * changed. Figures: `/healthz` p50/p99/max during each round, the round's duration (from
 * `stream_snapshot_duration_seconds`), the longest slice bucket, and the server's RSS. Floor: p99 under 50 ms.
 *
 * `node --import tsx bench/snapshot.ts [entries]`
 */
import { createStream, percentile, round, startBenchServer, writeResult } from './http-load.ts';
import type { TestServer } from '../test/helpers/server.ts';

const ENTRIES = Number(process.argv[2] ?? 1_000_000);
const BATCH = 20_000;
const FLOOR_P99_MS = 50;

async function pushHosts(server: TestServer, count: number, metric: number): Promise<void> {
  const time = 1_700_000_000_000_000_000 + metric * 1_000_000_000;
  for (let offset = 0; offset < count; offset += BATCH) {
    const events = Array.from({ length: Math.min(BATCH, count - offset) }, (_, i) => ({
      host: `host-${offset + i}.example.net`,
      service: 'cpu',
      metric,
      time,
      ttl: 3_600,
    }));
    const response = await server.request('/api/v1/stream/bench', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    if (response.status !== 200) throw new Error(`push failed: ${response.status} ${await response.text()}`);
  }
}

/** Reads samples of the Prometheus text exposition by exact series name (and labels). */
async function scrape(server: TestServer): Promise<Map<string, number>> {
  const text = await (await server.request('/metrics')).text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

/** Calls `/healthz` back to back until `rounds` snapshot rounds have ended; returns the latencies and the metrics. */
async function healthzUntilRound(
  server: TestServer,
  rounds: number,
): Promise<{ latencies: number[]; samples: Map<string, number> }> {
  const latencies: number[] = [];
  let lastCheck = performance.now();
  for (;;) {
    const started = performance.now();
    const response = await server.request('/healthz');
    await response.text();
    latencies.push(performance.now() - started);
    if (performance.now() - lastCheck > 250) {
      lastCheck = performance.now();
      const samples = await scrape(server);
      if ((samples.get('stream_snapshot_duration_seconds_count') ?? 0) >= rounds)
        return { latencies: latencies.sort((a, b) => a - b), samples };
    }
  }
}

/** The upper bound of the first bucket holding every observation of a histogram. */
function longest(samples: Map<string, number>, histogram: string): string {
  const count = samples.get(`${histogram}_count`) ?? 0;
  const buckets = [...samples].filter(([name]) => name.startsWith(`${histogram}_bucket{`));
  const first = buckets.find(([, value]) => value >= count);
  return first ? (/le="([^"]+)"/.exec(first[0])?.[1] ?? '?') : '?';
}

// Loaded with snapshots off (1h), then SIGHUP sets 2s: the first round then writes the whole index.
const streams = { 'snapshot-interval': '1h', 'max-index-entries': ENTRIES + 1_000 };
const server = await startBenchServer({ streams });
try {
  await createStream(server, 'bench', '{:actions {:action :index :params [[:host :service]]}}');
  let started = performance.now();
  await pushHosts(server, ENTRIES, 1);
  const pushSeconds = (performance.now() - started) / 1000;
  // Baseline: the same calls with the index loaded and no snapshot running (GC and a shared CPU show here too).
  const idle: number[] = [];
  const idleUntil = performance.now() + 3_000;
  while (performance.now() < idleUntil) {
    const called = performance.now();
    await (await server.request('/healthz')).text();
    idle.push(performance.now() - called);
  }
  idle.sort((a, b) => a - b);
  const before = await scrape(server);
  const roundsBefore = before.get('stream_snapshot_duration_seconds_count') ?? 0;
  server.writeConfig({ http: { 'body-limit': 64 * 1024 * 1024 }, streams: { ...streams, 'snapshot-interval': '2s' } });
  server.process.kill('SIGHUP');

  // The round that writes the whole index.
  const full = await healthzUntilRound(server, roundsBefore + 1);
  const fullSeconds =
    (full.samples.get('stream_snapshot_duration_seconds_sum') ?? 0) -
    (before.get('stream_snapshot_duration_seconds_sum') ?? 0);
  const rssAfterFull = full.samples.get('process_resident_memory_bytes') ?? 0;

  started = performance.now();
  const mid = await scrape(server);
  await pushHosts(server, ENTRIES / 10, 2);
  const changePushSeconds = (performance.now() - started) / 1000;
  const roundsMid = (await scrape(server)).get('stream_snapshot_duration_seconds_count') ?? 0;
  // A round may be under way with part of the change: wait for the one after it, which holds the rest.
  const incremental = await healthzUntilRound(server, roundsMid + 2);
  const incrementalSeconds =
    (incremental.samples.get('stream_snapshot_duration_seconds_sum') ?? 0) -
    (mid.get('stream_snapshot_duration_seconds_sum') ?? 0);
  const upserts = (samples: Map<string, number>) =>
    samples.get('stream_snapshot_entries_total{operation="upsert"}') ?? 0;

  const p99Ms = Math.max(percentile(full.latencies, 0.99), percentile(incremental.latencies, 0.99));
  const healthz = (sorted: number[]) => ({
    healthzCalls: sorted.length,
    healthzP50Ms: percentile(sorted, 0.5),
    healthzP99Ms: percentile(sorted, 0.99),
    healthzMaxMs: round(sorted.at(-1) ?? 0),
  });
  writeResult('snapshot', {
    entries: ENTRIES,
    pushSeconds: round(pushSeconds),
    idle: healthz(idle),
    full: {
      entriesWritten: upserts(full.samples) - upserts(before),
      roundSeconds: round(fullSeconds),
      ...healthz(full.latencies),
    },
    changed: {
      entries: ENTRIES / 10,
      pushSeconds: round(changePushSeconds),
      entriesWritten: upserts(incremental.samples) - upserts(mid),
      roundsSeconds: round(incrementalSeconds),
      ...healthz(incremental.latencies),
    },
    longestSliceAtMostSeconds: longest(incremental.samples, 'stream_snapshot_slice_seconds'),
    rssMbAfterFullSnapshot: Math.round(rssAfterFull / 1e6),
    rssMb: Math.round((incremental.samples.get('process_resident_memory_bytes') ?? 0) / 1e6),
    floorP99Ms: FLOOR_P99_MS,
    pass: p99Ms < FLOOR_P99_MS,
  });
} finally {
  await server.stop();
}
