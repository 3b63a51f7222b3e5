/**
 * The alerts of the checks (docs/alerting.md), fed the checks' changes of state (`CheckStates.onTransition`):
 *
 * - a check that goes `down` (after `failure-threshold` failures) or `degraded` opens an alert, unless a check it
 *   `depends-on` is down or failing (then the alert is held back, `suppressed`, and never told); it closes when the
 *   check comes back (`up`, after `success-threshold` successes), with a recovery when its firing was told;
 * - alerts are told per group: without `group-by` each on its own, at once; with it, the group's new alerts wait
 *   `group-wait` (the first) or `group-interval` (the next ones) and go out as one notification, as do recoveries;
 * - a firing alert is told again every `repeat-interval` until acknowledged, paused or in maintenance.
 *
 * What was told is kept in the alert records (records.ts) before and after each send, so that a restart, even after
 * kill -9, sends what was due and nothing twice. Work on one check is serialised (a down and an up in one tick keep
 * their order). In a cluster, only the node that `acts` for a check tells of it.
 */
import type { Notification, SendOutcome } from '../../notify/notification.ts';
import type { StateCollection } from '../../common/runtime-state.ts';
import type { CheckState } from '../state-names.ts';
import type { Transition } from '../states/check-states.ts';
import { buildNotification } from './messages.ts';
import { type EffectivePolicy, groupKey, groupLabels, type Policies, type PolicyCheck } from './policy.ts';
import { type AlertRecord, alertId } from './records.ts';

/** What the engine sees of a check: its definition and its current state. */
export interface AlertCheck {
  readonly def: PolicyCheck & { readonly dependsOn?: readonly string[] };
  readonly state: CheckState | undefined;
  /** Its newest result's time (Unix s), -1 before any. */
  readonly lastS: number;
  /** When its state began, ms. */
  readonly sinceMs: number;
  /** How long its recovery takes (`success-threshold` runs and one more): the grace of its dependants. */
  readonly recoveryMs: number;
  /** How long it must stay `degraded` to alert (`failure-threshold` runs): one slow run is not an alert. */
  readonly confirmMs: number;
}

type SuppressReason = 'depends-on' | 'maintenance' | 'paused' | 'grouped' | 'acknowledged' | 'max-alerts';

export interface AlertEngineOptions {
  records: StateCollection<AlertRecord>;
  policies: Policies;
  check: (name: string) => AlertCheck | undefined;
  /** Every check this node knows (the reconciliation at start). */
  checks: () => Iterable<string>;
  send: (notifier: string, notification: Notification) => Promise<SendOutcome>;
  ackUrl: (alert: AlertRecord) => string | null;
  /** Whether this node tells of a check (its owner in a cluster). */
  acts: (name: string) => boolean;
  suppressed: (reason: SuppressReason, count?: number) => void;
  maxAlerts: () => number;
  onError: (error: unknown) => void;
  nowMs?: () => number;
  /** How often repeats are looked for (default 1 s). */
  sweepMs?: number;
}

const ALERTING = new Set<CheckState>(['down', 'degraded']);
/** A dependency down, or failing towards it (a dependant often fails first). */
const failing = (state: CheckState | undefined) => state === 'down' || state === 'pending';
/** Sweeps between two looks for alerts another node wrote (10 s at the default sweep). */
const ADOPT_EVERY = 10;
const RECOVERED = new Set<CheckState>(['up']);

interface Group {
  /** The open alerts of the group (by check). */
  readonly open: Set<string>;
  /** Those with something to tell. */
  readonly due: Set<string>;
  timer: NodeJS.Timeout | null;
  lastFlushMs: number;
  labels: Record<string, string>;
}

export class AlertEngine {
  private readonly groups = new Map<string, Group>();
  private readonly groupOf = new Map<string, string>();
  private readonly serial = new Map<string, Promise<void>>();
  private readonly counted = new Map<string, number>();
  /** Alerts the sweep looks at besides repeats: those held back, and those restored at start (whose check's state may
   *  be older than them). Alerts opened by a transition are closed by one. */
  private readonly watched = new Set<string>();
  /** Checks degraded without an alert yet, with the change that made them so. */
  private readonly degraded = new Map<string, Transition>();
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeps = 0;
  private readonly nowMs: () => number;

