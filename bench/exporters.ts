/**
 * `exporters` benchmark: 10,000 TCP + 2,000 HTTP checks at a 10 s interval (as `checks`), run twice with the same
 * config, once without exporters and once with all three (docs/alerting.md): HTTP to a collector that answers
 * each request in 2 s, Riemann to a local Riemann-protocol server (protobufjs, test/helpers/riemann-server.ts),
 * and the results into a stream with an index. Each run measures, over the same window after a warm-up:
 * the scheduling lag p50/p99 (`healthcheck_scheduling_lag_seconds`), the service's CPU seconds (/proc/<pid>/stat),
 * its peak RSS, and with exporters their queue, sent, dropped and failure counters and what the destinations
 * received. Pass: the p99 lag with exporters within 10 % of the one without.
 *
 * The HTTP exporter's batches are sized for a slow collector (one request in flight, 2 s each: 5,000 results a
 * batch carry 2,500 results/s, twice the 1,200 results/s of this load); Riemann and stream keep the defaults.
 * The machine may be shared: the load average at the start and end of each run is recorded with the figures.
 *
 * `node --import tsx bench/exporters.ts` (`BENCH_EXPORTERS_SECONDS` changes the 60 s window,
 * `BENCH_EXPORTERS_CHECKS` the 12,000 checks).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { type RiemannServer, startRiemannServer } from '../test/helpers/riemann-server.ts';
import { makeDataDir, startServer, type TestServer } from '../test/helpers/server.ts';
import {
  checksPayload,
  cpuSeconds,
  parseMetrics,
  percentile,
  rssMb,
  startTargets,
  type Targets,
} from './check-load.ts';

/** `BENCH_EXPORTERS_CHECKS` runs fewer (or more) checks, five TCP for one HTTP. */
const CHECKS = Number(process.env.BENCH_EXPORTERS_CHECKS ?? 12_000);
const HTTP_CHECKS = Math.round(CHECKS / 6);
const TCP_CHECKS = CHECKS - HTTP_CHECKS;
const WARMUP_S = 15;
const WINDOW_S = Number(process.env.BENCH_EXPORTERS_SECONDS ?? 60);
const COLLECTOR_DELAY_MS = 2_000;
const HTTP_BATCH_SIZE = 5_000;
const LAG_MARGIN = 0.1;
const STREAM = 'checks';

interface RunFigures {
  lag_p50_ms: number;
  lag_p99_ms: number;
  runs: number;
  failed_runs: number;
  cpu_seconds_window: number;
  cpu_percent_of_one_core: number;
  cpu_seconds_total: number;
  peak_rss_mb: number;
  load_average_start: number[];
  load_average_end: number[];
  /** `exporter_*` series at the end of the window (name{labels} -> value). */
  exporter_metrics?: Record<string, number>;
  /** Every `exporter_dropped_total` series summed (a series appears only once something was dropped). */
  exporter_dropped?: number;
  stream_events?: number;
  riemann_events_received?: number;
}

const round = (value: number, digits = 2) => Number(value.toFixed(digits));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const loads = () => loadavg().map((load) => round(load));

function exporterSeries(text: string): Record<string, number> {
  const series: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (/^exporter_(sent_total|dropped_total|failures_total|queue_size)\{/.test(line)) {
      const space = line.lastIndexOf(' ');
      series[line.slice(0, space)] = Number(line.slice(space + 1));
    }
  }
  return series;
}

