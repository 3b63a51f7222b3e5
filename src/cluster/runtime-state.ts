/**
 * Runtime state in a cluster (src/common/runtime-state.ts, docs/cluster.md "Runtime state"): every kind in one
 * JetStream KV bucket, `vigie_state`, under `<kind>.<key in base64url>`, mirrored into each node's SQLite.
 *
 * One bucket for every kind rather than one per kind: the permissions file names each bucket (NATS' wildcards match
 * whole tokens, and a JetStream request names its stream), so a bucket per kind would make every new kind of state a
 * change of every deployed permissions file; and each bucket costs every node a watch and its checks. One bucket is
 * one watch, and a kind added by a later version needs nothing from the operator.
 *
 * Reads are the local mirror's (`StateMirror`): they go on while NATS is away. A write goes to the bucket first and
 * resolves once JetStream has acknowledged it (stored on `replicas` servers) and it is applied here; before this node
 * has bound the bucket, or while NATS is unreachable, it is refused at once with the reason (a 503). A node that was
 * away catches up when it binds: the watch's snapshot replaces each mirror, and every change after it is applied as
 * it arrives (after each reconnection the watch starts again from a snapshot: src/cluster/bucket-watch.ts).
 *
 * Whoever holds a node's NATS credential can write this bucket, so what it holds is untrusted: a key that is not
 * `<kind>.<base64url>`, a value past `cluster.max-state-value-bytes`, one that is not JSON or that the kind's `parse`
 * refuses, and a new key past `cluster.max-state-keys` are refused (`cluster_messages_refused_total{source="state"}`,
 * and `runtime_state_skipped_total{kind}` for what `parse` refuses) and never applied: the value held before stays.
 */
import type { KV, KvEntry, Kvm } from '@nats-io/kv';
import type { Logger } from 'pino';
import {
  type RuntimeState,
  type StateCollection,
  type StateKind,
  StateValueTooLargeError,
} from '../common/runtime-state.ts';
import { type LocalMirrors, MirroredCollection, type StateMirror } from '../common/state-mirror.ts';
import { BucketWatch } from './bucket-watch.ts';
import type { ClusterConnection } from './connection.ts';
import { ClusterUnavailableError } from './errors.ts';
import type { MessageRefusals, RefusalReason } from './refusals.ts';

export const STATE_BUCKET = 'vigie_state';

export interface StateCaps {
  /** `cluster.max-state-keys`. */
  readonly maxKeys: number;
  /** `cluster.max-state-value-bytes`. */
  readonly maxValueBytes: number;
}

/** What binding needs of the joined cluster. */
export interface StateBinding {
  readonly kvm: Kvm;
  readonly connection: ClusterConnection;
  readonly refusals: MessageRefusals;
  readonly replicas: 1 | 3;
}

interface Bound {
  readonly kv: KV;
  readonly watch: BucketWatch;
  readonly connection: ClusterConnection;
  readonly refusals: MessageRefusals;
}

