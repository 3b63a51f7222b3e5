/**
 * The cluster's store of API streams (docs/cluster.md, "Streams"): the KV bucket `vigie_streams`, one key per stream
 * (its name in base64url) holding `{text, persist}`, as `vigie_checks` holds API checks. A change on any node is
 * written here (the API answers 503 when it cannot be) and every node makes its API streams exactly the bucket's,
 * SQLite included. An empty bucket is seeded with the first node's API streams.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { StreamError } from '../stream/errors.ts';
import { BucketWatch } from './bucket-watch.ts';
import { checkKey } from './check-replica.ts';
import type { ClusterConnection } from './connection.ts';

export const STREAMS_BUCKET = 'vigie_streams';
const SETTLE_MS = 100;

export interface StoredStream {
  text: string;
  persist: boolean;
}

/** What the replica applies to: the stream service (src/stream/service.ts). */
export interface ReplicatedStreams {
  apiStreamTexts(): { name: string; text: string; persist: boolean }[];
  applyReplicatedStreams(desired: ReadonlyMap<string, StoredStream>): void;
}

export class StreamReplica {
  private desired = new Map<string, StoredStream>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private watch: BucketWatch | null = null;

  constructor(
    private readonly kv: KV,
    private readonly target: ReplicatedStreams,
    private readonly logger: Logger,
  ) {}

  async start(connection: ClusterConnection): Promise<void> {
    let first = true;
    this.watch = new BucketWatch(
      this.kv,
      STREAMS_BUCKET,
      {
        snapshot: (entries) => {
          const snapshot = new Map<string, StoredStream>();
          for (const entry of entries) this.note(snapshot, entry);
          this.desired = snapshot;
          if (!first) this.schedule();
        },
        update: (entry) => {
          this.note(this.desired, entry);
          this.schedule();
        },
      },
      connection,
      this.logger,
    );
    const keys = await this.watch.start();
    first = false;
    if (keys === 0) {
      const own = this.target.apiStreamTexts();
      if (own.length > 0) this.logger.info({ streams: own.length }, `${STREAMS_BUCKET} is empty: seeding it with this node's API streams`);
      for (const stream of own) await this.put(stream.name, stream.text, stream.persist);
    }
    this.target.applyReplicatedStreams(this.desired);
  }

  private note(into: Map<string, StoredStream>, entry: KvEntry): void {
    const name = Buffer.from(entry.key, 'base64url').toString('utf8');
    if (entry.operation !== 'PUT') {
      into.delete(name);
      return;
    }
    try {
      into.set(name, entry.json<StoredStream>());
    } catch {
      this.logger.error({ key: entry.key }, `unreadable stream in ${STREAMS_BUCKET}: skipped`);
    }
  }

  async put(name: string, text: string, persist: boolean): Promise<void> {
    const stored: StoredStream = { text, persist };
    await this.write(() => this.kv.put(checkKey(name), JSON.stringify(stored)));
    this.desired.set(name, stored);
  }

  async delete(name: string): Promise<void> {
    await this.write(() => this.kv.delete(checkKey(name)));
    this.desired.delete(name);
  }

  private async write(work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (error) {
      throw new StreamError('unavailable', `the cluster's stream store (${STREAMS_BUCKET}) cannot be written: ${(error as Error).message}`);
    }
  }

  private schedule(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.target.applyReplicatedStreams(this.desired);
    }, SETTLE_MS);
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.watch?.stop();
  }
}
