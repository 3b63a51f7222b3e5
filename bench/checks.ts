/**
 * `checks` benchmark: 10,000 TCP + 2,000 HTTP checks at `interval: 10s`, `timeout: 5s`, written in one YAML
 * file, against local targets that run in a process of their own (20 TCP listeners, so that 1,000 connections
 * a second never run short of 4-tuples, and one HTTP server with Node's default keep-alive timeout).
 *
 * Method (docs/performance.md, "Measuring"): the service is started as a user starts it, bin/vigie.js executed
 * itself, so with the V8 flags and environment of its first line (the same as `npm start`), and measured from
 * outside: after a 20 s warm-up (`--warmup`), CPU = utime + stime of the whole process (every thread) from
 * /proc/<pid>/stat over the window (60 s, or `--minutes N`), RSS from /proc/<pid>/status every second (its mean,
 * reported every 5 s, its peak, its steady value = the median of the second half, and whether the peak stays
 * within 15 % of it), the runs and failed runs over the window (healthcheck_total), and the p99 lag between a
 * run's due time and its start (healthcheck_scheduling_lag_seconds). With `--peer`, Cabourotte then runs the same
 * YAML on the same targets, measured the same way: one process after the other, never both at once. Each run
 * prints the load averages: on a busy machine every figure moves, compare only runs of one command.
 *
 *   node --import tsx bench/checks.ts --peer /path/cabourotte --checks 12000 --repeat 3
 *                                                              the judging run: three pairs, the order swapped
 *                                                              from one pair to the next (Vigie first, then
 *                                                              Cabourotte first, ...), each pair's ratios and
 *                                                              their median: bench/results/checks-x3.json
 *   node --import tsx bench/checks.ts --peer ... --checks 1200 a small deployment (1,000 TCP + 200 HTTP):
 *                                                              bench/results/checks-1000tcp-200http.json
 *   node --import tsx bench/checks.ts                          Vigie alone, 60 s window, bench/results/checks.json
 *   node --import tsx bench/checks.ts --minutes 10             10 min window, bench/results/checks-600s.json
 *   node --import tsx bench/checks.ts --node-flags='--max-semi-space-size=1'   extra node flags for the service
 *                                                              (then run as `node <first line's flags> <these>
 *                                                              bin/vigie.js`, with the first line's environment)
 *   node --import tsx bench/checks.ts --tcp 1000 --http 200   the workload by kind (`--checks N`: N/6 HTTP, the
 *                                                              rest TCP)
 *   node --import tsx bench/checks.ts --warmup 180             a longer warm-up (20 s by default): V8 is still
 *                                                              optimizing a small deployment's functions for its first
 *                                                              ~3 minutes
 *   node --import tsx bench/checks.ts --tcp 0 --http 0 --grpc 2000   one of the newer kinds alone (also --websocket,
 *                                                              --smtp, --domain, --icmp):
 *                                                              bench/results/checks-0tcp-0http-2000grpc.json;
 *                                                              `cpu_us_per_run` compares a kind's cost with TCP's
 *   node --import tsx bench/checks.ts --cpu-prof DIR           the service runs under `node --cpu-prof`; the
 *                                                              window's breakdown by component (bench/profile.ts)
 *   node --import tsx bench/checks.ts --scrape 15              each service's /metrics is read every 15 s from its
 *                                                              start, as a Prometheus would (none by default):
 *                                                              bench/results/checks-...-scrape15s.json
 *   node --import tsx bench/checks.ts --peer ... --together    both services run and are measured at the same time,
 *                                                              on the same targets, each on its own API port, after
 *                                                              an unmeasured process of the same checks
 *                                                              (bench/node-floor.mjs) started first:
 *                                                              bench/results/checks-...-together.json. Not how the
 *                                                              goals are judged: at the same time, each service
 *                                                              meets the other's load, and Go's runtime pays more
 *                                                              for it than Node (docs/performance.md, "Measuring")
 *   node --import tsx bench/checks.ts --peer ... --together --floor   bench/node-floor.mjs measured beside them too:
 *                                                              the same checks run by Node with nothing kept
 *
 * BENCH_SERVICE_LOG=<file>: the service's stdout and stderr are written there when it stops (with
 * `--node-flags=--trace-gc`, its collections).
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

/** What `npx vigie` runs (package.json's `bin`). */
const LAUNCHER = join(import.meta.dirname, '..', 'bin', 'vigie.js');

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
    tcp: { type: 'string' },
    http: { type: 'string' },
    /** TCP and HTTP checks together, one in six HTTP, as the default 10,000 + 2,000: `--checks 1200` is 1,000 + 200. */
    checks: { type: 'string' },
    /** With `--peer`: this many pairs, one after the other, the order swapped from one pair to the next. */
    repeat: { type: 'string', default: '1' },
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
if (args.checks !== undefined && (args.tcp !== undefined || args.http !== undefined))
  throw new Error('--checks: gives both --tcp and --http, so it takes neither');
