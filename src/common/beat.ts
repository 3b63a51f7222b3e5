/**
 * Periodic work on a shared beat: the service's periodic timers (the result writes, the WAL checkpoint's look, the
 * data-dir lock's refresh, the stream checkpoint rounds) fire on whole multiples of a grid of `performance.now()`,
 * where the scheduler's start ticks lie too, so that they wake the process together instead of each at its own phase
 * (bench/JOURNAL.md, "One wake-up a second", "A two-second tick", "Slow work on one ten-second grid").
 *
 * A timer fires a few ms after the instant it was aimed at (here, 4 to 9 ms), so the next instant is the grid point
 * nearest to now plus the period, not the first one past it: that skipped a beat every time, and the 2 s beat of the
 * result writes ran every 4 s.
 */

/**
 * The service's beat: the longest automatic start tick (src/healthcheck/scheduling/start-tick.ts). The shorter ticks
 * divide it, so whichever is in force, the beat falls on a tick.
 */
export const BEAT_MS = 2_000;

/**
 * The grid of the slow periodic work that runs with nothing to do (the lock's refresh, the checkpoint rounds, the
 * WAL look backed off): a multiple of BEAT_MS, so an idle service wakes for all of them at once, on a beat.
 */
export const SLOW_BEAT_MS = 10_000;

/**
 * The whole multiple of `gridMs` nearest to `now + delayMs`, and after `now`: where a chain of `onBeat(period)`
 * calls made on time, early or a little late lands on the next grid point each time, skipping none.
 */
export function beatAfter(delayMs: number, gridMs: number, now = performance.now()): number {
  let at = Math.round((now + delayMs) / gridMs) * gridMs;
  while (at <= now) at += gridMs;
  return at;
}

/** The longest delay Node's timers take. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** A piece of work waiting for its beat. */
export interface BeatTimer {
  /** It will not run (a no-op once it has). */
  cancel(): void;
}

/**
 * Runs `work` once, at the multiple of `gridMs` nearest to `delayMs` from now (`beatAfter`). The timer does not keep
 * the process alive. Periodic work calls it again from `work`, or uses `everyBeat`.
 */
export function onBeat(delayMs: number, work: () => void, gridMs: number = BEAT_MS): BeatTimer {
  const now = performance.now();
  // Node runs a timer of more than 2^31 - 1 ms after 1 ms: a `snapshot-interval: 30d` would run every ms.
  const timer = setTimeout(work, Math.min(beatAfter(delayMs, gridMs, now) - now, LONGEST_TIMER_MS)).unref();
  return { cancel: () => clearTimeout(timer) };
}

/**
 * Runs `work` every `intervalMs` until cancelled, on the grid of its interval (`gridOf`), so that periodic work of
 * periods that are multiples of one another wakes the process together.
 */
export function everyBeat(intervalMs: number, work: () => void): BeatTimer {
  const grid = gridOf(intervalMs);
  let next: BeatTimer;
  const run = () => {
    // Armed before the work runs, so that work that cancels the whole cancels this one.
    next = onBeat(intervalMs, run, grid);
    work();
  };
  next = onBeat(intervalMs, run, grid);
  return { cancel: () => next.cancel() };
}

/** The slow grid for an interval that is a multiple of it, else the beat for one that is, else the interval. */
export function gridOf(intervalMs: number): number {
  if (intervalMs % SLOW_BEAT_MS === 0) return SLOW_BEAT_MS;
  if (intervalMs % BEAT_MS === 0) return BEAT_MS;
  return intervalMs;
}
