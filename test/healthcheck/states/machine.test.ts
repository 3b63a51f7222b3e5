/**
 * The state machine of one check (src/healthcheck/states/machine.ts), fed sequences of results: thresholds, the
 * first state of a new check, degraded runs, maintenance and pause, replayed results.
 */
import { describe, expect, it } from 'vitest';
import { type CheckState, StateMachine, type Thresholds } from '../../../src/healthcheck/states/machine.ts';

const DEFAULTS: Thresholds = { failure: 3, success: 2 };

/** A run: `ok`, `fail`, `slow` (a success that crossed a degraded condition), `maint` (a failure in maintenance). */
type Run = 'ok' | 'fail' | 'slow' | 'maint';

/** Feeds the runs one second apart, after what the machine was fed; returns the shown state after each, and the
 *  transitions. */
function feed(runs: readonly Run[], thresholds = DEFAULTS, machine = new StateMachine(0)) {
  const states: CheckState[] = [];
  const transitions: string[] = [];
  const first = Math.max(100, machine.lastS + 1);
  runs.forEach((run, i) => {
    const from = machine.observe(
      run === 'ok' || run === 'slow',
      run === 'slow',
      run === 'maint',
      run === 'fail' ? `failure ${i}` : 'success',
      first + i,
      (first + i) * 1000,
      thresholds,
    );
    if (from !== undefined) transitions.push(`${from}->${machine.state}`);
    states.push(machine.state);
  });
  return { states, transitions, machine };
}

describe('the state of a check from its results', () => {
  it('is pending before the first result, up at the first success', () => {
    const machine = new StateMachine(5000);
    expect(machine.state).toBe('pending');
    expect(machine.sinceMs).toBe(5000);
    expect(feed(['ok'], DEFAULTS, machine).transitions).toEqual(['pending->up']);
    expect(machine.sinceMs).toBe(100_000);
  });

  it('goes down after failure-threshold failures in a row, and back up after success-threshold successes', () => {
    const { states, transitions } = feed(['ok', 'fail', 'fail', 'fail', 'fail', 'ok', 'ok', 'ok']);
    expect(states).toEqual(['up', 'pending', 'pending', 'down', 'down', 'down', 'up', 'up']);
    expect(transitions).toEqual(['pending->up', 'up->pending', 'pending->down', 'down->up']);
  });

  it('never goes down while failing one run in four', () => {
    const runs: Run[] = [];
    for (let i = 0; i < 40; i++) runs.push(i % 4 === 0 ? 'fail' : 'ok');
    const { states } = feed(runs);
    expect(states).not.toContain('down');
    expect(new Set(states)).toEqual(new Set(['pending', 'up']));
  });

  it('keeps the first failing message of a streak for the change to down', () => {
    const { machine } = feed(['ok', 'fail', 'fail']);
    expect(machine.failingMessage).toBe('failure 1');
    feed(['fail'], DEFAULTS, machine);
    expect(machine.state).toBe('down');
    expect(machine.failingMessage).toBe('failure 1');
  });

  it('counts a new check failing from the start towards down', () => {
    expect(feed(['fail', 'fail', 'fail']).states).toEqual(['pending', 'pending', 'down']);
  });

  it('a success breaks the recovery: down again needs success-threshold successes in a row', () => {
    expect(feed(['fail', 'fail', 'fail', 'ok', 'fail', 'ok', 'ok']).states).toEqual([
      'pending',
      'pending',
      'down',
      'down',
      'down',
      'down',
      'up',
    ]);
  });

  it('takes the thresholds given: 1 and 1 follow each run', () => {
    expect(feed(['ok', 'fail', 'ok'], { failure: 1, success: 1 }).states).toEqual(['up', 'down', 'up']);
  });

  it('is degraded for a successful run that crossed a condition, up again at the next normal one', () => {
    const { states, transitions } = feed(['ok', 'slow', 'slow', 'ok', 'fail', 'slow']);
    expect(states).toEqual(['up', 'degraded', 'degraded', 'up', 'pending', 'degraded']);
    expect(transitions).toContain('up->degraded');
  });

  it('comes back from down as degraded when the recovering run is degraded', () => {
    expect(feed(['fail', 'fail', 'fail', 'slow', 'slow']).states.at(-1)).toBe('degraded');
  });

  it('shows maintenance for results in a window, which count towards nothing', () => {
    const { states } = feed(['ok', 'fail', 'fail', 'maint', 'maint', 'fail']);
    expect(states).toEqual(['up', 'pending', 'pending', 'maintenance', 'maintenance', 'down']);
  });

  it('shows paused over everything, and the state of its results when resumed', () => {
    const { machine } = feed(['fail', 'fail', 'fail']);
    expect(machine.setPaused(true, 200_000)).toBe('down');
    expect(machine.state).toBe('paused');
    expect(machine.sinceMs).toBe(200_000);
    expect(machine.setPaused(false, 300_000)).toBe('paused');
    expect(machine.state).toBe('down');
    expect(machine.sinceMs).toBe(300_000);
  });

  it('ignores a result older than the newest it was fed (a replay)', () => {
    const machine = new StateMachine(0);
    machine.observe(true, false, false, 'success', 200, 200_000, DEFAULTS);
    expect(machine.observe(false, false, false, 'late', 150, 150_000, DEFAULTS)).toBeUndefined();
    expect(machine.streak).toBe(1);
  });
});
