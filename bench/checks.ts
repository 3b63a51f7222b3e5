/**
 * `checks` benchmark: 10,000 TCP + 2,000 HTTP checks at `interval: 10s`, `timeout: 5s`, written in one YAML
 * file, against local targets that run in a process of their own (20 TCP listeners, so that 1,000 connections
 * a second never run short of 4-tuples, and one HTTP server with Node's default keep-alive timeout).
 *
 * Method: the service starts on the file; after a 20 s warm-up (`--warmup`), CPU = utime + stime of the service process from
 * /proc/<pid>/stat over the window (60 s, or `--minutes N`), RSS from /proc/<pid>/status every second (reported
 * every 5 s, its peak, its steady value = the median of the second half, and whether the peak stays within 15 %
 * of it), the runs and failed runs over the window (healthcheck_total), and the p99 lag between a run's due
 * time and its start (healthcheck_scheduling_lag_seconds).
 *
 *   node --import tsx bench/checks.ts                          60 s window, bench/results/checks.json
 *   node --import tsx bench/checks.ts --minutes 10             10 min window, bench/results/checks-600s.json
 *   node --import tsx bench/checks.ts --peer /path/cabourotte  then the same YAML against Cabourotte, and the ratios
 *   node --import tsx bench/checks.ts --node-flags='--max-semi-space-size=1'   extra node flags for the service
 *   node --import tsx bench/checks.ts --tcp 1000 --http 200   a small deployment, bench/results/checks-1000tcp-200http.json
 *   node --import tsx bench/checks.ts --warmup 180             a longer warm-up (20 s by default): V8 is still optimizing a
 *                                                              small deployment's functions for its first ~3 minutes
 *   node --import tsx bench/checks.ts --tcp 0 --http 0 --grpc 2000   one of the newer kinds alone (also --websocket,
 *                                                              --smtp, --domain, --icmp): bench/results/checks-0tcp-0http-2000grpc.json;
 *                                                              `cpu_us_per_run` compares a kind's cost with TCP's
 *   node --import tsx bench/checks.ts --cpu-prof DIR           the service runs under `node --cpu-prof`; the
 *                                                              window's breakdown by component (bench/profile.ts)
 *   node --import tsx bench/checks.ts --scrape 15              each service's /metrics is read every 15 s from its
 *                                                              start, as a Prometheus would (none by default):
 *                                                              bench/results/checks-...-scrape15s.json
 *   node --import tsx bench/checks.ts --peer ... --together    both services run and are measured at the same time,
 *                                                              on the same targets, each on its own API port:
 *                                                              bench/results/checks-...-together.json. Run one after
 *                                                              the other, each meets the machine in another state,
 *                                                              and a small deployment's ratio moves by a third from
 *                                                              run to run (docs/performance.md). A process of the same
 *                                                              checks (bench/node-floor.mjs) starts before them and is
 *                                                              not measured: on this machine the process started first
 *                                                              spends more CPU than the same build started after it
 *   node --import tsx bench/checks.ts --peer ... --together --floor   bench/node-floor.mjs at the same time too: the
 *                                                              same checks run by Node with nothing kept
 *
 * A `--peer` path that does not exist is skipped with a note. Cabourotte has no lag metric: its lag is not given.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { freePort } from '../test/helpers/ports.ts';
import { ensureBundle, readLines, serviceCommand, serviceEnv, serviceNodeFlags } from '../test/helpers/server.ts';
import {
  cpuSeconds,
  parseMetrics,
  percentile,
  rssMb,
  type Scrape,
  startTargets,
  type Targets,
  threadCpuSeconds,
  threadCpuShares,
} from './check-load.ts';
import { profileBreakdown } from './profile.ts';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string' },
    /** Seconds between the start and the window (20 by default). V8 optimizes a small deployment's hot functions
     *  over its first three minutes, and compiling them costs CPU meanwhile: `--warmup 180` measures after that. */
    warmup: { type: 'string', default: '20' },
    peer: { type: 'string' },
    'cpu-prof': { type: 'string' },
    /** Extra `node` flags for the service, e.g. `--node-flags=--max-semi-space-size=4` to compare heap settings. */
    'node-flags': { type: 'string' },
    /** The workload's size: `--tcp 1000 --http 200` is a small deployment (docs/performance.md). */
    tcp: { type: 'string', default: '10000' },
    http: { type: 'string', default: '2000' },
    /** The newer kinds, each against one local server (0 by default: `npm run bench` is unchanged). */
    websocket: { type: 'string', default: '0' },
    grpc: { type: 'string', default: '0' },
    smtp: { type: 'string', default: '0' },
    domain: { type: 'string', default: '0' },
    /** Pings 127.0.0.1: needs root, CAP_NET_RAW or ping_group_range. */
    icmp: { type: 'string', default: '0' },
    /** Seconds between two reads of each service's /metrics, warm-up and window included; none by default. A
     *  deployment is scraped, and a scrape costs both services CPU (docs/performance.md). */
    scrape: { type: 'string' },
    /** With `--peer`: both services at once rather than one after the other. */
    together: { type: 'boolean', default: false },
    /** With `--together`: bench/node-floor.mjs too, at the same time (the least Node does for these checks). */
    floor: { type: 'boolean', default: false },
  },
});
const TCP_CHECKS = Number(args.tcp);
const HTTP_CHECKS = Number(args.http);
const NEW_KINDS = {
  websocket: Number(args.websocket),
  grpc: Number(args.grpc),
  smtp: Number(args.smtp),
  domain: Number(args.domain),
  icmp: Number(args.icmp),
};
for (const [flag, value] of [
  ['--tcp', TCP_CHECKS],
  ['--http', HTTP_CHECKS],
  ...Object.entries(NEW_KINDS).map(([kind, n]) => [`--${kind}`, n] as const),
] as const) {
  if (!Number.isInteger(value) || value < 0) throw new Error(`${flag}: must be a whole number of checks, got ${value}`);
}
const NEW_KIND_CHECKS = Object.values(NEW_KINDS).reduce((sum, n) => sum + n, 0);
const DEFAULT_SIZE = TCP_CHECKS === 10_000 && HTTP_CHECKS === 2_000 && NEW_KIND_CHECKS === 0;
const WARMUP_S = Number(args.warmup);
if (!Number.isFinite(WARMUP_S) || WARMUP_S < 0)
  throw new Error(`--warmup: must be a number of seconds, got ${args.warmup}`);
