/**
 * Silent members (docs/cluster.md, "Silent members"): a member that announces itself but publishes no result while
 * it owns checks runs none of them, and nothing else would say so. Whoever holds a node's NATS credential can keep
 * its key alive with no Vigie behind it (a node that is not running), and a node whose results cannot go out looks
 * the same from here. So each node watches the others' results: a member that owes results (it runs a check with an
 * interval, as this node computes owners) and from which none has arrived for `3 × member-ttl` beyond the shortest
 * interval (and timeout) of its checks is reported (`cluster_member_silent{node}` 1, a log line) and owns no check
 * here until a result of it arrives again; then it owns its share again.
 *
 * No false alarm for a member that owes nothing: one that runs no check, or only heartbeat checks (their results
 * come from the jobs' reports, wherever they are sent) and one-off checks, is never judged; one that runs only checks
 * with a long interval is judged over that interval. A duty starts when this node first sees the member owe it (or
 * owe a shorter interval than before), not at the member's last result, and again after this node could not judge
 * (cut from NATS, or its own view of the members frozen: src/cluster/membership/membership.ts): results published
 * meanwhile may still be on their way.
 *
 * A node never judges itself: it knows whether it runs its checks. Stream partitions keep their owners: a member
 * silent for results may still run its partitions, and two nodes disagreeing on a partition's owner would split its
 * events between them, where two nodes disagreeing on a check's owner only run it twice.
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { durationToMs } from '../../common/duration.ts';
import type { HostedCheck } from '../../healthcheck/cluster-port.ts';

/** What a member owes: a result at least every `periodMs`, from `sinceMs` on (this node's clock). */
interface Duty {
  periodMs: number;
  sinceMs: number;
}

export class SilentMemberMetrics {
  readonly silent: Gauge<'node'>;

  constructor(registry: Registry) {
    this.silent = new Gauge({
      name: 'cluster_member_silent',
      help: "1 for a member that owes results (it runs checks) and published none for 3 × member-ttl beyond its checks' interval: it owns no check until it publishes again; 0 for the other members.",
      labelNames: ['node'],
      registers: [registry],
    });
  }
}

export interface SilentMembersOptions {
  /** This node: never judged. */
  readonly self: string;
  /** `cluster.member-ttl`. */
  readonly ttlMs: number;
  /** Per other member, the shortest interval plus timeout (ms) of the checks it runs, as this node sees owners now. */
  readonly duties: () => ReadonlyMap<string, number>;
  /** This node can trust its view of the cluster now (src/cluster/membership/membership.ts `judging`). */
  readonly judging: () => boolean;
  /** Called when a member turns silent or is heard again: owners change. */
  readonly changed: (why: string) => void;
  readonly metrics: SilentMemberMetrics;
  readonly logger: Logger;
}

export class SilentMembers {
  private readonly lastHeardMs = new Map<string, number>();
  private readonly owed = new Map<string, Duty>();
  private readonly silentNodes = new Set<string>();
  /** The live members as last told, this node excluded: each has a gauge series. */
  private known = new Set<string>();
  private timer: ReturnType<typeof setInterval> | null = null;
  /** This node could not judge at the last tick: duties start afresh once it can. */
  private blind = false;
  /** Bumped at each change of `silentNodes`, for the owners' caches. */
  private changes = 0;

  constructor(private readonly options: SilentMembersOptions) {}

  /** Judges every `member-ttl / 2` (at least 1 s apart): well within the bound of 3 × member-ttl. */
  start(): void {
    this.timer = setInterval(() => this.judge(), Math.max(1_000, Math.floor(this.options.ttlMs / 2)));
    this.timer.unref();
  }

  /** A result of `node` arrived. */
  heard(node: string): void {
    this.lastHeardMs.set(node, Date.now());
    if (!this.silentNodes.delete(node)) return;
    this.changes++;
    this.options.metrics.silent.set({ node }, 0);
    this.options.logger.info({ node }, `member ${node} publishes results again: it owns its share of the checks again`);
    this.options.changed(`member ${node} heard again`);
  }