function fullKey(kind: string, key: string): string {
  return `${kind}.${Buffer.from(key, 'utf8').toString('base64url')}`;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export class ClusterRuntimeState implements RuntimeState {
  private readonly mirrors = new Map<string, StateMirror<unknown>>();
  /** The revision of each key's last value or removal applied here: what the watch delivers again is skipped. */
  private revisions = new Map<string, number>();
  /** Keys holding a value in the bucket, as far as this node applied them (bounded by `maxKeys`). */
  private held = new Set<string>();
  private bound: Bound | null = null;
  /** This node's writes not acknowledged yet, by bucket key (the value's JSON, null for a removal): the watch can
   *  deliver one before its acknowledgement, and its listeners must hear it as this node's. */
  private readonly inFlight = new Map<string, string | null>();

  constructor(
    private readonly local: LocalMirrors,
    private readonly caps: StateCaps,
    /** Why this node cannot write yet, while the bucket is not bound (the join's step, or its last failure). */
    private readonly notJoined: () => string,
    private readonly logger: Logger,
  ) {}

  collection<T>(kind: StateKind<T>): StateCollection<T> {
    const mirror = this.local.mirror(kind);
    this.mirrors.set(kind.name, mirror as StateMirror<unknown>);
    return new ClusterCollection(mirror, this);
  }

  unwritable(): string | null {
    const bound = this.bound;
    if (bound === null) return this.notJoined();
    if (!bound.connection.connected) return 'NATS is unreachable from this node';
    return null;
  }

  /**
   * Creates the bucket if needed, loads it (replacing every mirror: a node that was away catches up) and follows it.
   * A bucket never written is seeded with what this node holds (a single node made a cluster node brings its state).
   */
  async bind({ kvm, connection, refusals, replicas }: StateBinding): Promise<void> {
    // No `maxValueSize` on the bucket: nodes may differ in their caps, and a bucket made with another one would be
    // refused to the others. The cap is checked on every read and write instead.
    const kv = await kvm.create(STATE_BUCKET, { history: 1, replicas });
    const watch = new BucketWatch(
      kv,
      STATE_BUCKET,
      {
        snapshot: (entries) => refusals.guard('state', () => this.snapshot(entries, refusals)),
        update: (entry) => refusals.guard('state', () => this.update(entry, refusals)),
      },
      connection,
      this.logger,
    );
    try {
      if ((await watch.start()) === 0) await this.seed(kv);
    } catch (error) {
      watch.stop();
      throw error;
    }
    this.bound = { kv, watch, connection, refusals };
  }

  unbind(): void {
    this.bound?.watch.stop();
    this.bound = null;
  }

  private async seed(kv: KV): Promise<void> {
    let seeded = 0;
    for (const [kind, mirror] of this.mirrors) {
      for (const [key, value] of mirror.entries()) {
        const revision = await kv.put(fullKey(kind, key), JSON.stringify(value));
        this.revisions.set(fullKey(kind, key), revision);
        this.held.add(fullKey(kind, key));
        seeded++;
      }
    }
    if (seeded > 0) this.logger.info({ values: seeded }, `${STATE_BUCKET} was empty: seeded with this node's state`);
  }

  /** The bucket's whole content: each mirror becomes exactly what the bucket holds of its kind. */
  private snapshot(entries: readonly KvEntry[], refusals: MessageRefusals): void {
    const next = new Map<string, Map<string, unknown>>();
    for (const kind of this.mirrors.keys()) next.set(kind, new Map());
    this.revisions = new Map();
    this.held = new Set();
    for (const entry of entries) {
      const read = this.read(entry, refusals);
      if (read === null) continue;
      this.revisions.set(entry.key, entry.revision);
      this.held.add(entry.key);
      next.get(read.kind)?.set(read.key, read.value);
    }
    for (const [kind, values] of next) this.mirrors.get(kind)?.replaceAll(values, 'remote', sameJson);
  }

  private update(entry: KvEntry, refusals: MessageRefusals): void {
    if (entry.revision <= (this.revisions.get(entry.key) ?? 0)) return;
    if (entry.operation !== 'PUT') {
      const named = this.named(entry.key, refusals);
      if (named === null) return;
      this.revisions.set(entry.key, entry.revision);
      this.held.delete(entry.key);
      named.mirror.apply(named.key, undefined, this.inFlight.get(entry.key) === null ? 'local' : 'remote');
      return;
    }
    const read = this.read(entry, refusals);
    if (read === null) return;
    this.revisions.set(entry.key, entry.revision);
    this.held.add(entry.key);
    const mine = this.inFlight.get(entry.key);
    const origin = typeof mine === 'string' && mine === entry.string() ? 'local' : 'remote';
    this.mirrors.get(read.kind)?.apply(read.key, read.value, origin);
  }

  /** A value of the bucket checked, or null when refused (counted) or of a kind this node does not keep. */
  private read(entry: KvEntry, refusals: MessageRefusals): { kind: string; key: string; value: unknown } | null {
    if (entry.operation !== 'PUT') return null;
    const named = this.named(entry.key, refusals);
    if (named === null) return null;
    const { kind, key, mirror } = named;
    const refuse = (reason: RefusalReason, detail: string) => {
      refusals.refuse('state', reason, `${STATE_BUCKET}: ${kind}/${key}: ${detail}`, { kind, key });
      return null;
    };
    if (entry.length > this.caps.maxValueBytes)
      return refuse('too_large', `${entry.length} bytes, past cluster.max-state-value-bytes`);
    if (!this.held.has(entry.key) && this.held.size >= this.caps.maxKeys)
      return refuse('too_many', `a new key past cluster.max-state-keys (${this.caps.maxKeys})`);
    let json: unknown;
    try {
      json = entry.json();
    } catch {
      return refuse('not_json', 'not JSON');
    }
    try {
      return { kind, key, value: mirror.kind.parse(json) };
    } catch (error) {
      this.local.reports.skipped({ kind, key, reason: (error as Error).message });
      return refuse('invalid', (error as Error).message);
    }
  }

  /** The kind and key a bucket key names, or null: another version's kind (ignored) or a malformed key (refused). */
  private named(
    bucketKey: string,
    refusals: MessageRefusals,
  ): { kind: string; key: string; mirror: StateMirror<unknown> } | null {
    const dot = bucketKey.indexOf('.');
    const kind = dot < 0 ? bucketKey : bucketKey.slice(0, dot);
    const key = Buffer.from(bucketKey.slice(dot + 1), 'base64url').toString('utf8');
    if (dot < 0 || fullKey(kind, key) !== bucketKey) {
      refusals.refuse('state', 'key', `${STATE_BUCKET}: key ${JSON.stringify(bucketKey)} is not <kind>.<base64url>`);
      return null;
    }
    const mirror = this.mirrors.get(kind);
    return mirror === undefined ? null : { kind, key, mirror };
  }

  /** The bucket, or the 503 saying why it cannot be written now. */
  private writable(): Bound {
    const why = this.unwritable();
    if (why !== null) throw new ClusterUnavailableError(`the cluster's runtime state cannot change now: ${why}`);
    return this.bound as Bound;
  }

  async put<T>(mirror: StateMirror<T>, key: string, value: T): Promise<void> {
    const { kv } = this.writable();
    const bucketKey = fullKey(mirror.kind.name, key);
    const text = JSON.stringify(value);
    if (Buffer.byteLength(text) > this.caps.maxValueBytes)
      throw new StateValueTooLargeError(
        `${mirror.kind.name}/${key} is past cluster.max-state-value-bytes (${this.caps.maxValueBytes})`,
      );
    let revision: number;
    this.inFlight.set(bucketKey, text);
    try {
      revision = await kv.put(bucketKey, text);
    } catch (error) {
      throw unavailable(error);
    } finally {
      this.inFlight.delete(bucketKey);
    }
    // The watch may have applied it (or a newer value) already.
    if ((this.revisions.get(bucketKey) ?? 0) >= revision) return;
    this.revisions.set(bucketKey, revision);
    this.held.add(bucketKey);
    mirror.apply(key, value, 'local');
  }

  async delete<T>(mirror: StateMirror<T>, key: string): Promise<boolean> {
    const { kv } = this.writable();
    const bucketKey = fullKey(mirror.kind.name, key);
    const had = mirror.get(key) !== undefined;
    const before = this.revisions.get(bucketKey);
    this.inFlight.set(bucketKey, null);
    try {
      await kv.delete(bucketKey);
    } catch (error) {
      throw unavailable(error);
    } finally {
      this.inFlight.delete(bucketKey);
    }
    // A change the watch applied meanwhile came before or after this removal: the watch applies what follows it.
    if (this.revisions.get(bucketKey) === before) {
      this.held.delete(bucketKey);
      mirror.apply(key, undefined, 'local');
    }
    return had;
  }
}

function unavailable(error: unknown): ClusterUnavailableError {
  return new ClusterUnavailableError(
    `the cluster's runtime state (${STATE_BUCKET}) cannot be written: ${(error as Error).message}`,
  );
}

class ClusterCollection<T> extends MirroredCollection<T> {
  constructor(
    mirror: StateMirror<T>,
    private readonly state: ClusterRuntimeState,
  ) {
    super(mirror);
  }

  put(key: string, value: T): Promise<void> {
    return this.state.put(this.mirror, key, value);
  }

  delete(key: string): Promise<boolean> {
    return this.state.delete(this.mirror, key);
  }
}
