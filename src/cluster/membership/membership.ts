/**
 * Who is in the cluster (docs/cluster.md, "Membership"): each node puts its key in the KV bucket `vigie_members`
 * every third of `member-ttl`, with its config hash, version and start time, and watches the bucket. A member
 * not heard from for `member-ttl` is gone; a node that stops cleanly deletes its key, so the others see it leave at
 * once. "Heard from" is this node's clock at the moment the put arrived, so clocks need not agree.
 *
 * Each member announces its `cluster.labels` too: a check's `node-labels` pick the members that may run it
 * (docs/checks.md "Locations"), so a member whose labels change (a restart with another config) makes the listeners
 * recompute owners.
 *
 * While this node is disconnected from NATS it hears nobody: the member list is frozen (it keeps running the
 * checks it owned) instead of shrinking to itself, and every member gets a fresh `member-ttl` on reconnection.
 *
 * An entry is untrusted input (docs/cluster.md, "What a node does with what it reads"): one that is not JSON, not a
 * member's announcement, or that names another node than its key is refused (counted, logged) and owns nothing; an
 * earlier valid announcement under that key is forgotten with it. Owners are computed over valid members only.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { sameLabels } from '../../common/labels.ts';
import { BucketWatch } from '../bucket-watch.ts';
import type { ClusterConnection } from '../connection.ts';
import { permissionsHint } from '../errors.ts';
import { matchingKey, type MessageRefusals, WireSchema } from '../refusals.ts';
import { WireNodeName } from '../settings.ts';
import { rankMembers, type RankedMember } from './rendezvous.ts';

export interface MemberInfo {
  node: string;
  /** Hash of the node's config-file checks and streams: nodes should run the same file. */
  configHash: string;
  version: string;
  startedAtMs: number;
  /** Its `cluster.labels`; absent from a member of an earlier version (it has none). */
  labels?: Record<string, string>;
  /** It can write every store it writes through; absent from a member of an earlier version. */
  ready?: boolean;
}

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

export interface MembershipLimits {
  /** A member not heard from for this long is gone (`cluster.member-ttl`). */
  readonly ttlMs: number;
  /** Members kept at most, this node included (`cluster.max-members`): past it a new one is refused. */
  readonly maxMembers: number;
}

/**
 * How often the members bucket is checked for revisions its watch missed: a quarter of member-ttl, so that a stuck
 * watch is found (two checks behind) within half of it, but at least 1 s and at most 5 s apart. A check is a request
 * to JetStream, answered by nats-server: at 1 s for each of three buckets, they were about a third of an idle
 * node's eight wake-ups a second (docs/cluster.md, "What a cluster costs at rest").
 */
function membersCheckMs(ttlMs: number): number {
  return Math.min(5_000, Math.max(1_000, Math.floor(ttlMs / 4)));
}

const MEMBER = new WireSchema<MemberInfo>(
  Type.Object({
    node: WireNodeName,
    configHash: Type.String({ maxLength: 128 }),
    version: Type.String({ maxLength: 128 }),
    startedAtMs: Type.Integer({ minimum: 0 }),
    // Caps of cluster.labels (src/healthcheck/kinds/locations.ts NODE_LABEL_LIMITS), keys bounded by the value's size.
    labels: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 1024 }), { maxProperties: 64 })),
    ready: Type.Optional(Type.Boolean()),
  }),
);

interface Heard {
  info: MemberInfo;
  atMs: number;
}

export const MEMBERS_BUCKET = 'vigie_members';

/** The membership's gauges: registered once per node, whichever attempt to join builds its `Membership`. */
export class MembershipMetrics {
  readonly members: Gauge;
  readonly mismatch: Gauge<'node'>;

  constructor(registry: Registry) {
    this.members = new Gauge({
      name: 'cluster_members',
      help: 'Live members of the cluster, as this node sees them.',
      registers: [registry],
    });
    this.mismatch = new Gauge({
      name: 'cluster_config_mismatch',
      help: "1 for each member whose config hash differs from this node's (its config file's checks or streams differ).",
      labelNames: ['node'],
      registers: [registry],
    });
  }
}

export class Membership {
  private readonly heard = new Map<string, Heard>();
  private ranked: RankedMember[];
  private names: string[];
  private heartbeatTimer: ReturnType<typeof setInterval> | null = null;
  private expiryTimer: ReturnType<typeof setInterval> | null = null;
  private watch: BucketWatch | null = null;
  private readonly listeners = new Set<(members: readonly string[]) => void>();
  private readonly membersGauge: Gauge;
  private readonly mismatchGauge: Gauge<'node'>;
  private mismatched = new Set<string>();
  /** The last announcement of this node succeeded. */
  private announced = true;
  /** Stopped: a join attempt that failed, or the node stopping. It announces nothing more. */
  private stopped = false;
  private readonly unlisten: () => void;
  private readonly ttlMs: number;
  private readonly maxMembers: number;