  isSilent(node: string): boolean {
    return this.silentNodes.has(node);
  }

  /** Changes whenever a member turns silent or is heard again. */
  get version(): number {
    return this.changes;
  }

  /** The live members changed: those gone are forgotten (a member coming back is judged afresh). */
  members(names: readonly string[]): void {
    const live = new Set(names.filter((name) => name !== this.options.self));
    for (const node of this.known) {
      if (live.has(node)) continue;
      this.lastHeardMs.delete(node);
      this.owed.delete(node);
      if (this.silentNodes.delete(node)) this.changes++;
      this.options.metrics.silent.remove({ node });
    }
    for (const node of live)
      if (!this.known.has(node)) this.options.metrics.silent.set({ node }, this.silentNodes.has(node) ? 1 : 0);
    this.known = live;
  }

  private judge(): void {
    // Alone, nobody owes anything: no scan of the checks.
    if (this.known.size === 0) return;
    if (!this.options.judging()) {
      this.blind = true;
      return;
    }
    const now = Date.now();
    if (this.blind) {
      this.blind = false;
      for (const duty of this.owed.values()) duty.sinceMs = now;
    }
    this.updateDuties(now);
    const boundMs = 3 * this.options.ttlMs;
    const turned: string[] = [];
    for (const [node, duty] of this.owed) {
      if (this.silentNodes.has(node)) continue;
      const fromMs = Math.max(this.lastHeardMs.get(node) ?? 0, duty.sinceMs);
      if (now - fromMs <= boundMs + duty.periodMs) continue;
      this.silentNodes.add(node);
      this.options.metrics.silent.set({ node }, 1);
      const heard = this.lastHeardMs.get(node);
      this.options.logger.warn(
        { node, lastResultAt: heard === undefined ? null : new Date(heard).toISOString() },
        `member ${node} is silent: it runs checks (the shortest every ${duty.periodMs} ms with its timeout) and published no result for ${now - fromMs} ms (3 × member-ttl beyond that): it owns no check until it publishes again`,
      );
      turned.push(node);
    }
    if (turned.length === 0) return;
    this.changes++;
    this.options.changed(`member(s) ${turned.join(', ')} silent`);
  }

  /** A duty starts now when it is new or shorter than before; a member that owes nothing any more is not judged. */
  private updateDuties(now: number): void {
    const duties = this.options.duties();
    for (const [node, periodMs] of duties) {
      if (node === this.options.self) continue;
      const duty = this.owed.get(node);
      if (duty === undefined || periodMs < duty.periodMs) this.owed.set(node, { periodMs, sinceMs: now });
      else duty.periodMs = periodMs;
    }
    for (const node of this.owed.keys()) if (!duties.has(node)) this.owed.delete(node);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    for (const node of this.known) this.options.metrics.silent.remove({ node });
    this.known.clear();
  }
}

/**
 * Per member other than `self`, the shortest interval plus timeout (ms) of the checks it runs (`runners`, as this node
 * computes owners): the longest it may go without publishing a result. Heartbeat and one-off checks owe none, nor
 * paused ones (`paused`): their owner runs them not, by design.
 */
export function dutiesOf(
  checks: Iterable<HostedCheck>,
  runners: (check: HostedCheck) => readonly string[],
  self: string,
  paused: (check: HostedCheck) => boolean,
): Map<string, number> {
  const duties = new Map<string, number>();
  for (const check of checks) {
    if (check.oneOff || check.intervalNs <= 0 || check.kind === 'heartbeat' || paused(check)) continue;
    const periodMs = durationToMs(check.intervalNs + check.timeoutNs);
    for (const runner of runners(check)) {
      if (runner === self) continue;
      const known = duties.get(runner);
      if (known === undefined || periodMs < known) duties.set(runner, periodMs);
    }
  }
  return duties;
}
