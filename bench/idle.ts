/**
 * Idle benchmark (docs/performance.md "An idle service"): a service with no checks, no streams and nobody calling,
 * as `npm start` runs it, watched for WINDOW_S after it settles. Figures: CPU (share of one core, from /proc), the
 * wake-ups of each thread per second (voluntary context switches: a thread that sleeps in epoll or on a futex and is
 * woken once counts one), and RSS. Floors (SPEC: an idle service near zero): at most 0.002 of a core, and the main
 * thread woken at most once a second.
 *
 * `node --import tsx bench/idle.ts`
 */
import { startServer } from '../test/helpers/server.ts';
import { cpuSeconds, rssMb, threadCpuSeconds, wakeups } from './check-load.ts';
import { round, writeResult } from './http-load.ts';

/** Startup compiles (route schemas, V8's optimizing threads) and V8's memory reducer (two full collections once
 *  startup's allocations stop: 16 s in with a 4 MB semi-space, 32 s with 8 MB, `--trace-gc`) are left to finish
 *  before the window opens: they happen once, not every minute. */
const SETTLE_MS = 45_000;
const WINDOW_S = Number(process.env.IDLE_WINDOW_S ?? 60);
const FLOOR_CORES = 0.002;
const FLOOR_MAIN_WAKEUPS_PER_S = 1;

const server = await startServer({ asService: true });
try {
  const pid = server.process.pid as number;
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const cpuBefore = cpuSeconds(pid);
  const threadsBefore = threadCpuSeconds(pid);
  const wakeBefore = wakeups(pid);
  await new Promise((resolve) => setTimeout(resolve, WINDOW_S * 1000));
  const cores = (cpuSeconds(pid) - cpuBefore) / WINDOW_S;
  const wakeAfter = wakeups(pid);
  const threadCores: Record<string, number> = {};
  for (const [name, after] of threadCpuSeconds(pid)) {
    const before = threadsBefore.get(name) ?? { user: 0, system: 0 };
    threadCores[name] = round(((after.user + after.system - before.user - before.system) / WINDOW_S) * 10_000) / 10_000;
  }
  const perThread: Record<string, number> = {};
  for (const [name, count] of wakeAfter) perThread[name] = round((count - (wakeBefore.get(name) ?? 0)) / WINDOW_S);
  const main = perThread.main ?? 0;
  writeResult('idle', {
    windowS: WINDOW_S,
    cpuCores: round(cores * 10_000) / 10_000,
    cpuCoresByThread: threadCores,
    wakeupsPerS: perThread,
    rssMb: Math.round(rssMb(pid)),
    floors: { cpuCores: FLOOR_CORES, mainWakeupsPerS: FLOOR_MAIN_WAKEUPS_PER_S },
    pass: cores <= FLOOR_CORES && main <= FLOOR_MAIN_WAKEUPS_PER_S,
  });
} finally {
  await server.stop();
}
