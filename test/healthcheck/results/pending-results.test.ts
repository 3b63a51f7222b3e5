import { describe, expect, it } from 'vitest';
import { PendingResults } from '../../../src/healthcheck/results/pending-results.ts';
import type { CheckResult } from '../../../src/healthcheck/result-types.ts';

const HOUR = 3_600;
const CAPS = { maxResults: 1_000, maxBytes: 64 * 1024 * 1024 };

function result(name: string, atS: number, success: boolean, duration: number): CheckResult {
  return {
    name,
    summary: name,
    success,
    'healthcheck-timestamp': atS,
    message: success ? 'success' : 'down',
    duration,
    source: 'configuration',
  };
}

/** What the result store does once a check's group is written: takes every raw result, then forgets the check. */
function write(pending: PendingResults, name: string): CheckResult[] {
  const check = pending.get(name);
  if (check === undefined) throw new Error(`${name} has nothing waiting`);
  const taken = pending.takeOldest(check, Infinity);
  pending.remove(name);
  return taken;
}

describe('the pending results', () => {
  it('gives a check that starts waiting nothing of the checks written before it', () => {
    const pending = new PendingResults(10, CAPS, () => undefined);
    pending.add(result('a', 10 * HOUR + 5, true, 7));
    pending.add(result('a', 11 * HOUR + 5, false, 9));
    expect(write(pending, 'a').map((r) => r.duration)).toEqual([7, 9]);
    expect(pending.get('a')).toBeUndefined();
    expect(pending.size).toBe(0);

    pending.add(result('b', 20 * HOUR + 1, false, 3));
    const b = pending.get('b');
    expect(b?.results.map((r) => r.name)).toEqual(['b']);
    expect(b?.sinceS).toBe(20 * HOUR + 1);
    expect(b?.latest.name).toBe('b');
    expect(pending.hoursOf('b')).toEqual([{ hour: 20 * HOUR, runs: 1, successes: 0, totalMs: 3, minMs: 3, maxMs: 3 }]);
    expect(pending.hoursOf('a')).toEqual([]);
    expect(pending.size).toBe(1);
  });

  it("keeps the rest of a check's waiting results when it is written in steps", () => {
    const pending = new PendingResults(10, CAPS, () => undefined);
    for (let i = 0; i < 5; i++) pending.add(result('a', HOUR + i, true, i));
    const check = pending.get('a');
    if (check === undefined) throw new Error('a has nothing waiting');
    expect(pending.takeOldest(check, 2).map((r) => r.duration)).toEqual([0, 1]);
    expect(check.results.map((r) => r.duration)).toEqual([2, 3, 4]);
    expect(pending.size).toBe(3);
    const rest = pending.takeOldest(check, 256);
    expect(rest.map((r) => r.duration)).toEqual([2, 3, 4]);
    expect(check.results).toEqual([]);
    expect(pending.size).toBe(0);
  });

  it('holds at most maxBytes of messages: past it a result folds into the aggregates, counted pending_bytes', () => {
    const folded: string[] = [];
    // Room for three messages of 1,000 characters (2,000 bytes each).
    const pending = new PendingResults(100, { maxResults: 1_000, maxBytes: 6_500 }, (reason) => folded.push(reason));
    const report = (name: string, atS: number) => ({ ...result(name, atS, false, 1), message: 'x'.repeat(1_000) });
    for (let i = 0; i < 3; i++) pending.add(report('a', HOUR + i));
    expect(pending.bytes).toBe(6_000);
    expect(pending.full).toBe(false);
    // The fourth takes the place of a's oldest; a check with none waiting keeps no raw result.
    pending.add(report('a', HOUR + 3));
    pending.add(report('b', HOUR + 4));
    expect(folded).toEqual(['pending_bytes', 'pending_bytes']);
    expect(pending.bytes).toBe(6_000);
    expect(pending.get('a')?.results.map((r) => r['healthcheck-timestamp'])).toEqual([HOUR + 1, HOUR + 2, HOUR + 3]);
    expect(pending.get('b')?.results).toEqual([]);
    // What did not fit starts the writes, as the cap in results does.
    expect(pending.full).toBe(true);
    expect(pending.hoursOf('a')[0]?.runs).toBe(4);
    expect(pending.hoursOf('b')[0]?.runs).toBe(1);
    // A short message still fits.
    pending.add({ ...result('c', HOUR + 5, true, 1), message: 'ok'.repeat(100) });
    expect(pending.get('c')?.results).toHaveLength(1);
    write(pending, 'a');
    expect(pending.bytes).toBe(400);
    expect(pending.full).toBe(false);
  });
});
