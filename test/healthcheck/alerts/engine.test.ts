/**
 * The alert engine (src/healthcheck/alerts/engine.ts) fed transitions by hand, with an in-memory runtime state and
 * a notifier that records: groups (group-wait, then group-interval), a flap before the group's notification, repeats
 * held back by an acknowledgement or a pause (counted), and a restart that sends what the records say is due.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StateCollection } from '../../../src/common/runtime-state.ts';
import { type AlertCheck, AlertEngine } from '../../../src/healthcheck/alerts/engine.ts';
import { Policies } from '../../../src/healthcheck/alerts/policy.ts';
import type { AlertRecord } from '../../../src/healthcheck/alerts/records.ts';
import { parseAlertPolicy } from '../../../src/healthcheck/kinds/alerting.ts';
import type { CheckState } from '../../../src/healthcheck/state-names.ts';
import type { Notification } from '../../../src/notify/notification.ts';
import { waitFor } from '../../helpers/wait.ts';

function memoryCollection<T>(initial: [string, T][] = []): StateCollection<T> {
  const map = new Map(initial);
  return {
    get: (key) => map.get(key),
    entries: () => map.entries(),
    get size() {
      return map.size;
    },
    put: async (key, value) => {
      map.set(key, value);
    },
    delete: async (key) => map.delete(key),
    onChange: () => () => undefined,
  };
}

/** Group waits and intervals run on the engine's timers: faked, a test moves the time itself, so that "not yet"
 *  is proved at an exact instant rather than by a pause. */
const fakeTimers = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
afterEach(() => {
  vi.useRealTimers();
});

function harness(policyInput: Parameters<typeof parseAlertPolicy>[0], records = memoryCollection<AlertRecord>()) {
  const states = new Map<string, CheckState>();
  const labels = (name: string) => ({ team: name.startsWith('a') ? 'a' : 'b' });
  const defs = new Map<string, AlertCheck['def']>();
  const def = (name: string) => {
    let one = defs.get(name);
    if (!one) defs.set(name, (one = { name, labels: labels(name) }));
    return one;
  };
  const sent: Notification[] = [];
  const suppressed: string[] = [];
  let now = 1_000_000;
  const engine = new AlertEngine({
    records,
    policies: new Policies({
      rules: [],
      externalUrl: null,
      maxAlerts: 1000,
      defaults: parseAlertPolicy({ notify: ['ops'], ...policyInput }),
    }),
    check: (name) => ({
      def: def(name),
      state: states.get(name) ?? 'up',
      lastS: Math.floor(now / 1000),
      sinceMs: 0,
      recoveryMs: 0,
      confirmMs: 30_000,
    }),
    checks: () => states.keys(),
    send: async (_notifier, notification) => {
      sent.push(notification);
      return 'sent';
    },
    ackUrl: () => null,
    acts: () => true,
    suppressed: (reason, count = 1) => suppressed.push(...Array<string>(count).fill(reason)),
    maxAlerts: () => 1000,
    onError: (error) => {
      throw error;
    },
    nowMs: () => now,
    sweepMs: 3_600_000,
  });
  const move = (name: string, to: CheckState) => {
    const from = states.get(name) ?? 'up';
    states.set(name, to);
    engine.transition(name, { from, to, atMs: now, message: `${name} ${to}` });
  };
  const sweep = () => (engine as unknown as { sweep(): void }).sweep();
  return {
    engine,
    records,
    sent,
    suppressed,
    move,
    sweep,
    setState: (name: string, state: CheckState) => states.set(name, state),
    advance: (ms: number) => (now += ms),
  };
}

