/**
 * A KV bucket followed as a snapshot then updates, that never silently stops. NATS' watch is an ordered consumer on
 * the bucket's stream; when the server holding it dies (a stream leader moves) or the connection drops, it can stop
 * delivering without an error. So the watch is started again, from a fresh snapshot of the bucket, after every
 * reconnection and whenever the bucket has a revision the watch has not delivered for a whole check period.
 *
 * Each check is a JetStream request (the bucket's stream info) that also costs `nats-server`, so its period is the
 * owner's choice: membership, whose staleness delays failover, checks every quarter of member-ttl; the definition
 * buckets, which change at an operator's pace, every 5 s (docs/cluster.md, "What a cluster costs at rest").
 */
import type { KV, KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { ClusterConnection } from './connection.ts';

/** How often a bucket is checked for revisions its watch has not delivered, unless its owner says otherwise. */
const DEFAULT_CHECK_EVERY_MS = 5_000;
/** A snapshot from which no entry arrived for this long is abandoned (see `watch`). */
const SNAPSHOT_STALL_MS = 10_000;

interface BucketWatchTiming {
  /** How often the bucket's last revision is compared with what the watch delivered. */
  readonly checkEveryMs?: number;
  /** How long a snapshot may go without delivering an entry before it is abandoned. */
  readonly snapshotStallMs?: number;
}

class SnapshotStalled extends Error {}

export interface BucketFollower {
  /** The bucket's whole content (each key's latest value), at start and after each restart of the watch. */
  snapshot(entries: readonly KvEntry[]): void;
  /** A change after the snapshot. */
  update(entry: KvEntry): void;
}

export class BucketWatch {
  private watcher: { stop(): void } | null = null;
  private seen = 0;
  /** The bucket's last revision at the previous check, when the watch had not delivered it yet. */
  private behindAt: number | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private restarting: Promise<number> | null = null;
  private stopped = false;
  private unlisten: (() => void) | null = null;
  /** False from the moment the watch is started again (found behind, or after a reconnection) until a new one has
   *  delivered its snapshot: what it says may be stale meanwhile (membership does not expire anyone on a stale
   *  view). */
  healthy = true;
  private readonly checkEveryMs: number;
  private readonly snapshotStallMs: number;

  constructor(
    private readonly kv: KV,
    private readonly name: string,
    private readonly follower: BucketFollower,
    private readonly connection: ClusterConnection,
    private readonly logger: Logger,
    timing: BucketWatchTiming = {},
  ) {
    this.checkEveryMs = timing.checkEveryMs ?? DEFAULT_CHECK_EVERY_MS;
    this.snapshotStallMs = timing.snapshotStallMs ?? SNAPSHOT_STALL_MS;
  }

  /** Delivers the snapshot, then follows; resolves with the number of keys of the snapshot. A first watch whose
   *  snapshot stalls is started again until one delivers the whole bucket. */
  async start(): Promise<number> {
    let keys: number;
    for (;;) {
      try {
        keys = await this.watch();
        break;
      } catch (error) {
        if (this.stopped || !(error instanceof SnapshotStalled)) throw error;
        this.logger.warn({ bucket: this.name }, `${error.message}; watching it again`);
      }
    }
    if (this.stopped) return keys;
    this.unlisten = this.connection.onChange((connected) => {
      if (connected) this.restart('reconnected to NATS');
    });
    this.timer = setInterval(() => void this.check(), this.checkEveryMs);
    this.timer.unref();
    return keys;
  }

  private restart(why: string): void {
    if (this.stopped || this.restarting !== null) return;
    this.logger.info({ bucket: this.name }, `watching ${this.name} again (${why})`);
    // Stale until the new watch has delivered its snapshot: after a reconnection the old one may have stopped with
    // its server, and the new one can take a while (JetStream requests time out while a lost server's leaders are
    // elected again, measured above 20 s under load). Membership judges nobody meanwhile.
    this.healthy = false;
    this.restarting = this.watch();
    void this.restarting
      .catch((error: unknown) =>
        this.logger.warn(
          { err: error, bucket: this.name },
          `cannot watch ${this.name} again: ${(error as Error).message}`,
        ),
      )
      .finally(() => (this.restarting = null));
  }

  private async check(): Promise<void> {
    if (!this.connection.connected || this.restarting !== null) return;
    if (!this.healthy) {
      this.restart('its last start delivered no snapshot');
      return;
    }
    let last: number;
    try {
      last = (await this.kv.status()).streamInfo.state.last_seq;
    } catch {
      return;
    }
    if (last <= this.seen) {
      this.behindAt = null;
      return;
    }
    // Behind twice in a row on the same revision: the watch is stuck, not merely a message late.
    if (this.behindAt !== null && this.seen < this.behindAt) {
      this.healthy = false;
      this.restart(`revision ${this.behindAt} never delivered`);
    } else this.behindAt = last;
  }

  private async watch(): Promise<number> {
    this.watcher?.stop();
    this.behindAt = null;
    const watch = await this.kv.watch();
    this.watcher = watch;
    // Read once the watch exists: its snapshot holds nothing past this revision (see the loop below).
    const status = await this.kv.status();
    const keys = status.values;
    const lastAtStart = status.streamInfo.state.last_seq;
    const entries: KvEntry[] = [];
    let snapshotDone = false;
    let lastProgressMs = Date.now();
    let snapshotRevision = 0;
    let loaded!: () => void;
    const ready = new Promise<void>((resolve) => (loaded = resolve));
    const finish = () => {
      snapshotDone = true;
      // The snapshot covers every revision up to its start, those of expired or deleted keys included, which the
      // watch does not deliver. Counted as seen only once delivered: a restart that failed (a request timing out
      // while a leader moves, a stalled snapshot) must leave the watch behind, so that the next check starts it
      // again; counted before, it passed for caught up and never came back.
      this.seen = Math.max(this.seen, status.streamInfo.state.last_seq, snapshotRevision);
      this.follower.snapshot(entries);
      loaded();
    };
    if (keys === 0) finish();
    // The followers guard their own handling (src/cluster/refusals.ts); this catch keeps a bug there from ending the
    // process with an unhandled rejection.
    void (async () => {
      for await (const entry of watch) {
        if (snapshotDone && entry.revision > this.seen) this.seen = entry.revision;
        // The snapshot comes first, the last of it with `delta` 0 (nothing pending); updates follow. An entry at or
        // past the bucket's last revision read after the watch was made ends it too: the snapshot is each key's last
        // value when the watch was made, delivered in revision order, so all of it has arrived by then (read before
        // the watch, a key written in between would come after that revision and be left out). Waiting for `delta`
        // 0 alone, a bucket that members keep writing to could deliver entries for ever without one (the server's
        // count of what is pending stayed above 0), and the join waited with them: a node connected, then silent.
        if (snapshotDone) this.follower.update(entry);
        else {
          lastProgressMs = Date.now();
          if (entry.revision > snapshotRevision) snapshotRevision = entry.revision;
          entries.push(entry);
          if ((entry.delta ?? 0) === 0 || entry.revision >= lastAtStart) finish();
        }
      }
    })().catch((error: unknown) =>
      this.logger.error(
        { err: error, bucket: this.name },
        `watching ${this.name} failed: ${(error as Error).message}; watched again at the next check`,
      ),
    );
    // A snapshot is never delivered in part: followers take it for the whole bucket (a mirror of the API checks
    // would drop those not yet arrived). One that stops arriving for SNAPSHOT_STALL_MS is abandoned instead, and
    // the watch stays unhealthy until a new one delivers; one that keeps arriving, however large, is waited for.
    const startedMs = Date.now();
    let toldMs = startedMs;
    while (!snapshotDone) {
      // A snapshot that keeps arriving is waited for, however long; said every stall period, so that it is seen.
      if (Date.now() - toldMs >= this.snapshotStallMs) {
        toldMs = Date.now();
        this.logger.info(
          { bucket: this.name },
          `the snapshot of ${this.name} is still arriving after ${Math.round((toldMs - startedMs) / 1000)} s: ${entries.length} entries of ${keys}`,
        );
      }
      const waitMs = lastProgressMs + this.snapshotStallMs - Date.now();
      if (waitMs <= 0) {
        watch.stop();
        if (this.watcher === watch) this.watcher = null;
        this.healthy = false;
        throw new SnapshotStalled(
          `the snapshot of ${this.name} (${keys} keys, ${entries.length} arrived) stalled for ${this.snapshotStallMs} ms`,
        );
      }
      await Promise.race([ready, new Promise((resolve) => setTimeout(resolve, waitMs))]);
    }
    this.healthy = true;
    return keys;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.unlisten?.();
    this.watcher?.stop();
  }
}