function metricValue(text: string, series: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** One run: a fresh server with the same stream, `exporters` or none, measured over the window after a warm-up. */
async function runOnce(
  label: string,
  targets: Targets,
  exporters: Record<string, unknown> | null,
  riemann: RiemannServer | null,
): Promise<RunFigures> {
  const dataDir = makeDataDir();
  mkdirSync(join(dataDir, 'streams'));
  // The same stream in both runs, so that the exporters are the only difference.
  writeFileSync(
    join(dataDir, 'streams', 'checks.edn'),
    `{:${STREAM} {:actions {:action :index :params [[:healthcheck]]}}}`,
  );
  let server: TestServer | undefined;
  try {
    server = await startServer({
      dataDir,
      config: { healthchecks: { 'max-concurrent-runs': 1000 }, ...(exporters ? { exporters } : {}) },
      env: { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS ?? '' },
    });
    const pid = server.process.pid as number;
    const response = await server.request('/api/v1/healthcheck/bulk', {
      method: 'POST',
      body: JSON.stringify(checksPayload(targets, TCP_CHECKS, HTTP_CHECKS)),
      headers: { 'content-type': 'application/json' },
    });
    if (response.status !== 201) throw new Error(`bulk create failed: ${response.status} ${await response.text()}`);
    console.log(`${label}: ${TCP_CHECKS + HTTP_CHECKS} checks created, ${WARMUP_S}s warm-up, ${WINDOW_S}s window`);
    await sleep(WARMUP_S * 1000);

    const loadStart = loads();
    const before = parseMetrics(await (await server.request('/metrics')).text());
    const cpuStart = cpuSeconds(pid);
    const windowStart = performance.now();
    let peakRss = rssMb(pid);
    let riemannEvents = 0;
    while (performance.now() - windowStart < WINDOW_S * 1000) {
      await sleep(1000);
      peakRss = Math.max(peakRss, rssMb(pid));
      if (riemann) {
        riemannEvents += riemann.events.length;
        riemann.events.length = 0;
      }
    }
    const cpuWindow = cpuSeconds(pid) - cpuStart;
    const elapsedS = (performance.now() - windowStart) / 1000;
    const text = await (await server.request('/metrics')).text();
    const after = parseMetrics(text);
    const figures: RunFigures = {
      lag_p50_ms: round((percentile(before, after, 0.5) ?? Number.NaN) * 1000),
      lag_p99_ms: round((percentile(before, after, 0.99) ?? Number.NaN) * 1000),
      runs: after.success + after.failure - before.success - before.failure,
      failed_runs: after.failure - before.failure,
      cpu_seconds_window: round(cpuWindow),
      cpu_percent_of_one_core: round((cpuWindow / elapsedS) * 100, 1),
      cpu_seconds_total: round(cpuSeconds(pid)),
      peak_rss_mb: Math.round(peakRss),
      load_average_start: loadStart,
      load_average_end: loads(),
    };
    if (exporters) {
      figures.exporter_metrics = exporterSeries(text);
      figures.exporter_dropped = Object.entries(figures.exporter_metrics)
        .filter(([series]) => series.startsWith('exporter_dropped_total{'))
        .reduce((sum, [, value]) => sum + value, 0);
      figures.stream_events = metricValue(text, `stream_events_total{name="${STREAM}"}`);
      figures.riemann_events_received = riemannEvents;
    }
    console.log(label, JSON.stringify(figures));
    return figures;
  } finally {
    await server?.stop();
  }
}

async function main(): Promise<void> {
  console.log(`exporters: ${cpus().length} cores, load average ${loads().join(' ')}`);
  const targets = await startTargets({ collectorDelayMs: COLLECTOR_DELAY_MS, keepAliveTimeoutMs: 20_000 });
  const riemann = await startRiemannServer();
  try {
    const without = await runOnce('without exporters', targets, null, null);
    const exporters = {
      http: [
        {
          name: 'collector',
          host: '127.0.0.1',
          port: targets.collectorPort,
          path: '/results',
          'batch-size': HTTP_BATCH_SIZE,
        },
      ],
      riemann: [{ name: 'riemann', host: '127.0.0.1', port: riemann.port }],
      stream: [{ name: 'stream', stream: STREAM }],
    };
    const withExporters = await runOnce('with exporters', targets, exporters, riemann);
    const lagRatio = without.lag_p99_ms === 0 ? 1 : withExporters.lag_p99_ms / without.lag_p99_ms;
    const result = {
      cores: cpus().length,
      checks: TCP_CHECKS + HTTP_CHECKS,
      interval_s: 10,
      warmup_s: WARMUP_S,
      window_s: WINDOW_S,
      collector_delay_ms: COLLECTOR_DELAY_MS,
      http_batch_size: HTTP_BATCH_SIZE,
      without_exporters: without,
      with_exporters: withExporters,
      lag_p99_ratio: round(lagRatio, 3),
      exporters_cpu_seconds: round(withExporters.cpu_seconds_window - without.cpu_seconds_window),
      exporters_cpu_percent_of_one_core: round(
        withExporters.cpu_percent_of_one_core - without.cpu_percent_of_one_core,
        1,
      ),
      floors: { lag_p99_ratio: 1 + LAG_MARGIN, failed_runs: 0 },
    };
    const pass = lagRatio <= 1 + LAG_MARGIN && without.failed_runs === 0 && withExporters.failed_runs === 0;
    mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
    writeFileSync(join(import.meta.dirname, 'results', 'exporters.json'), `${JSON.stringify({ ...result, pass })}\n`);
    console.log(JSON.stringify({ ...result, pass }, null, 2));
    process.exitCode = pass ? 0 : 1;
  } finally {
    await riemann.close();
    targets.process.kill('SIGKILL');
  }
}

await main();