describe('the alert engine', () => {
  it('tells a group once after group-wait, what follows after group-interval, and its recoveries together', async () => {
    fakeTimers();
    const h = harness({ 'group-by': ['team'], 'group-wait': '150ms', 'group-interval': '300ms' });
    h.engine.start();
    h.move('a1', 'down');
    h.move('a2', 'down');
    h.move('b1', 'down');
    await vi.advanceTimersByTimeAsync(50);
    h.move('a3', 'down');
    await h.engine.settled();
    expect(h.sent).toEqual([]);
    // The group-wait ends 150 ms after the first.
    await vi.advanceTimersByTimeAsync(99);
    await h.engine.settled();
    expect(h.sent).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await waitFor(() => h.sent.length === 2);
    const byTeam = Object.fromEntries(h.sent.map((one) => [(one.data.group as { team: string }).team, one]));
    expect((byTeam.a?.data.checks as { name: string }[]).map((c) => c.name)).toEqual(['a1', 'a2', 'a3']);
    expect(byTeam.a?.title).toBe('🔴 3 checks are down (team=a)');
    expect(h.suppressed.filter((reason) => reason === 'grouped')).toHaveLength(2);
    // A new one waits for the group's interval.
    h.move('a4', 'down');
    await vi.advanceTimersByTimeAsync(299);
    await h.engine.settled();
    expect(h.sent).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    await waitFor(() => h.sent.length === 3);
    for (const name of ['a1', 'a2', 'a3', 'a4']) h.move(name, 'up');
    await vi.advanceTimersByTimeAsync(300);
    await waitFor(() => h.sent.length === 4, { timeoutMs: 2000 });
    expect(h.sent[3]?.kind).toBe('resolved');
    expect((h.sent[3]?.data.checks as unknown[]).length).toBe(4);
    h.engine.stop();
  });

  it('tells nothing of a check down and up again before its group was told', async () => {
    fakeTimers();
    const h = harness({ 'group-by': ['team'], 'group-wait': '100ms' });
    h.engine.start();
    h.move('a1', 'down');
    h.move('a1', 'up');
    // Past the group-wait: the group's timer, if any, has fired.
    await vi.advanceTimersByTimeAsync(250);
    await h.engine.settled();
    expect(h.sent).toEqual([]);
    expect(h.records.size).toBe(0);
    h.engine.stop();
  });

  it('repeats a firing alert, but not an acknowledged or a paused one (counted)', async () => {
    const h = harness({ 'repeat-interval': '1m' });
    h.engine.start();
    h.move('a1', 'down');
    h.move('b1', 'down');
    h.move('b2', 'down');
    await waitFor(() => h.sent.length === 3);
    const record = h.records.get('a1') as AlertRecord;
    await h.records.put('a1', { ...record, ack: { by: 'token:ops', atMs: 0, comment: '' } });
    h.move('b2', 'paused');
    h.advance(61_000);
    h.sweep();
    await waitFor(() => h.sent.length === 4);
    await h.engine.settled();
    expect(h.sent[3]?.title).toContain('b1');
    expect(h.suppressed.sort()).toEqual(['acknowledged', 'paused']);
    h.engine.stop();
  });

  it('alerts on a degraded check once it stayed degraded failure-threshold runs', async () => {
    const h = harness({});
    h.engine.start();
    h.move('a1', 'degraded');
    h.move('a1', 'up');
    h.move('a2', 'degraded');
    h.advance(29_000);
    h.sweep();
    await h.engine.settled();
    expect(h.sent).toEqual([]);
    h.advance(1_000);
    h.sweep();
    await waitFor(() => h.sent.length === 1);
    expect(h.sent[0]?.title).toBe('🔴 a2 is degraded: a2 degraded');
    h.engine.stop();
  });

  it("tells what another node wrote and left unsent, once it is this node's to tell", async () => {
    const h = harness({});
    h.engine.start();
    h.setState('a1', 'down');
    await h.records.put('a1', {
      id: '0123456789abcdef',
      check: 'a1',
      sinceMs: 1_000,
      state: 'down',
      previous: 'pending',
      message: 'down',
      labels: { team: 'a' },
      sent: 0,
    });
    for (let i = 0; i < 10; i++) h.sweep();
    await waitFor(() => h.sent.length === 1);
    await h.engine.settled();
    for (let i = 0; i < 20; i++) h.sweep();
    await h.engine.settled();
    expect(h.sent).toHaveLength(1);
    expect(h.records.get('a1')?.sent).toBe(1);
    h.engine.stop();
  });

  it('drops the alert of a removed check, untold', async () => {
    const h = harness({});
    h.engine.start();
    h.move('a1', 'down');
    await waitFor(() => h.sent.length === 1);
    await h.engine.settled();
    h.engine.forget('a1');
    await h.engine.settled();
    expect(h.records.size).toBe(0);
    expect(h.sent).toHaveLength(1);
    h.engine.stop();
  });

  it('after a restart, sends the firing notification a crash left unsent, once', async () => {
    const unsent: AlertRecord = {
      id: '0123456789abcdef',
      check: 'a1',
      sinceMs: 1_000,
      state: 'down',
      previous: 'pending',
      message: 'down',
      labels: { team: 'a' },
      sent: 0,
    };
    const told: AlertRecord = {
      ...unsent,
      id: 'fedcba9876543210',
      check: 'b1',
      firingSentMs: 2_000,
      lastSentMs: 2_000,
      sent: 1,
    };
    const h = harness(
      {},
      memoryCollection<AlertRecord>([
        ['a1', unsent],
        ['b1', told],
      ]),
    );
    // The restored states are older than the alerts (results not written yet): they stay open.
    h.move('a1', 'pending');
    h.move('b1', 'pending');
    h.engine.start();
    await waitFor(() => h.sent.length === 1);
    await h.engine.settled();
    expect((h.sent[0]?.data.checks as { name: string }[])[0]?.name).toBe('a1');
    expect(h.records.get('a1')?.sent).toBe(1);
    h.move('b1', 'down');
    await h.engine.settled();
    expect(h.sent).toHaveLength(1);
    h.engine.stop();
  });
});
