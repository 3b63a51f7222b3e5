import { describe, expect, it } from 'vitest';
import { WriteRate } from '../../src/db/write-rate.ts';

describe('WriteRate', () => {
  it('does not take one burst for a flood: the rate is over 5 s, also just after the start', () => {
    const rate = new WriteRate(1_500);
    expect(rate.sample(0, 0)).toBe(false);
    // 6,000 rows within a second is 1,200 a second over the 5 s window.
    expect(rate.sample(6_000, 1_000)).toBe(false);
    // Then quiet: the burst is spread over the window it falls in.
    expect(rate.sample(6_100, 6_000)).toBe(false);
  });

  it('takes writes held at the rate for the whole window for a flood, and lets it end once they slow down', () => {
    const rate = new WriteRate(1_500);
    rate.sample(0, 0);
    const flood: boolean[] = [];
    for (let second = 1; second <= 8; second++) flood.push(rate.sample(second * 2_000, second * 1_000));
    // 2,000 rows a second: below the rate until 7,500 rows have come, a flood from then on.
    expect(flood).toEqual([false, false, false, true, true, true, true, true]);
    // 100 rows a second for 5 s: the window holds only those.
    let changes = 16_000;
    let last = true;
    for (let second = 9; second <= 14; second++) last = rate.sample((changes += 100), second * 1_000);
    expect(last).toBe(false);
  });
});