  constructor(private readonly options: AlertEngineOptions) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** The listener of `CheckStates.onTransition`: returns at once. */
  readonly transition = (name: string, transition: Transition): void => {
    if (!this.options.acts(name)) return;
    this.degraded.delete(name);
    // Degraded runs decide one by one: the alert waits until the check stayed degraded `failure-threshold` runs.
    if (transition.to === 'degraded' && this.options.records.get(name) === undefined)
      this.degraded.set(name, transition);
    else if (ALERTING.has(transition.to)) this.enqueue(name, () => this.open(name, transition));
    else if (RECOVERED.has(transition.to)) this.enqueue(name, () => this.close(name, transition.atMs));
  };

  /** A check was removed: its alert goes, untold (there is no check to come back). */
  readonly forget = (name: string): void => {
    if (!this.options.acts(name) && this.options.records.get(name) === undefined) return;
    this.enqueue(name, async () => {
      this.untrack(name);
      this.watched.delete(name);
      if (this.options.records.get(name) !== undefined) await this.options.records.delete(name);
    });
  };

  /** What the records say is due is told (after a restart), and the checks whose alert a crash lost open theirs. */
  start(): void {
    const { records } = this.options;
    for (const [name, record] of records.entries()) {
      const check = this.options.check(name);
      // A check removed while the service was stopped: its alert goes, untold (no check to come back).
      if (check === undefined) this.enqueue(name, () => records.delete(name).then(() => undefined));
      if (check === undefined || !this.options.acts(name)) continue;
      const recovered = check.state !== undefined && RECOVERED.has(check.state) && check.lastS * 1000 > record.sinceMs;
      if (recovered && record.resolvedMs === undefined) this.enqueue(name, () => this.close(name, check.lastS * 1000));
      else {
        this.track(name, record);
        this.watched.add(name);
      }
    }
    for (const name of this.options.checks()) {
      const check = this.options.check(name);
      if (check?.state === 'down' && records.get(name) === undefined && this.options.acts(name))
        this.enqueue(name, () => this.open(name, { from: 'pending', to: 'down', atMs: this.nowMs(), message: '' }));
    }
    this.sweepTimer = setInterval(() => this.sweep(), this.options.sweepMs ?? 1000).unref();
  }

  stop(): void {
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    for (const group of this.groups.values()) if (group.timer !== null) clearTimeout(group.timer);
    this.groups.clear();
    this.groupOf.clear();
  }

  /** Resolves once the work queued so far is done (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.serial.size > 0) await Promise.all(this.serial.values());
  }

  private enqueue(name: string, work: () => Promise<void>): void {
    const previous = this.serial.get(name) ?? Promise.resolve();
    const next = previous.then(work).catch(this.options.onError);
    this.serial.set(name, next);
    void next.then(() => {
      if (this.serial.get(name) === next) this.serial.delete(name);
    });
  }

  private async open(name: string, transition: Transition): Promise<void> {
    const { records } = this.options;
    const check = this.options.check(name);
    const policy = check && this.options.policies.of(check.def);
    if (!check || !policy) return;
    const current = records.get(name);
    if (current !== undefined) {
      // Down again before its recovery was told: the same alert goes on, and nothing is told of the flap.
      if (current.resolvedMs !== undefined) {
        const { resolvedMs: _, ...open } = current;
        await records.put(name, { ...open, state: transition.to });
        this.groupFor(name, policy, check.def.labels).due.delete(name);
      } else if (current.state !== transition.to) await records.put(name, { ...current, state: transition.to });
      return;
    }
    if (records.size >= this.options.maxAlerts()) return this.options.suppressed('max-alerts');
    const blocked = this.blocked(check.def.dependsOn);
    const record: AlertRecord = {
      id: alertId(name, transition.atMs),
      check: name,
      sinceMs: transition.atMs,
      state: transition.to,
      previous: transition.from,
      message: transition.message,
      labels: { ...check.def.labels },
      sent: 0,
      ...(blocked ? { suppressed: 'depends-on' as const } : {}),
    };
    await records.put(name, record);
    if (blocked) {
      this.options.suppressed('depends-on');
      this.watched.add(name);
    }
    this.track(name, record);
  }

  private async close(name: string, atMs: number): Promise<void> {
    const { records } = this.options;
    const record = records.get(name);
    if (record === undefined || record.resolvedMs !== undefined) return;
    const check = this.options.check(name);
    const policy = check && this.options.policies.of(check.def);
    if (record.firingSentMs === undefined || record.suppressed !== undefined || !policy?.sendOnResolved) {
      await records.delete(name);
      this.untrack(name);
    } else {
      const resolved = { ...record, resolvedMs: atMs };
      await records.put(name, resolved);
      this.track(name, resolved);
    }
  }

  /**
   * An alert held back is told once every check it depends on has been back for longer than this check takes to
   * recover: a dependant that was down only because of its dependency closes silently meanwhile.
   */
  private release(name: string): void {
    const check = this.options.check(name);
    if (check === undefined) return;
    const now = this.nowMs();
    const back = (check.def.dependsOn ?? []).every((dependency) => {
      const other = this.options.check(dependency);
      return other === undefined || (!failing(other.state) && now - other.sinceMs > check.recoveryMs);
    });
    if (!back) return;
    this.enqueue(name, async () => {
      const current = this.options.records.get(name);
      if (current?.suppressed === undefined || current.resolvedMs !== undefined) return;
      const { suppressed: _, ...told } = current;
      await this.options.records.put(name, told);
      this.track(name, told);
    });
  }