const ALL_CHECKS = args.checks === undefined ? 12_000 : Number(args.checks);
if (!Number.isInteger(ALL_CHECKS) || ALL_CHECKS < 0)
  throw new Error(`--checks: must be a whole number of checks, got ${args.checks}`);
const TCP_CHECKS = args.tcp !== undefined ? Number(args.tcp) : ALL_CHECKS - Math.round(ALL_CHECKS / 6);
const HTTP_CHECKS = args.http !== undefined ? Number(args.http) : Math.round(ALL_CHECKS / 6);
const REPEAT = Number(args.repeat);
if (!Number.isInteger(REPEAT) || REPEAT < 1)
  throw new Error(`--repeat: must be a whole number of pairs, got ${args.repeat}`);
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
if (REPEAT > 1 && (TOGETHER || args.peer === undefined))
  throw new Error('--repeat: pairs of runs one after the other, so it needs --peer and no --together');
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

/** Reads /metrics every SCRAPE_S seconds, each answer whole, as Prometheus does, until the returned function is
 *  called. */
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

/**
 * The service as a user starts it: bin/vigie.js executed itself, so that the kernel reads its first line (`env -S`
 * with its environment and V8 flags), as `npx vigie` and `npm start` (which spells the same line out) do. With
 * `nodeArgs` (`--node-flags`, `--cpu-prof`), `node` runs it with the first line's flags and environment, then those.
 */
