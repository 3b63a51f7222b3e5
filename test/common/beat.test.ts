import { describe, expect, it, vi } from 'vitest';
import { beatAfter, everyBeat, gridOf, onBeat, SLOW_BEAT_MS } from '../../src/common/beat.ts';
import { waitFor } from '../helpers/wait.ts';

/** Resolves once a beat of `periodMs` has run `runs` times: proof that that much time went by on the grid. */
async function beatsPassed(periodMs: number, runs: number): Promise<void> {
  let ran = 0;
  const witness = everyBeat(periodMs, () => ran++);
  try {
    await waitFor(() => ran >= runs, { timeoutMs: 10_000, message: `${runs} beats of ${periodMs} ms` });
  } finally {
    witness.cancel();
  }
}

describe('the beat', () => {
  it('lands on the grid point nearest to the delay, after now', () => {
    expect(beatAfter(1_000, 1_000, 5_250)).toBe(6_000);
    expect(beatAfter(1_000, 1_000, 5_000)).toBe(6_000);
    // A timer that fired a fraction of a ms early, or a few ms late (as Node's do), lands one period on: a chain
    // of 2 s beats that took the first grid point past now + 2 s ran every 4 s.
    expect(beatAfter(1_000, 1_000, 5_999.6)).toBe(7_000);
    expect(beatAfter(2_000, 2_000, 4_008.8)).toBe(6_000);
    // A longer delay (the checkpoint's look backing off) lands on a grid point too.
    expect(beatAfter(4_000, 1_000, 5_250)).toBe(9_000);
    expect(beatAfter(16_000, 10_000, 20_003)).toBe(40_000);
    // Never now or before, however short the delay.
    expect(beatAfter(0, 10, 30)).toBe(40);
    expect(beatAfter(2, 10, 3)).toBe(10);
  });

  it('takes the slow grid for the multiples of its period, the beat for the multiples of 2 s', () => {
    expect(gridOf(10_000)).toBe(SLOW_BEAT_MS);
    expect(gridOf(60_000)).toBe(SLOW_BEAT_MS);
    expect(gridOf(4_000)).toBe(2_000);
    expect(gridOf(3_000)).toBe(3_000);
    expect(gridOf(250)).toBe(250);
  });

  it('runs periodic work of periods that divide one another at the same instants, whenever each started', () => {
    // On Node's clock and timers made exact (a loaded machine delays real timers by more than the period, which is
    // what the tests below take on): what this proves is where each run is aimed.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const short: number[] = [];
      const long: number[] = [];
      vi.advanceTimersByTime(37);
      const a = everyBeat(100, () => short.push(performance.now()));
      vi.advanceTimersByTime(130);
      // Started later with its own period, as the lock's refresh and the checkpoint rounds are: each of its runs is
      // on a point of the other's grid, so the process wakes once for both.
      const b = everyBeat(200, () => long.push(performance.now()));
      vi.advanceTimersByTime(1_000);
      a.cancel();
      b.cancel();
      expect(long.length).toBeGreaterThanOrEqual(4);
      for (const time of long) expect(short).toContain(time);
    } finally {
      vi.useRealTimers();
    }
  });

  it('runs periodic work once a period, not once every other period', async () => {
    const times: number[] = [];
    const periodic = everyBeat(100, () => times.push(performance.now()));
    await waitFor(() => times.length >= 8, { timeoutMs: 10_000 });
    periodic.cancel();
    // Eight runs span seven periods (700 ms); a chain that skipped one grid point each time spans 1,400 ms. Up to
    // two points missed under load are allowed.
    expect(times[7]! - times[0]!).toBeLessThan(950);
    for (const time of times) expect(Math.abs(time - Math.round(time / 100) * 100)).toBeLessThan(50);
    const count = times.length;
    // Once cancelled, it runs no more: two later points of its grid pass with nothing.
    await beatsPassed(100, 3);
    expect(times).toHaveLength(count);
  });

  it('waits the longest a Node timer can for a longer period, rather than 1 ms', async () => {
    let ran = 0;
    const periodic = everyBeat(30 * 86_400_000, () => ran++);
    // A 1 ms timer (what an overflowing delay becomes) would have run many times meanwhile.
    await beatsPassed(10, 5);
    periodic.cancel();
    expect(ran).toBe(0);
  });

  it('never runs cancelled work, and work may cancel work due in the same callback', async () => {
    const ran: string[] = [];
    const grid = 100;
    const at = beatAfter(grid * 2, grid) - performance.now();
    const cancelled = onBeat(at, () => ran.push('cancelled'), grid);
    cancelled.cancel();
    let second: { cancel(): void } | null = null;
    onBeat(
      at,
      () => {
        ran.push('first');
        second?.cancel();
      },
      grid,
    );
    second = onBeat(at, () => ran.push('second'), grid);
    const periodic = everyBeat(grid, () => {
      ran.push('periodic');
      periodic.cancel();
    });
    await waitFor(() => ran.includes('first') && ran.includes('periodic'), { timeoutMs: 10_000 });
    // Two more grid points pass: a cancelled or second run would have come by then.
    await beatsPassed(grid, 2);
    expect(ran.filter((name) => name !== 'periodic')).toEqual(['first']);
    expect(ran.filter((name) => name === 'periodic')).toHaveLength(1);
  });
});
