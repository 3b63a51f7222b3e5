/**
 * Checkpoints of action state under load (docs/durability.md, "Checkpoints"): the real server with one stream
 * `by [:host] -> fixed-time-window` holding 100,000 forks, each with an open window of two events. Snapshots are
 * off (1h) while it fills, then SIGHUP sets 2s: the first round writes every fork, the next ones only the 10 %
 * that changed. `/healthz` is called back to back, one at a time, during each. Then the process is stopped and
 * started again, and the restore is timed (its log line, and the start until it serves). Floor: `/healthz` p99
 * under 50 ms during the rounds.
 *
 * `node --import tsx bench/state-checkpoint.ts [forks]`
 */
import { createStream, percentile, round, startBenchServer, writeResult } from './http-load.ts';
import { startServer, type TestServer } from '../test/helpers/server.ts';

const FORKS = Number(process.argv[2] ?? 100_000);
const BATCH = 20_000;
const FLOOR_P99_MS = 50;
const STREAM =
  '{:actions {:action :by :params [{:fields [:host]}] :children [{:action :fixed-time-window :params [{:duration "1h"}]}]}}';

async function pushHosts(server: TestServer, count: number, second: number): Promise<void> {
  const time = 1_700_000_000_000_000_000 + second * 1_000_000_000;
  for (let offset = 0; offset < count; offset += BATCH) {
    const events = Array.from({ length: Math.min(BATCH, count - offset) }, (_, i) => ({
      host: `host-${offset + i}.example.net`,
      service: 'cpu',
      metric: i % 100,
      time,
    }));
    const response = await server.request('/api/v1/stream/bench', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    if (response.status !== 200) throw new Error(`push failed: ${response.status} ${await response.text()}`);
  }
}

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

/** Calls `/healthz` back to back until the metrics say `done`; returns the latencies and the last metrics. */
async function healthzUntil(
  server: TestServer,
  done: (samples: Map<string, number>) => boolean,
): Promise<{ latencies: number[]; samples: Map<string, number> }> {
  const latencies: number[] = [];
  let lastCheck = performance.now();
  for (;;) {
    const started = performance.now();
    await (await server.request('/healthz')).text();
    latencies.push(performance.now() - started);
    if (performance.now() - lastCheck > 250) {
      lastCheck = performance.now();
      const samples = await scrape(server);
      if (done(samples)) return { latencies: latencies.sort((a, b) => a - b), samples };
    }
  }
}

const healthz = (sorted: number[]) => ({
  healthzCalls: sorted.length,
  healthzP50Ms: percentile(sorted, 0.5),
  healthzP99Ms: percentile(sorted, 0.99),
  healthzMaxMs: round(sorted.at(-1) ?? 0),
});

const streams = { 'snapshot-interval': '1h', 'max-forks': FORKS + 1_000 };
const config = { http: { 'body-limit': 64 * 1024 * 1024 }, streams };
const server = await startBenchServer({ streams });
let dataDir = server.dataDir;
let restarted: TestServer | null = null;
try {
  await createStream(server, 'bench', STREAM);
  await pushHosts(server, FORKS, 1);
  await pushHosts(server, FORKS, 2);
  const before = await scrape(server);
  const roundsBefore = before.get('stream_snapshot_duration_seconds_count') ?? 0;
  const rowsBefore = before.get('stream_checkpoint_state_rows_total') ?? 0;
  server.writeConfig({ ...config, streams: { ...streams, 'snapshot-interval': '2s' } });
  server.process.kill('SIGHUP');
  const rounds = (samples: Map<string, number>) => samples.get('stream_snapshot_duration_seconds_count') ?? 0;
  const rows = (samples: Map<string, number>) => samples.get('stream_checkpoint_state_rows_total') ?? 0;
  const full = await healthzUntil(server, (samples) => rounds(samples) >= roundsBefore + 1);
  const fullSeconds =
    (full.samples.get('stream_snapshot_duration_seconds_sum') ?? 0) -
    (before.get('stream_snapshot_duration_seconds_sum') ?? 0);
  const fullRows = (full.samples.get('stream_checkpoint_state_rows_total') ?? 0) - rowsBefore;

  const mid = await scrape(server);
  await pushHosts(server, FORKS / 10, 3);
  // Rounds under way during the push hold part of the change; the one that ends with every changed fork written is
  // last.
  const changed = await healthzUntil(
    server,
    (samples) => rows(samples) - rows(mid) >= FORKS / 10 && rounds(samples) > rounds(mid),
  );
  const changedRows =
    (changed.samples.get('stream_checkpoint_state_rows_total') ?? 0) -
    (mid.get('stream_checkpoint_state_rows_total') ?? 0);
  const changedSeconds =
    (changed.samples.get('stream_snapshot_duration_seconds_sum') ?? 0) -
    (mid.get('stream_snapshot_duration_seconds_sum') ?? 0);
  const rssMb = Math.round((changed.samples.get('process_resident_memory_bytes') ?? 0) / 1e6);

  const stopStarted = performance.now();
  await server.stop();
  const stopSeconds = (performance.now() - stopStarted) / 1000;
  dataDir = server.dataDir;
  const startStarted = performance.now();
  restarted = await startServer({ dataDir, config, asService: true });
  const startSeconds = (performance.now() - startStarted) / 1000;
  const restoredLine = JSON.parse(await restarted.waitForLog(/action states restored/)) as {
    units: number;
    forks: number;
    ms: number;
  };

  const p99Ms = Math.max(percentile(full.latencies, 0.99), percentile(changed.latencies, 0.99));
  writeResult('state-checkpoint', {
    forks: FORKS,
    full: { rows: fullRows, roundSeconds: round(fullSeconds), ...healthz(full.latencies) },
    changed: {
      forks: FORKS / 10,
      rows: changedRows,
      roundsSeconds: round(changedSeconds),
      ...healthz(changed.latencies),
    },
    stopSeconds: round(stopSeconds),
    restore: { forks: restoredLine.forks, ms: restoredLine.ms, startToServingSeconds: round(startSeconds) },
    rssMb,
    floorP99Ms: FLOOR_P99_MS,
    pass: p99Ms < FLOOR_P99_MS && restoredLine.forks === FORKS,
  });
} finally {
  await restarted?.stop();
  await server.stop();
}