async function startVigie(configFile: string, nodeArgs: string[]) {
  await ensureBundle();
  const serveArgs = ['serve', '--config', configFile];
  const service =
    nodeArgs.length === 0
      ? { command: LAUNCHER, args: serveArgs, env: process.env }
      : { command: process.execPath, ...serviceCommand(serveArgs, nodeArgs) };
  const child = spawn(service.command, service.args, {
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
      if (process.env.BENCH_SERVICE_LOG) writeFileSync(process.env.BENCH_SERVICE_LOG, logs.join('\n'));
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
 * spent 1.2 to 1.6 times the CPU of the same build started after it, in every run (bench/JOURNAL.md,
 * "Measuring: `bench/checks.ts`"), so whichever service the bench started first was measured the worse for it.
 */
async function startLead(configFile: string): Promise<() => Promise<void>> {
  return (await startServing(process.execPath, [join(import.meta.dirname, 'node-floor.mjs'), configFile], configFile))
    .stop;
}

type VigieFigures = Awaited<ReturnType<typeof runVigie>>;
type PeerFigures = Awaited<ReturnType<typeof runPeer>>;

/** The goals (docs/performance.md, "Measuring"): beside Cabourotte, a small deployment (up to 3,000 checks) at most
 *  1.3 times its CPU and 1.5 times its mean RSS, a larger one at most its CPU and half its mean RSS; alone, the
 *  0.12 of a core Cabourotte took on the 2-core machine the goal was set on, and 185 MB. */
const SMALL = TCP_CHECKS + HTTP_CHECKS + NEW_KIND_CHECKS <= 3_000;
const CPU_RATIO_GOAL = SMALL ? 1.3 : 1;
const RSS_RATIO_GOAL = SMALL ? 1.5 : 0.5;

function ratios(vigie: VigieFigures, peer: PeerFigures) {
  return {
    cpu: Number((vigie.cpu_share_of_one_core / peer.cpu_share_of_one_core).toFixed(2)),
    rss_end: Number((vigie.rss_mb_end / peer.rss_mb_end).toFixed(2)),
    rss_mean: Number((vigie.rss_mb_mean / peer.rss_mb_mean).toFixed(2)),
  };
}

/** Whether a run meets every floor but the CPU's, which `--repeat` judges over all pairs. */
function healthy(vigie: VigieFigures, peer: PeerFigures | undefined): boolean {
  return (
    vigie.failed_runs === 0 &&
    vigie.runs > 0 &&
    (vigie.lag_p99_ms ?? Infinity) <= 100 &&
    (peer === undefined ? vigie.rss_mb_end <= 185 : vigie.rss_mb_mean <= peer.rss_mb_mean * RSS_RATIO_GOAL) &&
    (WINDOW_S < 600 || vigie.rss_flat)
  );
}

const load1m = () => Number((loadavg()[0] ?? 0).toFixed(2));

function describe(name: string, figures: Window): string {
  return `${name} ${figures.cpu_share_of_one_core.toFixed(4)} of a core, mean RSS ${figures.rss_mb_mean} MB, ${figures.failed_runs} failed runs`;
}

async function main(): Promise<void> {
  const load = loadavg()[0] ?? 0;
  const newKinds = Object.entries(NEW_KINDS).filter(([, n]) => n > 0);
  console.log(
    `checks: ${cpus().length} cores, load ${loadavg()
      .map((value) => value.toFixed(2))
      .join(
        ' ',
      )}, ${TCP_CHECKS} TCP + ${HTTP_CHECKS} HTTP${newKinds.map(([kind, n]) => ` + ${n} ${kind}`).join('')} checks at 10s, ${WARMUP_S}s warm-up, ${WINDOW_S}s window${SCRAPE_S > 0 ? `, /metrics read every ${SCRAPE_S}s` : ''}`,
  );
  const targets = await startTargets({ newKinds: NEW_KIND_CHECKS > 0 });
  try {
    const freshConfig = async (prefix: string) => {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      return { dir, file: writeConfig(dir, targets, await freePort()) };
    };
    const profileDir = args['cpu-prof'];
    if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });

    const peerBinary = args.peer !== undefined && existsSync(args.peer) ? args.peer : undefined;
    const peerNote =
      args.peer !== undefined && peerBinary === undefined ? `skipped: ${args.peer} does not exist` : undefined;
    const measureVigie = async () => {
      const { dir, file } = await freshConfig('vigie-bench-');
      return runVigie(file, dir, profileDir);
    };
    const measurePeer = async (binary: string) => {
      const { file } = await freshConfig('cabourotte-bench-');
      return runPeer(binary, ['daemon', '--config', file], file);
    };
    const pairs: {
      first: 'vigie' | 'cabourotte';
      load_average_1m: { start: number; end: number };
      vigie: VigieFigures;
      cabourotte: PeerFigures;
    }[] = [];
    let vigie: VigieFigures | undefined;
    let peer: PeerFigures | undefined;
    let floor: PeerFigures | undefined;
    if (TOGETHER && peerBinary !== undefined) {
      // The same checks and targets; only the API port differs.
      const peerConfig = await freshConfig('cabourotte-bench-');
      const floorConfig = FLOOR ? await freshConfig('node-floor-bench-') : undefined;
      const stopLead = await startLead((await freshConfig('lead-bench-')).file);
      try {
        [vigie, peer, floor] = await Promise.all([
          measureVigie(),
          runPeer(peerBinary, ['daemon', '--config', peerConfig.file], peerConfig.file),
          floorConfig
            ? runPeer(
                process.execPath,
                [join(import.meta.dirname, 'node-floor.mjs'), floorConfig.file],
                floorConfig.file,
              )
            : undefined,
        ]);
      } finally {
        await stopLead();
      }
    } else if (peerBinary !== undefined) {
      // One process after the other, Vigie first in the first pair, Cabourotte first in the second, and so on.
      for (let pair = 0; pair < REPEAT; pair++) {
        const start = load1m();
        const vigieFirst = pair % 2 === 0;
        let pairVigie: VigieFigures;
        let pairPeer: PeerFigures;
        if (vigieFirst) {
          pairVigie = await measureVigie();
          pairPeer = await measurePeer(peerBinary);
        } else {
          pairPeer = await measurePeer(peerBinary);
          pairVigie = await measureVigie();
        }
        const ratio = ratios(pairVigie, pairPeer);
        console.log(
          `pair ${pair + 1} of ${REPEAT} (${vigieFirst ? 'Vigie' : 'Cabourotte'} first, load ${start} to ${load1m()}): ` +
            `${describe('Vigie', pairVigie)}; ${describe('Cabourotte', pairPeer)}; CPU ${ratio.cpu}x, RSS ${ratio.rss_mean}x`,
        );
        pairs.push({
          first: vigieFirst ? 'vigie' : 'cabourotte',
          load_average_1m: { start, end: load1m() },
          vigie: pairVigie,
          cabourotte: pairPeer,
        });
      }
      // The pair of the median CPU ratio stands for the run.
      const byCpu = [...pairs].sort((a, b) => ratios(a.vigie, a.cabourotte).cpu - ratios(b.vigie, b.cabourotte).cpu);
      const median = byCpu[Math.floor((byCpu.length - 1) / 2)] as (typeof pairs)[number];
      vigie = median.vigie;
      peer = median.cabourotte;
    } else {
      vigie = await measureVigie();
    }
    if (floor !== undefined) console.log('node floor', JSON.stringify(floor));
    else if (FLOOR) console.log('node floor: skipped, it runs beside Cabourotte, which is not here');

    const cpuRatios = pairs.map((pair) => ratios(pair.vigie, pair.cabourotte).cpu);
    const cpuFloor = peer ? Number((peer.cpu_share_of_one_core * CPU_RATIO_GOAL).toFixed(4)) : 0.12;
    const cpuPass =
      pairs.length > 1
        ? (median(cpuRatios) as number) <= CPU_RATIO_GOAL && Math.max(...cpuRatios) <= CPU_RATIO_GOAL + 0.1
        : vigie.cpu_share_of_one_core <= cpuFloor;
    const pass =
      cpuPass &&
      (pairs.length > 0 ? pairs.every((pair) => healthy(pair.vigie, pair.cabourotte)) : healthy(vigie, peer));
    const figures = {
      cores: cpus().length,
      load_average_1m_at_start: Number(load.toFixed(2)),
      load_average_1m_at_end: load1m(),
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
      launched:
        args['node-flags'] !== undefined || profileDir !== undefined
          ? 'node, the flags and environment of bin/vigie.js, then --node-flags'
          : 'bin/vigie.js itself',
      node_flags: [...serviceNodeFlags(), args['node-flags'] ?? ''].join(' ').trim(),
      service_env: serviceEnv(),
      vigie,
      ...(peer ? { cabourotte: peer, ratio_vigie_over_cabourotte: ratios(vigie, peer) } : {}),
      ...(pairs.length > 1
        ? {
            pairs: pairs.map((pair) => ({
              first: pair.first,
              load_average_1m: pair.load_average_1m,
              vigie: { cpu: pair.vigie.cpu_share_of_one_core, rss_mb_mean: pair.vigie.rss_mb_mean },
              cabourotte: { cpu: pair.cabourotte.cpu_share_of_one_core, rss_mb_mean: pair.cabourotte.rss_mb_mean },
              ratio: ratios(pair.vigie, pair.cabourotte),
            })),
            cpu_ratio_median: median(cpuRatios),
            cpu_ratio_max: Math.max(...cpuRatios),
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
        ...(peer
          ? {
              cpu_ratio: CPU_RATIO_GOAL,
              ...(pairs.length > 1 ? { cpu_ratio_of_any_pair: CPU_RATIO_GOAL + 0.1 } : {}),
              rss_mean_ratio: RSS_RATIO_GOAL,
            }
          : { cpu_share_of_one_core: cpuFloor, rss_mb_end: 185 }),
        ...(WINDOW_S >= 600 ? { rss_flat: true } : {}),
      },
    };
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
    const repeated = pairs.length > 1 ? `${scraped}-x${pairs.length}` : scraped;
    const resultName = TOGETHER && peer ? `${repeated}-together` : repeated;
    const resultFile = join(import.meta.dirname, 'results', `${resultName}.json`);
    writeFileSync(resultFile, `${JSON.stringify(written)}\n`);
    if (profile !== undefined)
      writeFileSync(join(profileDir as string, 'breakdown.json'), `${JSON.stringify(profile, null, 2)}\n`);
    console.log(JSON.stringify(written, null, 2));
    if (profile !== undefined) console.log(JSON.stringify(profile, null, 2));
    console.log(describe('Vigie', vigie));
    if (peer !== undefined) {
      console.log(describe('Cabourotte', peer));
      const ratio = ratios(vigie, peer);
      console.log(
        pairs.length > 1
          ? `CPU ratios ${cpuRatios.join(', ')} (median ${median(cpuRatios)}, goal ${CPU_RATIO_GOAL}); RSS ratio of the median pair ${ratio.rss_mean} (goal ${RSS_RATIO_GOAL})`
          : `CPU ${ratio.cpu}x (goal ${CPU_RATIO_GOAL}), RSS ${ratio.rss_mean}x (goal ${RSS_RATIO_GOAL})`,
      );
    }
    console.log(`${pass ? 'pass' : 'FAIL'}; ${resultFile}`);
    process.exitCode = pass ? 0 : 1;
  } finally {
    targets.process.kill('SIGKILL');
  }
}

await main();
