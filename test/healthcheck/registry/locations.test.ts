/**
 * A check's state from its locations' latest results (src/healthcheck/registry/locations.ts, docs/checks.md
 * "Locations"): it fails when at least `quorum` chosen locations fail, and only the first-ranked chosen node exports a
 * change, once.
 */
import { describe, expect, it } from 'vitest';
import type { LocationSpec } from '../../../src/healthcheck/kinds/locations.ts';
import { type LocatedCheck, quorumOf, trackLocations } from '../../../src/healthcheck/registry/locations.ts';
import type { CheckResult, HistoryEntry } from '../../../src/healthcheck/result-types.ts';

const ALL: LocationSpec = { count: 'all', nodeLabels: {} };

/** `null`: a check without locations. */
function located(locations: LocationSpec | null = ALL): LocatedCheck {
  return {
    def: { name: 'web', ...(locations ? { locations } : {}) },
    summary: 'HTTP healthcheck on web:80',
    labels: { env: 'prod' },
    source: 'api',
  };
}

let clock = 1_000;
function result(node: string | undefined, success: boolean, duration = 10): CheckResult {
  return {
    name: 'web',
    summary: 'HTTP healthcheck on web:80',
    labels: { env: 'prod' },
    success,
    'healthcheck-timestamp': clock++,
    message: success ? 'success' : `down from ${node}`,
    duration,
    source: 'api',
    ...(node !== undefined ? { node } : {}),
  };
}

/** A tracker as node `self` of a cluster whose chosen nodes for the check are `chosen`. */
function tracker(self: string | undefined, chosen: readonly string[] = ['a', 'b', 'c'], history: HistoryEntry[] = []) {
  return trackLocations({ node: self, chosen: () => chosen, history: () => history });
}

describe('quorumOf', () => {
  it('is a majority of the chosen locations by default, and never more than there are', () => {
    expect([1, 2, 3, 4, 5].map((n) => quorumOf(ALL, n))).toEqual([1, 2, 2, 3, 3]);
    expect(quorumOf({ ...ALL, quorum: 1 }, 3)).toBe(1);
    expect(quorumOf({ count: 5, nodeLabels: {}, quorum: 4 }, 2)).toBe(2);
    expect(quorumOf(ALL, 0)).toBe(0);
  });
});

