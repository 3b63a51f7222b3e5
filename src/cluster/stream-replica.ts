/**
 * The cluster's store of API streams (docs/cluster.md, "Streams"): the KV bucket `vigie_streams`, one key per stream
 * (its name in base64url) holding `{text, persist}`, as `vigie_checks` holds API checks. A change on any node is
 * written here (the API answers 503 when it cannot be) and every node makes its API streams exactly the bucket's,
 * SQLite included. An empty bucket is seeded with the first node's API streams.
 */
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import { StreamError } from '../stream/errors.ts';
import type { ClusterConnection } from './connection.ts';
import { NamedBucket } from './named-bucket.ts';

export const STREAMS_BUCKET = 'vigie_streams';

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
  private readonly bucket: NamedBucket<StoredStream>;

  constructor(
    kv: KV,
    private readonly target: ReplicatedStreams,
    private readonly logger: Logger,
  ) {
    this.bucket = new NamedBucket<StoredStream>(kv, STREAMS_BUCKET, 'stream', logger, () => target.applyReplicatedStreams(this.bucket.current));
  }

  async start(connection: ClusterConnection): Promise<void> {
    const keys = await this.bucket.start(connection);
    if (keys === 0) {
      const own = this.target.apiStreamTexts();
      if (own.length > 0) this.logger.info({ streams: own.length }, `${STREAMS_BUCKET} is empty: seeding it with this node's API streams`);
      for (const stream of own) await this.put(stream.name, stream.text, stream.persist);
    }
    this.target.applyReplicatedStreams(this.bucket.current);
  }

  put(name: string, text: string, persist: boolean): Promise<void> {
    return this.write(() => this.bucket.put(name, { text, persist }));
  }

  delete(name: string): Promise<void> {
    return this.write(() => this.bucket.delete(name));
  }

  private async write(work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (error) {
      throw new StreamError('unavailable', `the cluster's stream store (${STREAMS_BUCKET}) cannot be written: ${(error as Error).message}`);
    }
  }

  stop(): void {
    this.bucket.stop();
  }
}
