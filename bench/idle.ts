/**
 * Idle benchmark (docs/performance.md "An idle service"): a service with no checks, no streams and nobody calling,
 * started as `npm start` starts it (bin/vigie.js's flags and environment), measured from outside over the whole
 * process (every thread) in two 60 s windows: from 15 s of uptime (what a service just started costs: V8 still
 * compiles and collects what startup left) and from 180 s (settled). Figures per window: CPU (share of one core,
 * from /proc/<pid>/stat), the CPU and the wake-ups of each thread per second (voluntary context switches: a thread
 * that sleeps in epoll or on a futex and is woken once counts one), and RSS. Floors (SPEC: an idle service near
 * zero), on the settled window: at most 0.002 of a core, and the main thread woken at most once a second.
 *
 * `node --import tsx bench/idle.ts` (IDLE_WINDOW_S=<s> shortens the windows)
 */
import { loadavg } from 'node:os';
import { ensureBundle, startServer } from '../test/helpers/server.ts';
import { cpuSeconds, rssMb, threadCpuSeconds, wakeups } from './check-load.ts';
import { round, writeResult } from './http-load.ts';

const WINDOW_S = Number(process.env.IDLE_WINDOW_S ?? 60);
/** Seconds of uptime at which each window opens. */
const WINDOWS_FROM_S = [15, 180];
const FLOOR_CORES = 0.002;
const FLOOR_MAIN_WAKEUPS_PER_S = 1;

const sleepUntil = (uptimeS: number, startedAt: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + uptimeS * 1000 - performance.now())));

async function measure(pid: number) {
  const cpuBefore = cpuSeconds(pid);
  const threadsBefore = threadCpuSeconds(pid);
  const wakeBefore = wakeups(pid);
  const openedAt = performance.now();
  await new Promise((resolve) => setTimeout(resolve, WINDOW_S * 1000));
  const seconds = (performance.now() - openedAt) / 1000;
  const cores = (cpuSeconds(pid) - cpuBefore) / seconds;
  const threadCores: Record<string, number> = {};
  for (const [name, after] of threadCpuSeconds(pid)) {
    const before = threadsBefore.get(name) ?? { user: 0, system: 0 };
    threadCores[name] = round(((after.user + after.system - before.user - before.system) / seconds) * 10_000) / 10_000;
  }
  const perThread: Record<string, number> = {};
  for (const [name, count] of wakeups(pid)) perThread[name] = round((count - (wakeBefore.get(name) ?? 0)) / seconds);
  return {
    cpuCores: round(cores * 10_000) / 10_000,
    cpuCoresByThread: threadCores,
    wakeupsPerS: perThread,
    rssMb: Math.round(rssMb(pid)),
  };
}

const loadAverages = () => loadavg().map((value) => Number(value.toFixed(2)));
await ensureBundle();
const loadAtStart = loadAverages();
const startedAt = performance.now();
const server = await startServer({ asService: true });
try {
  const pid = server.process.pid as number;
  const windows: Record<string, Awaited<ReturnType<typeof measure>>> = {};
  for (const fromS of WINDOWS_FROM_S) {
    await sleepUntil(fromS, startedAt);
    windows[`from_${fromS}s`] = await measure(pid);
    console.log(`idle from ${fromS} s: ${JSON.stringify(windows[`from_${fromS}s`])}`);
  }
  const settled = windows[`from_${WINDOWS_FROM_S[WINDOWS_FROM_S.length - 1]}s`] as Awaited<ReturnType<typeof measure>>;
  writeResult('idle', {
    windowS: WINDOW_S,
    loadAverages: { atStart: loadAtStart, atEnd: loadAverages() },
    windows,
    floors: { cpuCores: FLOOR_CORES, mainWakeupsPerS: FLOOR_MAIN_WAKEUPS_PER_S, judged: 'the settled window' },
    pass: settled.cpuCores <= FLOOR_CORES && (settled.wakeupsPerS.main ?? 0) <= FLOOR_MAIN_WAKEUPS_PER_S,
  });
} finally {
  await server.stop();
}
