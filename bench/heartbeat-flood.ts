/**
 * A flood of heartbeat failure reports (docs/hardening.md, "Heartbeat floods"): the real server with C heartbeat
 * checks (1 unless given) and the default settings (`write-delay: 30s`, `history-size: 100`), and N
 * `POST /api/v1/heartbeat/flood-<i>/fail` of 4 KiB each, round-robin over the checks, over 16 keep-alive connections,
 * while `/healthz` is called back to back, one at a time, during the flood and for the 32 s after it (the writes of
 * what the flood left). Figures: reports per second, `/healthz` p50/p99/max (the longest stall of the event loop shows
 * as the max), the server's RSS before, at its peak (VmHWM) and after, and the runs the check's 24 h uptime counts (all
 * N of them must be there).
 *
 * `node --import tsx bench/heartbeat-flood.ts [reports] [checks]`
 */
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';
import { percentile, round, startBenchServer, writeResult } from './http-load.ts';

const REPORTS = Number(process.argv[2] ?? 100_000);
const CHECKS = Number(process.argv[3] ?? 1);
const CONNECTIONS = 16;
const BODY = Buffer.from(`backup failed: ${'x'.repeat(4096 - 15)}`);

function memoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
}

const server = await startBenchServer({
  'heartbeat-checks': Array.from({ length: CHECKS }, (_, i) => ({ name: `flood-${i}`, interval: '1h' })),
});
try {
  const pid = server.process.pid as number;
  const before = memoryMb(pid);
  const latencies: number[] = [];
  let flooding = true;
  const probe = (async () => {
    let until = Infinity;
    while (performance.now() < until) {
      const started = performance.now();
      await (await server.request('/healthz')).text();
      latencies.push(performance.now() - started);
      if (!flooding && until === Infinity) until = performance.now() + 32_000;
    }
  })();
  const pool = new Pool(server.url, { connections: CONNECTIONS, pipelining: 1 });
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (sent < REPORTS) {
        const check = sent++ % CHECKS;
        const response = await pool.request({
          path: `/api/v1/heartbeat/flood-${check}/fail`,
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: BODY,
        });
        await response.body.dump();
        if (response.statusCode !== 200) throw new Error(`report answered ${response.statusCode}`);
      }
    }),
  );
  const floodSeconds = (performance.now() - started) / 1000;
  const afterFlood = memoryMb(pid);
  flooding = false;
  await probe;
  await pool.close();
  const after = memoryMb(pid);
  let runs = 0;
  for (let i = 0; i < CHECKS; i++) {
    const uptime = (await (await server.request(`/api/v1/result/flood-${i}/uptime`)).json()) as {
      uptime: { '24h': { runs: number } };
    };
    runs += uptime.uptime['24h'].runs;
  }
  latencies.sort((a, b) => a - b);
  writeResult('heartbeat-flood', {
    reports: REPORTS,
    checks: CHECKS,
    bodyBytes: BODY.length,
    reportsPerSecond: Math.round(REPORTS / floodSeconds),
    healthzCalls: latencies.length,
    healthzP50Ms: percentile(latencies, 0.5),
    healthzP99Ms: percentile(latencies, 0.99),
    healthzMaxMs: round(latencies.at(-1) ?? 0),
    rssMbBefore: before.rss,
    rssMbAfterFlood: afterFlood.rss,
    rssMbAfterWrites: after.rss,
    rssMbPeak: after.peak,
    uptimeRuns24h: runs,
  });
} finally {
  await server.stop();
}
