/**
 * Periodic work on a shared beat: the service's periodic timers (the result writes, the WAL checkpoint's look) fire
 * on whole multiples of BEAT_MS of `performance.now()`, where the scheduler's start ticks lie too, so that they wake
 * the process together instead of each at its own phase (docs/performance.md, "One wake-up a second", "A
 * two-second tick").
 */

/**
 * The service's beat: the longest automatic start tick (src/healthcheck/start-tick.ts). The shorter ticks divide it,
 * so whichever is in force, the beat falls on a tick.
 */
export const BEAT_MS = 2_000;

/** The delay, at least `delayMs`, to the next whole multiple of `beatMs` (the service's timers: BEAT_MS) on the
 *  monotonic clock. */
export function delayToBeat(delayMs: number, beatMs: number, now = performance.now()): number {
  return Math.ceil((now + delayMs) / beatMs) * beatMs - now;
}