const WINDOW_S = args.minutes !== undefined ? Math.round(Number(args.minutes) * 60) : 60;
if (!Number.isFinite(WINDOW_S) || WINDOW_S <= 0)
  throw new Error(`--minutes: must be a positive number, got ${args.minutes}`);
const TOGETHER = args.together === true;
const FLOOR = args.floor === true;
if (FLOOR && (!TOGETHER || args.peer === undefined))
  throw new Error('--floor: runs beside both services, so it needs --peer and --together');
const SCRAPE_S = args.scrape !== undefined ? Number(args.scrape) : 0;
if (!Number.isFinite(SCRAPE_S) || SCRAPE_S < 0)
  throw new Error(`--scrape: must be a number of seconds, got ${args.scrape}`);

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** The one YAML both services read: Cabourotte ignores `data-dir`, Vigie accepts Cabourotte's keys. */
function writeConfig(dir: string, targets: Targets, apiPort: number): string {
  const ports = targets.tcpPorts;
  const httpPort = targets.httpPort;
  const every = { timeout: '5s', interval: '10s' };
  const series = <T>(count: number, make: (i: number) => T): T[] | undefined =>
    count > 0 ? Array.from({ length: count }, (_, i) => make(i)) : undefined;
  const config = {
    'data-dir': dir,
    http: { host: '127.0.0.1', port: apiPort },
    'tcp-checks': Array.from({ length: TCP_CHECKS }, (_, i) => ({
      name: `tcp-${i}`,
      target: '127.0.0.1',
      port: ports[i % ports.length],
      timeout: '5s',
      interval: '10s',
    })),
    'http-checks': Array.from({ length: HTTP_CHECKS }, (_, i) => ({
      name: `http-${i}`,
      target: '127.0.0.1',
      port: httpPort,
      protocol: 'http',
      path: '/health',
      'valid-status': [200],
      timeout: '5s',
      interval: '10s',
    })),
    'websocket-checks': series(NEW_KINDS.websocket, (i) => ({
      name: `websocket-${i}`,
      url: `ws://127.0.0.1:${targets.wsPort}/greet`,
      'expected-regexp': 'hello',
      ...every,
    })),
    'grpc-checks': series(NEW_KINDS.grpc, (i) => ({
      name: `grpc-${i}`,
      target: '127.0.0.1',
      port: targets.grpcPort,
      ...every,
    })),
    'smtp-checks': series(NEW_KINDS.smtp, (i) => ({
      name: `smtp-${i}`,
      target: '127.0.0.1',
      port: targets.smtpPort,
      ...every,
    })),
    'icmp-checks': series(NEW_KINDS.icmp, (i) => ({ name: `icmp-${i}`, target: '127.0.0.1', ...every })),
    'domain-checks': series(NEW_KINDS.domain, (i) => ({
      name: `domain-${i}`,
      domain: 'example.com',
      'rdap-url': `http://127.0.0.1:${targets.rdapPort}`,
      'expiration-delay': '720h',
      ...every,
    })),
  };
  const file = join(dir, 'checks.yaml');
  writeFileSync(file, stringify(config, { collectionStyle: 'flow', lineWidth: 0 }).replace(/\}, \{/g, '},\n  {'));
  return file;
}

