/**
 * Silent members (src/cluster/membership/silent-members.ts) on a fake clock: a member is judged over what it owes as
 * this node sees it now, from when it began to owe it, and only while this node can trust its view; the end-to-end
 * case, with a real nats-server and a forged member, is in test/e2e/cluster-voice.test.ts.
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { dutiesOf, SilentMemberMetrics, SilentMembers } from '../../../src/cluster/membership/silent-members.ts';

const TTL_MS = 2_000;
/** What every test's member owes: a result every 1 s + 1 s. */
const PERIOD_MS = 2_000;
const BOUND_MS = 3 * TTL_MS + PERIOD_MS;

function tracker(duties: Map<string, number>) {
  const registry = new Registry();
  let judging = true;
  const changes: string[] = [];
  const silent = new SilentMembers({
    self: 'node-a',
    ttlMs: TTL_MS,
    duties: () => duties,
    judging: () => judging,
    changed: (why) => changes.push(why),
    metrics: new SilentMemberMetrics(registry),
    logger: pino({ level: 'silent' }),
  });
  const gauge = async () =>
    Object.fromEntries(
      (await registry.getSingleMetric('cluster_member_silent')?.get())?.values.map((value) => [
        value.labels.node,
        value.value,
      ]) ?? [],
    );
  return { silent, changes, gauge, setJudging: (value: boolean) => (judging = value) };
}

describe('silent members', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reports a member that owes results and publishes none past 3 × member-ttl beyond its period, until it is heard', async () => {
    const { silent, changes, gauge } = tracker(new Map([['node-b', PERIOD_MS]]));
    silent.members(['node-a', 'node-b']);
    silent.start();
    expect(await gauge()).toEqual({ 'node-b': 0 });
    // Heard just before each bound: never silent.
    for (let i = 0; i < 3; i++) {
      vi.advanceTimersByTime(BOUND_MS - 1_000);
      silent.heard('node-b');
    }
    expect(silent.isSilent('node-b')).toBe(false);
    vi.advanceTimersByTime(BOUND_MS + 1_000);
    expect(silent.isSilent('node-b')).toBe(true);
    expect(await gauge()).toEqual({ 'node-b': 1 });
    expect(changes).toEqual(['member(s) node-b silent']);
    silent.heard('node-b');
    expect(silent.isSilent('node-b')).toBe(false);
    expect(await gauge()).toEqual({ 'node-b': 0 });
    expect(changes.at(-1)).toBe('member node-b heard again');
    silent.stop();
  });

  it('judges nobody who owes nothing, and a shorter duty only from when it began', () => {
    const duties = new Map<string, number>();
    const { silent } = tracker(duties);
    silent.members(['node-a', 'node-b']);
    silent.start();
    // node-b owns nothing for a long while, then a check every hour: judged over the hour.
    vi.advanceTimersByTime(10 * BOUND_MS);
    expect(silent.isSilent('node-b')).toBe(false);
    duties.set('node-b', 3_600_000);
    vi.advanceTimersByTime(10 * BOUND_MS);
    expect(silent.isSilent('node-b')).toBe(false);
    // Then a check every 2 s: the bound counts from now, not from the hour's start.
    duties.set('node-b', PERIOD_MS);
    vi.advanceTimersByTime(BOUND_MS - 1_000);
    expect(silent.isSilent('node-b')).toBe(false);
    // Judged once a second (member-ttl / 2 at least 1 s): the change is seen at the next tick.
    vi.advanceTimersByTime(3_000);
    expect(silent.isSilent('node-b')).toBe(true);
    silent.stop();
  });

  it('judges nobody while this node cannot trust its view, and starts every bound afresh after', () => {
    const { silent, setJudging } = tracker(new Map([['node-b', PERIOD_MS]]));
    silent.members(['node-a', 'node-b']);
    silent.start();
    vi.advanceTimersByTime(1_000);
    setJudging(false);
    vi.advanceTimersByTime(3 * BOUND_MS);
    expect(silent.isSilent('node-b')).toBe(false);
    setJudging(true);
    vi.advanceTimersByTime(BOUND_MS - 1_000);
    expect(silent.isSilent('node-b')).toBe(false);
    // Judged once a second (member-ttl / 2 at least 1 s): the change is seen at the next tick.
    vi.advanceTimersByTime(3_000);
    expect(silent.isSilent('node-b')).toBe(true);
    silent.stop();
  });

  it('forgets a member that leaves, and never judges itself', async () => {
    const { silent, gauge } = tracker(
      new Map([
        ['node-a', PERIOD_MS],
        ['node-b', PERIOD_MS],
      ]),
    );
    silent.members(['node-a', 'node-b']);
    silent.start();
    vi.advanceTimersByTime(2 * BOUND_MS);
    expect(silent.isSilent('node-a')).toBe(false);
    expect(silent.isSilent('node-b')).toBe(true);
    silent.members(['node-a']);
    expect(silent.isSilent('node-b')).toBe(false);
    expect(await gauge()).toEqual({});
    silent.stop();
  });
});

describe('dutiesOf', () => {
  it("is each other runner's shortest interval plus timeout; heartbeat and one-off checks owe nothing", () => {
    const check = (name: string, intervalS: number, extra: Partial<{ kind: string; oneOff: boolean }> = {}) => ({
      name,
      kind: 'http',
      intervalNs: intervalS * 1e9,
      timeoutNs: 1e9,
      oneOff: false,
      ...extra,
    });
    const runners: Record<string, string[]> = {
      slow: ['node-b'],
      fast: ['node-b', 'node-c'],
      mine: ['node-a'],
      beat: ['node-c'],
      once: ['node-c'],
    };
    const duties = dutiesOf(
      [
        check('slow', 60),
        check('fast', 5),
        check('mine', 1),
        check('beat', 1, { kind: 'heartbeat' }),
        check('once', 1, { oneOff: true }),
      ],
      (c) => runners[c.name] ?? [],
      'node-a',
      () => false,
    );
    expect(Object.fromEntries(duties)).toEqual({ 'node-b': 6_000, 'node-c': 6_000 });
  });

  it('a paused check owes nothing: its owner runs it not, and must not be reported silent for it', () => {
    const check = (name: string) => ({ name, kind: 'tcp', intervalNs: 1e9, timeoutNs: 1e9, oneOff: false });
    const duties = dutiesOf(
      [check('paused-on-b'), check('running-on-c')],
      (c) => (c.name === 'paused-on-b' ? ['node-b'] : ['node-c']),
      'node-a',
      (c) => c.name === 'paused-on-b',
    );
    expect(Object.fromEntries(duties)).toEqual({ 'node-c': 2_000 });
  });
});