  constructor(
    private readonly kv: KV,
    private readonly connection: ClusterConnection,
    private self: MemberInfo,
    limits: MembershipLimits,
    private readonly refusals: MessageRefusals,
    private readonly logger: Logger,
    metrics: MembershipMetrics,
  ) {
    this.ttlMs = limits.ttlMs;
    this.maxMembers = limits.maxMembers;
    this.names = [self.node];
    this.ranked = rankMembers(this.names);
    this.membersGauge = metrics.members;
    this.mismatchGauge = metrics.mismatch;
    this.membersGauge.set(1);
    this.unlisten = connection.onChange((connected) => {
      if (!connected) return;
      const now = Date.now();
      for (const heard of this.heard.values()) heard.atMs = now;
      void this.heartbeat();
    });
  }

  get node(): string {
    return this.self.node;
  }

  /** The live members' names, sorted, this node included. */
  members(): readonly string[] {
    return this.names;
  }

  ranking(): readonly RankedMember[] {
    return this.ranked;
  }

  /** A live member's `cluster.labels` (none for an unknown member). */
  labelsOf(node: string): Readonly<Record<string, string>> {
    const info = node === this.self.node ? this.self : this.heard.get(node)?.info;
    return info?.labels ?? NO_LABELS;
  }

  infos(): MemberInfo[] {
    return this.names.map((name) => (name === this.self.node ? this.self : (this.heard.get(name) as Heard).info));
  }

  onChange(listener: (members: readonly string[]) => void): void {
    this.listeners.add(listener);
  }