interface Window {
  cpu_share_of_one_core: number;
  /** The same CPU by thread name, user and system time apart (main, V8 helpers, libuv workers, Go threads). */
  cpu_by_thread: Record<string, { user: number; system: number }>;
  rss_mb_end: number;
  rss_mb_peak: number;
  rss_mb_steady: number;
  /** The mean of the samples: RSS moves with each collector's cycle (V8's and Go's), so two services compare by it. */
  rss_mb_mean: number;
  rss_flat: boolean;
  rss_mb_every_5s: number[];
  runs: number;
  failed_runs: number;
  /** What Node says of its memory at the end of the window (Vigie only): the rest of RSS is native. */
  memory_at_end?: Scrape['memory'];
}

/** Reads /metrics every SCRAPE_S seconds, each answer whole, as Prometheus does, until the returned function is called. */
function scrapeEvery(read: () => Promise<Response>): () => void {
  if (SCRAPE_S === 0) return () => {};
  const timer = setInterval(() => {
    read()
      .then((response) => response.text())
      .catch(() => {}); // the service is stopping
  }, SCRAPE_S * 1000);
  return () => clearInterval(timer);
}

/** Warm-up, then the window: CPU from /proc, RSS every second, and the metrics before and after. `read` answers
 *  the service's /metrics. */
async function measure(
  pid: number,
  read: () => Promise<Response>,
): Promise<Window & { before: Scrape; after: Scrape }> {
  const stopScrapes = scrapeEvery(read);
  try {
    return await measureWindow(pid, async () => parseMetrics(await (await read()).text()));
  } finally {
    stopScrapes();
  }
}

async function measureWindow(
  pid: number,
  scrape: () => Promise<Scrape>,
): Promise<Window & { before: Scrape; after: Scrape }> {
  await sleep(WARMUP_S * 1000);
  const before = await scrape();
  const cpuStart = cpuSeconds(pid);
  const threadsStart = threadCpuSeconds(pid);
  const windowStart = performance.now();
  const rss = [rssMb(pid)];
  while (performance.now() - windowStart < WINDOW_S * 1000) {
    await sleep(Math.min(1000, WINDOW_S * 1000 - (performance.now() - windowStart)));
    rss.push(rssMb(pid));
  }
  const elapsedS = (performance.now() - windowStart) / 1000;
  const cpu = (cpuSeconds(pid) - cpuStart) / elapsedS;
  const cpuByThread = threadCpuShares(threadsStart, threadCpuSeconds(pid), elapsedS);
  const after = await scrape();
  const steady = median(rss.slice(Math.floor(rss.length / 2)));
  const peak = Math.max(...rss);
  return {
    cpu_share_of_one_core: Number(cpu.toFixed(4)),
    cpu_by_thread: cpuByThread,
    rss_mb_end: Math.round(rss[rss.length - 1] ?? 0),
    rss_mb_peak: Math.round(peak),
    rss_mb_steady: Math.round(steady),
    rss_mb_mean: Number((rss.reduce((sum, value) => sum + value, 0) / rss.length).toFixed(1)),
    rss_flat: peak <= steady * 1.15,
    rss_mb_every_5s: rss.filter((_, i) => i % 5 === 0).map(Math.round),
    runs: after.success + after.failure - before.success - before.failure,
    failed_runs: after.failure - before.failure,
    ...(after.memory.heap_total_mb > 0 ? { memory_at_end: after.memory } : {}),
    before,
    after,
  };
}