describe('a check run from several places', () => {
  it('fails when quorum locations fail, not before, and the first-ranked node exports each change once', () => {
    const onA = tracker('a');
    const onB = tracker('b');
    const check = located();
    const steps: [CheckResult, boolean, boolean, boolean][] = [
      // result, ran on a, expected state, exported by a
      [result('a', true), true, true, true],
      [result('b', false), false, true, false],
      [result('c', false), false, false, true],
      [result('c', false), false, false, false],
      [result('a', false), true, false, false],
      [result('b', true), false, false, false],
      [result('c', true), false, true, true],
    ];
    let previousA: CheckResult | undefined;
    let previousB: CheckResult | undefined;
    for (const [each, ranOnA, up, exportedByA] of steps) {
      const a = onA.observe(check, each, ranOnA, previousA);
      const b = onB.observe(check, each, each.node === 'b', previousB);
      expect(a.state.success, JSON.stringify(each)).toBe(up);
      expect(b.state.success).toBe(up);
      expect(a.exported, JSON.stringify(each)).toBe(exportedByA);
      expect(b.exported).toBe(false);
      previousA = a.state;
      previousB = b.state;
    }
  });

  it('states how many locations fail and why, and lists each location with its latest result', () => {
    const onA = tracker('a');
    const check = located();
    onA.observe(check, result('a', true, 12), true, undefined);
    onA.observe(check, result('b', false, 30), false, undefined);
    const view = onA.observe(check, result('c', false, 40), false, undefined);
    expect(view.state).toMatchObject({
      name: 'web',
      summary: 'HTTP healthcheck on web:80',
      labels: { env: 'prod' },
      success: false,
      message: '2 of 3 locations failing (quorum 2): b: down from b; c: down from c',
      duration: 40,
      source: 'api',
      quorum: 2,
    });
    expect(view.state).not.toHaveProperty('node');
    expect(view.state.locations).toEqual([
      { node: 'a', success: true, 'healthcheck-timestamp': expect.any(Number), message: 'success', duration: 12 },
      { node: 'b', success: false, 'healthcheck-timestamp': expect.any(Number), message: 'down from b', duration: 30 },
      { node: 'c', success: false, 'healthcheck-timestamp': expect.any(Number), message: 'down from c', duration: 40 },
    ]);
    // A chosen location that has not reported yet is listed without a result, and counts neither way.
    const fresh = tracker('a', ['a', 'b', 'c']).observe(check, result('b', false), false, undefined);
    expect(fresh.state.success).toBe(true);
    expect(fresh.state.locations?.map((location) => [location.node, location.success])).toEqual([
      ['a', undefined],
      ['b', false],
      ['c', undefined],
    ]);
  });

  it('counts only the chosen locations, and keeps the newest result of each', () => {
    const onA = tracker('a', ['a', 'b']);
    const check = located({ count: 2, nodeLabels: {} });
    // d is not chosen (no longer, or its labels do not match): its failures count for nothing.
    expect(onA.observe(check, result('d', false), false, undefined).state.success).toBe(true);
    const newer = result('b', true);
    const older = { ...result('b', false), 'healthcheck-timestamp': newer['healthcheck-timestamp'] - 10 };
    onA.observe(check, newer, false, undefined);
    const view = onA.observe(check, older, false, undefined);
    expect(view.state.locations?.find((location) => location.node === 'b')?.success).toBe(true);
    expect(view.state.success).toBe(true);
  });

  it('with a quorum of 1, fails on any location failing', () => {
    const onA = tracker('a');
    const view = onA.observe(located({ ...ALL, quorum: 1 }), result('c', false), false, undefined);
    expect(view.state.success).toBe(false);
    expect(view.state.message).toBe('1 of 3 locations failing (quorum 1): c: down from c');
  });

  it('picks up after a restart: the latest results in the history count, and the state restored is the previous one', () => {
    const history: HistoryEntry[] = [
      { name: 'web', success: false, 'healthcheck-timestamp': 900, message: 'down from c', duration: 5, node: 'c' },
      { name: 'web', success: false, 'healthcheck-timestamp': 899, message: 'down from b', duration: 5, node: 'b' },
      { name: 'web', success: true, 'healthcheck-timestamp': 850, message: 'success', duration: 5, node: 'b' },
    ];
    const onA = tracker('a', ['a', 'b', 'c'], history);
    const restored = { ...result(undefined, false), message: '2 of 3 locations failing (quorum 2): ...' };
    const view = onA.observe(located(), result('a', true), true, restored);
    expect(view.state.success).toBe(false);
    // Still failing: no change to export.
    expect(view.exported).toBe(false);
  });

  it('keeps the previous state and exports nothing while no location is chosen (no member eligible, not joined yet)', () => {
    const onA = tracker('a', []);
    const previous = result(undefined, true);
    const view = onA.observe(located(), result('b', false), false, previous);
    expect(view.state).toBe(previous);
    expect(view.exported).toBe(false);
  });

  it('is each result as it comes for a check without locations, and for every check of a single node', () => {
    const inCluster = tracker('a');
    const own = result('a', false);
    expect(inCluster.observe(located(null), own, true, undefined)).toEqual({ state: own, exported: true });
    expect(inCluster.observe(located(null), result('b', false), false, undefined).exported).toBe(false);
    const single = tracker(undefined);
    const mine = result(undefined, false);
    expect(single.observe(located(), mine, true, undefined)).toEqual({ state: mine, exported: true });
  });
});
