/**
 * Periodic work on a shared beat: the service's once-a-second timers (the scheduler's 1 s start tick, the result
 * writes, the WAL checkpoint's look) fire on whole seconds of `performance.now()`, so that they wake the process
 * once a second together instead of each at its own phase (docs/performance.md, "One wake-up a second").
 */

/** The delay, at least `delayMs`, to the next whole multiple of `beatMs` (the service's timers: 1,000) on the
 *  monotonic clock. */
export function delayToBeat(delayMs: number, beatMs: number, now = performance.now()): number {
  return Math.ceil((now + delayMs) / beatMs) * beatMs - now;
}
