/**
 * A status page of 500 checks with 90 days of history (docs/status-pages.md, "Scale"): 500 TCP checks created
 * through the bulk API, 90 daily aggregates each written into SQLite, one page of 10 groups by label, another
 * of the same checks as entries with their own names and descriptions and the page's branding, an open incident
 * and a maintenance window. Figures: the server's CPU time per page (from /proc, so that other load on the
 * machine does not count), the wall time of a request, the size of the page plain and compressed as a browser
 * asks, and the same for summary.json. Floor: a page renders in under 100 ms of server time, compressed or not, by
 * labels or by entries.
 *
 * `npm run bench -- status-page`
 */
import { readFileSync } from 'node:fs';
import { createManyChecks } from '../test/helpers/many-checks.ts';
import { startTcpTarget } from '../test/helpers/targets.ts';
import { seedDailyUptime } from '../test/helpers/uptime.ts';
import { startBenchServer, writeResult } from './http-load.ts';

const CHECKS = 500;
const DAYS = 90;
const ROUNDS = 30;
const FLOOR_SERVER_MS = 100;

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const post = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

// What a render costs: the cache of public answers (healthchecks.status-page-cache) would serve all but the first.
const [server, tcp] = await Promise.all([
  startBenchServer({ healthchecks: { 'status-page-cache': '0s' } }),
  startTcpTarget(),
]);
try {
  await createManyChecks(server, tcp.port, CHECKS);
  const names = Array.from({ length: CHECKS }, (_, i) => `check-${String(i).padStart(5, '0')}`);
  seedDailyUptime(
    server.dataDir,
    names.flatMap((name, n) =>
      Array.from({ length: DAYS - 1 }, (_, day) => ({
        name,
        daysAgo: day + 1,
        runs: 1440,
        successes: (n + day) % 13 === 0 ? 1400 : 1440,
      })),
    ),
  );
  const groups = Array.from({ length: 10 }, (_, shard) => ({
    name: `Shard ${shard}`,
    labels: { shard: String(shard) },
  }));
  for (const [path, body] of [
    ['/api/v1/status-page', { slug: 'bench', title: 'Bench', description: `${CHECKS} checks`, groups }],
    [
      '/api/v1/status-page',
      {
        slug: 'named',
        title: 'Named',
        'accent-color': '#0b3d91',
        footer: 'Questions? [Contact us](https://example.com/contact).',
        homepage: 'https://example.com/',
        groups: Array.from({ length: 10 }, (_, shard) => ({
          name: `Shard ${shard}`,
          checks: names
            .slice(shard * 50, shard * 50 + 50)
            .map((check, i) => ({ check, name: `Service ${shard}.${i}`, description: `What service ${i} does.` })),
        })),
      },
    ],
    [
      '/api/v1/maintenance',
      {
        name: 'weekly',
        start: new Date(Date.now() - 20 * 86_400_000).toISOString(),
        duration: '2h',
        every: '168h',
        labels: { shard: '3' },
      },
    ],
    ['/api/v1/incident', { title: 'Shard 7 slow', status: 'monitoring', message: 'A fix is out.', pages: ['bench'] }],
  ] as const) {
    const response = await server.request(path, post(body));
    if (response.status !== 201) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  }
  const pid = server.process.pid as number;
  const measure = async (path: string, headers: Record<string, string>) => {
    // One request first: the statements are prepared, the code is compiled.
    await (await server.request(path, { headers })).arrayBuffer();
    const walls: number[] = [];
    let bytes = 0;
    const before = cpuMs(pid);
    for (let i = 0; i < ROUNDS; i++) {
      const started = performance.now();
      const response = await server.request(path, { headers });
      bytes = (await response.arrayBuffer()).byteLength;
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}`);
      walls.push(performance.now() - started);
    }
    walls.sort((a, b) => a - b);
    return {
      serverMs: Math.round((cpuMs(pid) - before) / ROUNDS),
      p50Ms: Math.round(walls[Math.floor(ROUNDS / 2)] ?? 0),
      maxMs: Math.round(walls.at(-1) ?? 0),
      bytes,
    };
  };
  // undici's fetch decompresses: the bytes counted are what it received only when it is asked for nothing.
  const page = await measure('/status/bench', { 'accept-encoding': 'identity' });
  const pageBrotli = await measure('/status/bench', { 'accept-encoding': 'br, gzip' });
  const compressed = await fetch(`${server.url}/status/bench`, { headers: { 'accept-encoding': 'br' } });
  const summary = await measure('/status/bench/summary.json', { 'accept-encoding': 'identity' });
  const named = await measure('/status/named', { 'accept-encoding': 'identity' });
  writeResult('status-page', {
    checks: CHECKS,
    days: DAYS,
    rounds: ROUNDS,
    page,
    pageBrotli: { ...pageBrotli, encoding: compressed.headers.get('content-encoding') },
    summary,
    named,
    floors: { serverMs: FLOOR_SERVER_MS },
    pass: [page, pageBrotli, summary, named].every((one) => one.serverMs < FLOOR_SERVER_MS),
  });
} finally {
  await Promise.all([server.stop(), tcp.close()]);
}
