/**
 * `checks` benchmark: 10,000 TCP + 2,000 HTTP checks at a 10 s interval against local targets, for 60 s after
 * they are created through the bulk API. Reports the p99 lag between a run's due time and its start (from the
 * `healthcheck_scheduling_lag_seconds` histogram), the share of failed runs, the CPU % of one core used by the
 * service over the window (/proc/<pid>/stat), its peak RSS and the database size.
 *
 * The targets run in a child process of their own (check-load.ts) so that they do not share the service's CPU
 * accounting.
 * `BENCH_CHECKS_SECONDS` lengthens the window (e.g. 600 to see the database after 10 minutes).
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startServer } from '../test/helpers/server.ts';
import { checksPayload, cpuSeconds, parseMetrics, percentile, rssMb, startTargets } from './check-load.ts';

const TCP_CHECKS = 10_000;
const HTTP_CHECKS = 2_000;
const WINDOW_S = Number(process.env.BENCH_CHECKS_SECONDS ?? 60);

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

async function main(): Promise<void> {
  console.log(`checks: ${cpus().length} cores, ${TCP_CHECKS} TCP + ${HTTP_CHECKS} HTTP checks at 10s, ${WINDOW_S}s window`);
  const targets = await startTargets();
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    server = await startServer({ config: { healthchecks: { 'max-concurrent-runs': 1000 } }, env: { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS ?? '' } });
    const pid = server.process.pid as number;
    const payload = checksPayload(targets, TCP_CHECKS, HTTP_CHECKS);
    const createdAt = performance.now();
    const response = await server.request('/api/v1/healthcheck/bulk', { method: 'POST', body: JSON.stringify(payload), headers: { 'content-type': 'application/json' } });
    if (response.status !== 201) throw new Error(`bulk create failed: ${response.status} ${await response.text()}`);
    const bulkMs = performance.now() - createdAt;
    console.log(`created ${TCP_CHECKS + HTTP_CHECKS} checks in ${bulkMs.toFixed(0)} ms`);

    const before = parseMetrics(await (await server.request('/metrics')).text());
    const cpuStart = cpuSeconds(pid);
    const windowStart = performance.now();
    const rssSamples = [Math.round(rssMb(pid))];
    while (performance.now() - windowStart < WINDOW_S * 1000) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      rssSamples.push(Math.round(rssMb(pid)));
    }
    const peakRss = Math.max(...rssSamples);
    const cpuPercent = ((cpuSeconds(pid) - cpuStart) / ((performance.now() - windowStart) / 1000)) * 100;
    const after = parseMetrics(await (await server.request('/metrics')).text());

    const runs = after.success + after.failure;
    const dbFile = join(server.dataDir, 'vigie.db');
    const db = new Database(dbFile, { readonly: true });
    const rows = (table: string) => (db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
    const tableRows = { healthcheck_results: rows('healthcheck_results'), healthcheck_history: rows('healthcheck_history'), healthcheck_uptime: rows('healthcheck_uptime') };
    db.close();
    const figures = {
      cores: cpus().length,
      checks: TCP_CHECKS + HTTP_CHECKS,
      window_s: WINDOW_S,
      bulk_create_ms: Math.round(bulkMs),
      runs,
      failed_runs: after.failure,
      failed_share: runs === 0 ? 0 : after.failure / runs,
      lag_p50_ms: Number((percentile(before, after, 0.5) * 1000).toFixed(2)),
      lag_p99_ms: Number((percentile(before, after, 0.99) * 1000).toFixed(2)),
      cpu_percent_of_one_core: Number(cpuPercent.toFixed(1)),
      peak_rss_mb: Math.round(peakRss),
      rss_mb_every_5s: rssSamples.filter((_, i) => i % 5 === 0),
      database_mb: Number(((fileSize(dbFile) + fileSize(`${dbFile}-wal`)) / 1e6).toFixed(1)),
      table_rows: tableRows,
      floors: { failed_runs: 0, lag_p99_ms: 100, cpu_percent_of_one_core: 25, peak_rss_mb: 250 },
    };
    const pass = figures.failed_runs === 0 && figures.lag_p99_ms <= 100 && figures.cpu_percent_of_one_core <= 25 && figures.peak_rss_mb <= 250;
    mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
    // A longer window writes its own file so the 60 s figures of `npm run bench` stay as they are.
    const resultName = WINDOW_S === 60 ? 'checks' : `checks-${WINDOW_S}s`;
    writeFileSync(join(import.meta.dirname, 'results', `${resultName}.json`), `${JSON.stringify({ ...figures, pass })}\n`);
    console.log(JSON.stringify({ ...figures, pass }, null, 2));
    process.exitCode = pass ? 0 : 1;
  } finally {
    await server?.stop();
    targets.process.kill('SIGKILL');
  }
}

await main();
