import { describe, expect, it } from 'vitest';
import { delayToBeat } from '../../src/common/beat.ts';

describe('the beat', () => {
  it('waits at least the delay, to the next whole multiple of the beat', () => {
    expect(delayToBeat(1_000, 1_000, 5_250)).toBe(1_750);
    expect(delayToBeat(1_000, 1_000, 5_000)).toBe(1_000);
    // A timer that fired a fraction of a ms early does not fire again on the same beat.
    expect(delayToBeat(1_000, 1_000, 5_999.6)).toBeCloseTo(1_000.4);
    // A longer delay (the checkpoint's look backing off) lands on a beat too.
    expect(delayToBeat(4_000, 1_000, 5_250)).toBe(4_750);
    expect(delayToBeat(10, 10, 3)).toBe(17);
  });
});