  /** Loads the members already in the bucket, then announces this node and keeps it announced. */
  async start(): Promise<void> {
    this.watch = new BucketWatch(
      this.kv,
      MEMBERS_BUCKET,
      {
        snapshot: (entries) => {
          for (const entry of entries) this.refusals.guard('members', () => this.apply(entry, true));
          this.recompute();
        },
        update: (entry) => this.refusals.guard('members', () => this.apply(entry, false)),
      },
      this.connection,
      this.logger,
      { checkEveryMs: membersCheckMs(this.ttlMs) },
    );
    await this.watch.start();
    this.recompute();
    // Logged as the steps of a join are (src/cluster/membership/node.ts): a join that stalls shows where.
    this.logger.info({ members: this.names.length }, `joining: ${MEMBERS_BUCKET} followed`);
    await this.heartbeat();
    this.logger.info(
      this.announced ? 'joining: this node announced' : 'joining: this node could not announce itself yet',
    );
    if (this.stopped) return;
    const every = Math.max(250, Math.floor(this.ttlMs / 3));
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), every);
    this.heartbeatTimer.unref();
    this.expiryTimer = setInterval(() => this.expire(), Math.max(100, Math.floor(this.ttlMs / 4)));
    this.expiryTimer.unref();
  }

  /** The config hash changed (a reload), or this node's readiness: announced at once. */
  announce(change: Partial<Pick<MemberInfo, 'configHash' | 'ready'>>): void {
    this.self = { ...this.self, ...change };
    void this.heartbeat();
    this.checkConfigs();
  }

  private async heartbeat(): Promise<void> {
    if (!this.connection.connected || this.stopped) return;
    try {
      await this.kv.put(this.self.node, JSON.stringify(this.self));
      if (!this.announced) {
        // Back after a failure: the others get a fresh member-ttl, as after a reconnection.
        const now = Date.now();
        for (const heard of this.heard.values()) heard.atMs = now;
        this.announced = true;
      }
    } catch (error) {
      if (this.announced)
        this.logger.warn(
          { err: error },
          `cannot announce this node in ${MEMBERS_BUCKET}: ${(error as Error).message}${permissionsHint(error)}; the member list is frozen until it can`,
        );
      this.announced = false;
    }
  }

  private apply(entry: KvEntry, initial: boolean): void {
    if (entry.key === this.self.node) return;
    if (entry.operation !== 'PUT') {
      this.forget(entry.key, `member ${entry.key} left the cluster`);
      return;
    }
    const decoded = matchingKey(MEMBER.decode(entry.value), (member) =>
      member.node === entry.key ? null : `it announces node ${JSON.stringify(member.node)}`,
    );
    if (!decoded.ok) {
      this.refusals.refuse(
        'members',
        decoded.reason,
        `${MEMBERS_BUCKET} entry ${JSON.stringify(entry.key)}: ${decoded.detail}; it owns nothing`,
        { key: entry.key },
      );
      this.forget(entry.key, `member ${entry.key} is not a valid member any more: it owns nothing`);
      return;
    }
    const info = decoded.value;
    // Every member is ranked for every check at each change: members made up by whoever can write the bucket would
    // stall every node once there are enough of them. Past the cap a new one is refused; those kept go on.
    if (!this.heard.has(entry.key) && this.heard.size + 1 >= this.maxMembers) {
      this.refusals.refuse(
        'members',
        'invalid',
        `${MEMBERS_BUCKET} entry ${JSON.stringify(entry.key)}: ${this.maxMembers} members are kept already (cluster.max-members); it owns nothing`,
        { key: entry.key },
      );
      return;
    }
    // A value of a snapshot may be old: heard when it was written, so that a dead member's key does not count. But
    // it never makes a member older than this node already holds it: a snapshot comes again after each reconnection,
    // which has just given every member a fresh member-ttl, and keys written before an outage that took no puts
    // (JetStream re-electing its leaders) would otherwise drop every member at once.
    const known = this.heard.get(entry.key)?.atMs ?? 0;
    const atMs = initial ? Math.max(known, Math.min(Date.now(), entry.created.getTime())) : Date.now();
    const wasLive = this.names.includes(entry.key);
    const relabelled = wasLive && !sameLabels(this.heard.get(entry.key)?.info.labels, info.labels);
    this.heard.set(entry.key, { info, atMs });
    if (!wasLive && Date.now() - atMs < this.ttlMs) {
      this.logger.info({ node: entry.key, version: info.version }, `member ${entry.key} joined the cluster`);
      this.recompute();
    } else if (relabelled) {
      this.logger.info({ node: entry.key, labels: info.labels ?? {} }, `member ${entry.key} has new labels`);
      this.recompute(true);
    } else this.checkConfigs();
  }

  private forget(node: string, why: string): void {
    if (!this.heard.delete(node)) return;
    this.logger.info({ node }, why);
    this.recompute();
  }

  private expire(): void {
    // A node that cannot announce itself, or whose watch of the bucket is stuck, cannot tell a silent member from
    // its own trouble (JetStream unreachable while the connection stands, during a leader election): it judges
    // nobody then.
    if (!this.judging()) return;
    const cutoff = Date.now() - this.ttlMs;
    let changed = false;
    for (const [node, heard] of this.heard) {
      if (heard.atMs >= cutoff) continue;
      const live = this.names.includes(node);
      this.heard.delete(node);
      if (live) {
        this.logger.warn({ node }, `member ${node} not heard from for ${this.ttlMs} ms: gone`);
        changed = true;
      }
    }
    if (changed) this.recompute();
  }

  /** This node can trust its view of the others now: it is connected, announced, and its watch is healthy. */
  judging(): boolean {
    return this.connection.connected && this.announced && this.watch?.healthy !== false;
  }

  /** `relabelled`: a live member's labels changed, which changes owners even when the names do not. */
  private recompute(relabelled = false): void {
    const cutoff = Date.now() - this.ttlMs;
    // While this node judges nobody (see `expire`), a live member stays live whatever a snapshot says of it.
    const frozen = !this.judging();
    const live = ([node, heard]: [string, Heard]) => heard.atMs >= cutoff || (frozen && this.names.includes(node));
    const names = [this.self.node, ...[...this.heard].filter(live).map(([node]) => node)].sort();
    this.checkConfigs();
    if (!relabelled && names.join('\n') === this.names.join('\n')) return;
    this.names = names;
    this.ranked = rankMembers(names);
    this.membersGauge.set(names.length);
    for (const listener of this.listeners) listener(names);
  }

  private checkConfigs(): void {
    const differing = new Set(
      [...this.heard.values()]
        .filter((heard) => heard.info.configHash !== this.self.configHash)
        .map((heard) => heard.info.node),
    );
    for (const node of differing) {
      if (!this.mismatched.has(node)) {
        const other = (this.heard.get(node) as Heard).info.configHash;
        this.logger.warn(
          { node, hash: other, ours: this.self.configHash },
          `member ${node} runs another config file than this node (config hash ${other}, ours ${this.self.configHash})`,
        );
      }
      this.mismatchGauge.set({ node }, 1);
    }
    for (const node of this.mismatched) if (!differing.has(node)) this.mismatchGauge.remove({ node });
    this.mismatched = differing;
  }

  /** Stops announcing and deletes this node's key: the others see it leave at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unlisten();
    if (this.heartbeatTimer !== null) clearInterval(this.heartbeatTimer);
    if (this.expiryTimer !== null) clearInterval(this.expiryTimer);
    this.watch?.stop();
    this.listeners.clear();
    for (const node of this.mismatched) this.mismatchGauge.remove({ node });
    this.mismatched.clear();
    if (this.connection.connected) await this.kv.delete(this.self.node).catch(() => undefined);
  }
}