  /** Whether a check it depends on is down or failing (a dependant often fails first). */
  private blocked(dependsOn: readonly string[] | undefined): boolean {
    if (dependsOn === undefined) return false;
    return dependsOn.some((dependency) => failing(this.options.check(dependency)?.state));
  }

  private groupFor(name: string, policy: EffectivePolicy, labels: Readonly<Record<string, string>>): Group {
    const key = groupKey(policy, name, labels);
    const before = this.groupOf.get(name);
    if (before !== undefined && before !== key) this.untrack(name);
    this.groupOf.set(name, key);
    let group = this.groups.get(key);
    if (group === undefined) {
      group = { open: new Set(), due: new Set(), timer: null, lastFlushMs: 0, labels: groupLabels(policy, labels) };
      this.groups.set(key, group);
    }
    return group;
  }

  /** Puts an alert in its group, and arms the group's flush when it has something to tell. */
  private track(name: string, record: AlertRecord): void {
    const check = this.options.check(name);
    const policy = check && this.options.policies.of(check.def);
    if (!check || !policy) return;
    const key = groupKey(policy, name, check.def.labels);
    const group = this.groupFor(name, policy, check.def.labels);
    group.open.add(name);
    const due =
      record.resolvedMs !== undefined || (record.firingSentMs === undefined && record.suppressed === undefined);
    if (!due) return;
    group.due.add(name);
    if (group.timer !== null) return;
    const wait =
      policy.groupBy.length === 0
        ? 0
        : group.lastFlushMs === 0
          ? policy.groupWaitMs
          : Math.max(0, group.lastFlushMs + policy.groupIntervalMs - this.nowMs());
    group.timer = setTimeout(() => this.enqueue(key, () => this.flush(key)), wait).unref();
  }

  private untrack(name: string): void {
    const key = this.groupOf.get(name);
    if (key === undefined) return;
    this.groupOf.delete(name);
    const group = this.groups.get(key);
    group?.open.delete(name);
    group?.due.delete(name);
  }

  /** Tells the group's due alerts: one notification of the new ones, one of the recoveries. */
  private async flush(key: string): Promise<void> {
    const group = this.groups.get(key);
    if (group === undefined) return;
    group.timer = null;
    group.lastFlushMs = this.nowMs();
    const firing: AlertRecord[] = [];
    const resolved: AlertRecord[] = [];
    for (const name of group.due) {
      const record = this.options.records.get(name);
      if (record === undefined) continue;
      if (record.resolvedMs !== undefined) resolved.push(record);
      else if (record.firingSentMs === undefined && record.suppressed === undefined) firing.push(record);
    }
    group.due.clear();
    if (firing.length > 0) {
      await this.tell(key, group, 'firing', firing);
      // The alerts folded into one notification: those a tool without groups would have sent on their own.
      if (firing.length > 1) this.options.suppressed('grouped', firing.length - 1);
      const now = this.nowMs();
      await Promise.all(
        firing.map((record) => {
          const current = this.options.records.get(record.check);
          if (current?.id !== record.id) return undefined;
          return this.options.records.put(record.check, {
            ...current,
            firingSentMs: now,
            lastSentMs: now,
            sent: current.sent + 1,
          });
        }),
      );
    }
    // Closed while their firing notification was on its way (the close saw nothing told yet): told now.
    resolved.push(...firing.filter((record) => this.options.records.get(record.check) === undefined));
    if (resolved.length > 0) {
      await this.tell(key, group, 'resolved', resolved);
      await Promise.all(resolved.map((record) => this.options.records.delete(record.check)));
      for (const record of resolved) this.untrack(record.check);
    }
    if (group.open.size === 0 && group.timer === null) this.groups.delete(key);
  }

