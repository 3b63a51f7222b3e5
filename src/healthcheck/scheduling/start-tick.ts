/**
 * The start tick in force (src/healthcheck/scheduling/scheduler.ts runs checks on its grid): the configured one
 * (`healthchecks.start-tick`), or with `auto` the longest of 2 s, 1 s, 500 ms and 250 ms that fits the runs due and
 * the intervals, and in either case no more than a quarter of the shortest interval.
 */

/** The narrowest tick a short interval brings: the default start tick before it was 250 ms. */
const NARROWEST_TICK_MS = 50;
/**
 * An automatic tick carries at most this many runs: as many as a tick of 12,000 checks at 10 s carried with the fixed
 * 250 ms tick before it. Each tick costs its wake-ups whatever it starts, and a small deployment paid for four
 * ticks a second (bench/JOURNAL.md, "An automatic start tick", "A two-second tick").
 */
const AUTO_TICK_RUNS = 300;
/**
 * The automatic ticks, longest first. The 2 s tick is taken only when every interval is a whole number of it; the
 * others divide a second. So the checks at whole seconds, nearly all of them, stay on the grid whichever is in
 * force and never wait for a tick.
 */
const AUTO_TICKS_MS = [2000, 1000, 500, 250];

/**
 * The tick for checks with these intervals (interval in ms → how many checks have it).
 *
 * A tick longer than a check's interval would make it run once a tick, fewer times than asked: the tick in force
 * is at most a quarter of the shortest interval (so a 100 ms check still runs every 100 ms under a 250 ms tick),
 * but never below NARROWEST_TICK_MS (or the configured tick, if lower): there is no minimum interval, and a check
 * at `interval: 1ms` would otherwise run a thousand times a second and take every other check's batching away.
 */
export function tickInForce(configured: number | 'auto', intervals: ReadonlyMap<number, number>): number {
  let shortest = Infinity;
  let runsPerMs = 0;
  for (const [interval, count] of intervals) {
    if (interval < shortest) shortest = interval;
    runsPerMs += count / interval;
  }
  const tick = configured === 'auto' ? autoTick(runsPerMs, shortest, intervals) : configured;
  return tick > 0 && shortest < tick * 4 ? Math.max(Math.min(tick, NARROWEST_TICK_MS), Math.floor(shortest / 4)) : tick;
}

/**
 * The automatic tick: the longest that carries at most AUTO_TICK_RUNS, is at most a quarter of the shortest
 * interval (a quarter of 3 s, 750 ms, would not divide a second: 500 ms does), and, over a second, divides every
 * interval. Else the shortest, which tickInForce narrows for an interval under a second.
 */
function autoTick(runsPerMs: number, shortest: number, intervals: ReadonlyMap<number, number>): number {
  for (const tick of AUTO_TICKS_MS) {
    if (runsPerMs * tick > AUTO_TICK_RUNS || shortest < tick * 4) continue;
    if (tick > 1000 && !everyIntervalMultipleOf(tick, intervals)) continue;
    return tick;
  }
  return AUTO_TICKS_MS[AUTO_TICKS_MS.length - 1] as number;
}

function everyIntervalMultipleOf(tick: number, intervals: ReadonlyMap<number, number>): boolean {
  for (const interval of intervals.keys()) if (interval % tick !== 0) return false;
  return true;
}