/** The service as `npm start` runs it (bin/vigie.js on the bundle, its heap flags and environment), then `node`
 *  flags of the run's. */
async function startVigie(configFile: string, nodeArgs: string[]) {
  await ensureBundle();
  const service = serviceCommand(['serve', '--config', configFile, '--log-level', 'warn'], nodeArgs);
  const child = spawn(process.execPath, service.args, {
    env: service.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  readLines(child.stdout, (line) => logs.push(line));
  readLines(child.stderr, (line) => logs.push(line));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = (/port: (\d+)/.exec(readFileSync(configFile, 'utf8').slice(0, 500)) as RegExpExecArray)[1];
  const url = `http://127.0.0.1:${port}`;
  await waitUntilServing(`${url}/metrics`, child, logs);
  return {
    process: child,
    request: (path: string) => fetch(`${url}${path}`),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function waitUntilServing(url: string, child: ChildProcess, logs: string[]): Promise<void> {
  for (let tries = 0; ; tries++) {
    if (child.exitCode !== null)
      throw new Error(`the service exited with code ${child.exitCode}:\n${logs.slice(-10).join('\n')}`);
    try {
      await (await fetch(url)).text();
      return;
    } catch (error) {
      if (tries > 600) throw error;
      await sleep(100);
    }
  }
}

async function runVigie(configFile: string, dataDir: string, profileDir: string | undefined) {
  const flags = args['node-flags'] === undefined ? [] : args['node-flags'].split(' ').filter((flag) => flag !== '');
  const server = await startVigie(configFile, [
    ...flags,
    ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]),
  ]);
  try {
    const pid = server.process.pid as number;
    const window = await measure(pid, () => server.request('/metrics'));
    const windowEnd = performance.now();
    const { before, after, ...figures } = window;
    const p50 = percentile(before, after, 0.5);
    const p99 = percentile(before, after, 0.99);
    const dbFile = join(dataDir, 'vigie.db');
    await server.stop();
    const stoppedAfterMs = performance.now() - windowEnd;
    let profile: ReturnType<typeof profileBreakdown> | undefined;
    if (profileDir !== undefined) {
      // One profile per thread (the WAL checkpoint worker has its own): the main thread's is the largest.
      const file = readdirSync(profileDir)
        .filter((name) => name.endsWith('.cpuprofile'))
        .sort((a, b) => statSync(join(profileDir, b)).size - statSync(join(profileDir, a)).size)[0];
      if (file !== undefined)
        profile = profileBreakdown(join(profileDir, file), { windowS: WINDOW_S, endSkipMs: stoppedAfterMs });
    }
    return {
      ...figures,
      // The service's CPU time per run: what a kind costs, whatever the number of checks.
      cpu_us_per_run:
        figures.runs > 0 ? Math.round((figures.cpu_share_of_one_core * WINDOW_S * 1e6) / figures.runs) : null,
      lag_p50_ms: p50 === null ? null : Number((p50 * 1000).toFixed(2)),
      lag_p99_ms: p99 === null ? null : Number((p99 * 1000).toFixed(2)),
      database_mb: Number(((fileSize(dbFile) + fileSize(`${dbFile}-wal`)) / 1e6).toFixed(1)),
      ...(profile ? { profile } : {}),
    };
  } finally {
    await server.stop();
  }
}

/**
 * Spawns a process that serves /metrics on its YAML's `http.port` (Cabourotte's `daemon --config`, or
 * bench/node-floor.mjs) and waits until it serves; `stop` ends it (SIGTERM, then SIGKILL after 10 s).
 */
async function startServing(
  command: string,
  args: string[],
  configFile: string,
): Promise<{ pid: number; url: string; stop: () => Promise<void> }> {
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  readLines(child.stdout as NonNullable<ChildProcess['stdout']>, (line) => logs.push(line));
  readLines(child.stderr as NonNullable<ChildProcess['stderr']>, (line) => logs.push(line));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  try {
    const port = (/port: (\d+)/.exec(readFileSync(configFile, 'utf8').slice(0, 500)) as RegExpExecArray)[1];
    const url = `http://127.0.0.1:${port}`;
    await waitUntilServing(`${url}/metrics`, child, logs);
    return { pid: child.pid as number, url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Cabourotte, or bench/node-floor.mjs, measured over the window. */
async function runPeer(command: string, args: string[], configFile: string) {
  const { pid, url, stop } = await startServing(command, args, configFile);
  try {
    const { before: _before, after: _after, ...figures } = await measure(pid, () => fetch(`${url}/metrics`));
    return figures;
  } finally {
    await stop();
  }
}

/**
 * Starts bench/node-floor.mjs on `configFile`, not measured; returns its stop. With `--together` it runs before the
 * measured processes: on this 2-core machine, of several processes started on the same checks, the first started
 * spent 1.2 to 1.6 times the CPU of the same build started after it, in every run (docs/performance.md,
 * "Measuring"), so whichever service the bench started first was measured the worse for it.
 */
async function startLead(configFile: string): Promise<() => Promise<void>> {
  return (await startServing(process.execPath, [join(import.meta.dirname, 'node-floor.mjs'), configFile], configFile))
    .stop;
}

async function main(): Promise<void> {
  const load = loadavg()[0] ?? 0;
  const newKinds = Object.entries(NEW_KINDS).filter(([, n]) => n > 0);
  console.log(
    `checks: ${cpus().length} cores, load ${load.toFixed(1)}, ${TCP_CHECKS} TCP + ${HTTP_CHECKS} HTTP${newKinds.map(([kind, n]) => ` + ${n} ${kind}`).join('')} checks at 10s, ${WARMUP_S}s warm-up, ${WINDOW_S}s window${SCRAPE_S > 0 ? `, /metrics read every ${SCRAPE_S}s` : ''}`,
  );
  const targets = await startTargets({ newKinds: NEW_KIND_CHECKS > 0 });
  try {
    const dataDir = mkdtempSync(join(tmpdir(), 'vigie-bench-'));
    const configFile = writeConfig(dataDir, targets, await freePort());
    const profileDir = args['cpu-prof'];
    if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });

    const peerBinary = args.peer !== undefined && existsSync(args.peer) ? args.peer : undefined;
    const peerNote =
      args.peer !== undefined && peerBinary === undefined ? `skipped: ${args.peer} does not exist` : undefined;
    let vigie: Awaited<ReturnType<typeof runVigie>>;
    let peer: Awaited<ReturnType<typeof runPeer>> | undefined;
    let floor: Awaited<ReturnType<typeof runPeer>> | undefined;
    if (TOGETHER && peerBinary !== undefined) {
      // The same checks and targets; only the API port differs.
      const otherConfig = async (prefix: string) =>
        writeConfig(mkdtempSync(join(tmpdir(), prefix)), targets, await freePort());
      const peerConfig = await otherConfig('cabourotte-bench-');
      const floorConfig = FLOOR ? await otherConfig('node-floor-bench-') : '';
      const stopLead = await startLead(await otherConfig('lead-bench-'));
      try {
        [vigie, peer, floor] = await Promise.all([
          runVigie(configFile, dataDir, profileDir),
          runPeer(peerBinary, ['daemon', '--config', peerConfig], peerConfig),
          FLOOR
            ? runPeer(process.execPath, [join(import.meta.dirname, 'node-floor.mjs'), floorConfig], floorConfig)
            : undefined,
        ]);
      } finally {
        await stopLead();
      }
    } else {
      vigie = await runVigie(configFile, dataDir, profileDir);
      if (peerBinary !== undefined) peer = await runPeer(peerBinary, ['daemon', '--config', configFile], configFile);
    }
    console.log('vigie', JSON.stringify(vigie));
    if (peer !== undefined) console.log('peer', JSON.stringify(peer));
    if (floor !== undefined) console.log('node floor', JSON.stringify(floor));
    else if (FLOOR) console.log('node floor: skipped, it runs beside Cabourotte, which is not here');

    // The goal is Cabourotte's CPU on the same machine: measured in the same run when there is a peer, else the
    // 0.12 of a core it took on the 2-core machine the goal was set on.
    // Beside Cabourotte: a small deployment (up to 3,000 checks) passes at 1.2 times its CPU and 1.5 times its mean
    // RSS, a large one at its CPU and 185 MB (docs/performance.md, "A small deployment"); alone, at 0.12 of a core.
    const small = TCP_CHECKS + HTTP_CHECKS + NEW_KIND_CHECKS <= 3_000;
    const cpuFloor = peer ? Number((peer.cpu_share_of_one_core * (small ? 1.2 : 1)).toFixed(4)) : 0.12;
    const rssMeanFloor = peer && small ? Number((peer.rss_mb_mean * 1.5).toFixed(1)) : undefined;
    const figures = {
      cores: cpus().length,
      load_average_1m_at_start: Number(load.toFixed(1)),
      load_average_1m_at_end: Number((loadavg()[0] ?? 0).toFixed(1)),
      checks: TCP_CHECKS + HTTP_CHECKS + NEW_KIND_CHECKS,
      ...(NEW_KIND_CHECKS > 0 ? { new_kinds: Object.fromEntries(newKinds) } : {}),
      warmup_s: WARMUP_S,
      window_s: WINDOW_S,
      ...(SCRAPE_S > 0 ? { scrape_interval_s: SCRAPE_S } : {}),
      ...(peer
        ? {
            measured: TOGETHER
              ? 'at the same time, after an unmeasured bench/node-floor.mjs started first'
              : 'one after the other',
          }
        : {}),
      node_flags: [...serviceNodeFlags(), args['node-flags'] ?? ''].join(' ').trim(),
      service_env: serviceEnv(),
      vigie,
      ...(peer ? { cabourotte: peer } : {}),
      ...(peer
        ? {
            ratio_vigie_over_cabourotte: {
              cpu: Number((vigie.cpu_share_of_one_core / peer.cpu_share_of_one_core).toFixed(2)),
              rss_end: Number((vigie.rss_mb_end / peer.rss_mb_end).toFixed(2)),
              rss_mean: Number((vigie.rss_mb_mean / peer.rss_mb_mean).toFixed(2)),
            },
          }
        : {}),
      ...(peer && floor
        ? {
            node_floor: floor,
            ratio_node_floor_over_cabourotte: {
              cpu: Number((floor.cpu_share_of_one_core / peer.cpu_share_of_one_core).toFixed(2)),
              rss_mean: Number((floor.rss_mb_mean / peer.rss_mb_mean).toFixed(2)),
            },
          }
        : {}),
      ...(peerNote ? { cabourotte: peerNote } : {}),
      floors: {
        failed_runs: 0,
        lag_p99_ms: 100,
        cpu_share_of_one_core: cpuFloor,
        rss_mb_end: 185,
        ...(rssMeanFloor !== undefined ? { rss_mb_mean: rssMeanFloor } : {}),
        rss_flat: true,
      },
    };
    const pass =
      vigie.failed_runs === 0 &&
      vigie.runs > 0 &&
      (vigie.lag_p99_ms ?? Infinity) <= 100 &&
      vigie.cpu_share_of_one_core <= cpuFloor &&
      vigie.rss_mb_end <= 185 &&
      (rssMeanFloor === undefined || vigie.rss_mb_mean <= rssMeanFloor) &&
      (WINDOW_S < 600 || vigie.rss_flat);
    const { profile, ...vigieWithoutProfile } = vigie as typeof vigie & { profile?: unknown };
    const written = { ...figures, vigie: vigieWithoutProfile, pass };
    mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
    // A longer window writes its own file so that the 60 s figures of `npm run bench` stay as they are.
    const sized = DEFAULT_SIZE
      ? 'checks'
      : `checks-${TCP_CHECKS}tcp-${HTTP_CHECKS}http${newKinds.map(([kind, n]) => `-${n}${kind}`).join('')}`;
    const timed = WINDOW_S === 60 ? sized : `${sized}-${WINDOW_S}s`;
    const warmed = WARMUP_S === 20 ? timed : `${timed}-warmup${WARMUP_S}s`;
    const scraped = SCRAPE_S === 0 ? warmed : `${warmed}-scrape${SCRAPE_S}s`;
    const resultName = TOGETHER && peer ? `${scraped}-together` : scraped;
    writeFileSync(join(import.meta.dirname, 'results', `${resultName}.json`), `${JSON.stringify(written)}\n`);
    if (profile !== undefined)
      writeFileSync(join(profileDir as string, 'breakdown.json'), `${JSON.stringify(profile, null, 2)}\n`);
    console.log(JSON.stringify(written, null, 2));
    if (profile !== undefined) console.log(JSON.stringify(profile, null, 2));
    process.exitCode = pass ? 0 : 1;
  } finally {
    targets.process.kill('SIGKILL');
  }
}

await main();
