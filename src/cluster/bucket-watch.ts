/**
 * A KV bucket followed as a snapshot then updates, that never silently stops. NATS' watch is an ordered consumer on
 * the bucket's stream; when the server holding it dies (a stream leader moves) or the connection drops, it can stop
 * delivering without an error. So the watch is started again, from a fresh snapshot of the bucket, after every
 * reconnection and whenever the bucket has a revision the watch has not delivered for a whole check period.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { ClusterConnection } from './connection.ts';

const CHECK_EVERY_MS = 1_000;

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
  /** False from the moment the watch is found behind until a new one has delivered its snapshot: what it says
   *  may be stale meanwhile (membership does not expire anyone on a stale view). */
  healthy = true;

  constructor(
    private readonly kv: KV,
    private readonly name: string,
    private readonly follower: BucketFollower,
    private readonly connection: ClusterConnection,
    private readonly logger: Logger,
  ) {}

  /** Delivers the snapshot, then follows; resolves with the number of keys of the snapshot. */
  async start(): Promise<number> {
    const keys = await this.watch();
    this.connection.onChange((connected) => {
      if (connected) this.restart('reconnected to NATS');
    });
    this.timer = setInterval(() => void this.check(), CHECK_EVERY_MS);
    this.timer.unref();
    return keys;
  }

  private restart(why: string): void {
    if (this.stopped || this.restarting !== null) return;
    this.logger.info({ bucket: this.name }, `watching ${this.name} again (${why})`);
    this.restarting = this.watch();
    void this.restarting
      .catch((error: unknown) => this.logger.warn({ err: error, bucket: this.name }, `cannot watch ${this.name} again: ${(error as Error).message}`))
      .finally(() => (this.restarting = null));
  }

  private async check(): Promise<void> {
    if (!this.connection.connected || this.restarting !== null) return;
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
    const status = await this.kv.status();
    const keys = status.values;
    const watch = await this.kv.watch();
    this.watcher = watch;
    // The snapshot covers every revision up to now, those of expired or deleted keys included. Counted as seen only
    // once the watch exists: a restart whose request failed (a timeout while a leader moves) must leave the watch
    // behind, so that the next check starts it again; counted before, it passed for caught up and never came back.
    this.seen = Math.max(this.seen, status.streamInfo.state.last_seq);
    const entries: KvEntry[] = [];
    let snapshotDone = false;
    let loaded!: () => void;
    const ready = new Promise<void>((resolve) => (loaded = resolve));
    const finish = () => {
      snapshotDone = true;
      this.follower.snapshot(entries);
      loaded();
    };
    if (keys === 0) finish();
    // The followers guard their own handling (src/cluster/refusals.ts); this catch keeps a bug there from ending the
    // process with an unhandled rejection.
    void (async () => {
      for await (const entry of watch) {
        if (entry.revision > this.seen) this.seen = entry.revision;
        // The snapshot comes first, the last of it with `delta` 0 (nothing pending); updates follow.
        if (snapshotDone) this.follower.update(entry);
        else {
          entries.push(entry);
          if ((entry.delta ?? 0) === 0) finish();
        }
      }
    })().catch((error: unknown) => this.logger.error({ err: error, bucket: this.name }, `watching ${this.name} failed: ${(error as Error).message}; watched again at the next check`));
    await Promise.race([ready, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    if (!snapshotDone) finish();
    this.healthy = true;
    return keys;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.watcher?.stop();
  }
}