  private async tell(
    key: string,
    group: Group,
    status: 'firing' | 'resolved',
    alerts: readonly AlertRecord[],
  ): Promise<void> {
    const first = this.options.check((alerts[0] as AlertRecord).check);
    const policy = first && this.options.policies.of(first.def);
    if (!policy || (status === 'resolved' && !policy.sendOnResolved)) return;
    const notification = buildNotification({
      status,
      group: group.labels,
      alerts,
      stateOf: (name) => this.options.check(name)?.state ?? 'up',
      ackUrl: this.options.ackUrl,
      templates: policy.templates,
      nowMs: this.nowMs(),
      key,
    });
    await Promise.all(policy.notify.map((notifier) => this.options.send(notifier, notification)));
  }

  /** The repeats: per group, the firing alerts told `repeat-interval` ago or more, unless acknowledged or paused. */
  private sweep(): void {
    if (++this.sweeps % ADOPT_EVERY === 0) this.adopt();
    this.recovered();
    this.confirmDegraded();
    const now = this.nowMs();
    for (const [key, group] of this.groups) {
      if (group.open.size === 0) continue;
      const first = this.options.check(group.open.values().next().value as string);
      const policy = first && this.options.policies.of(first.def);
      if (!policy || policy.repeatMs === 0) continue;
      const repeat: AlertRecord[] = [];
      for (const name of group.open) {
        const record = this.options.records.get(name);
        if (record?.lastSentMs === undefined || record.resolvedMs !== undefined || record.suppressed) continue;
        if (now - record.lastSentMs < policy.repeatMs) continue;
        const state = this.options.check(name)?.state;
        const held = record.ack ? 'acknowledged' : state === 'paused' || state === 'maintenance' ? state : null;
        if (held === null) repeat.push(record);
        else if (now - (this.counted.get(record.id) ?? record.lastSentMs) >= policy.repeatMs) {
          this.counted.set(record.id, now);
          this.options.suppressed(held);
        }
      }
      if (repeat.length > 0) this.enqueue(key, () => this.repeat(key, group, repeat));
    }
  }

  /**
   * Alerts whose check is up with a result newer than the alert close, transition or not: after a restart the state
   * restored from the results written may be older than the alert, and the check's recovery then changes nothing.
   */
  private recovered(): void {
    for (const name of this.watched) {
      const record = this.options.records.get(name);
      if (record === undefined || record.resolvedMs !== undefined) {
        this.watched.delete(name);
        continue;
      }
      if (record.suppressed !== undefined) this.release(name);
      const check = this.options.check(name);
      if (check?.state === 'up' && check.lastS * 1000 > record.sinceMs)
        this.enqueue(name, () => this.close(name, check.lastS * 1000));
    }
  }

  /**
   * The alerts this node now tells of that another node wrote (a cluster's owner died, or the checks moved): taken
   * into their groups, so that what the other left due is told, and watched, so that a recovery it missed closes them.
   */
  private adopt(): void {
    for (const [name, record] of this.options.records.entries()) {
      if (this.groupOf.has(name) || record.resolvedMs !== undefined || !this.options.acts(name)) continue;
      if (this.options.check(name) === undefined) continue;
      this.track(name, record);
      this.watched.add(name);
    }
  }

  private confirmDegraded(): void {
    const now = this.nowMs();
    for (const [name, transition] of this.degraded) {
      const check = this.options.check(name);
      if (check?.state !== 'degraded') this.degraded.delete(name);
      else if (now - transition.atMs >= check.confirmMs) {
        this.degraded.delete(name);
        this.enqueue(name, () => this.open(name, transition));
      }
    }
  }

  private async repeat(key: string, group: Group, alerts: AlertRecord[]): Promise<void> {
    const fresh = alerts.filter((record) => this.options.records.get(record.check)?.lastSentMs === record.lastSentMs);
    if (fresh.length === 0) return;
    await this.tell(key, group, 'firing', fresh);
    const now = this.nowMs();
    await Promise.all(
      fresh.map((record) => {
        const current = this.options.records.get(record.check);
        if (current?.id !== record.id) return undefined;
        return this.options.records.put(record.check, { ...current, lastSentMs: now, sent: current.sent + 1 });
      }),
    );
  }
}
