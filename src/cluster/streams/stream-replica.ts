/**
 * The cluster's store of API streams (docs/cluster.md, "Streams"): the KV bucket `vigie_streams`, one key per stream
 * (its name in base64url) holding `{text, persist}`, as `vigie_checks` holds API checks. A change on any node is
 * written here (the API answers 503 when it cannot be) and every node makes its API streams exactly the bucket's,
 * SQLite included. An empty bucket is seeded with the first node's API streams.
 *
 * Each value goes through what the API applies to a stream it is given (src/stream/service.ts
 * `applyReplicatedStreams`: the name, the EDN, the compiler, `:persist` as the text says); what fails is refused,
 * counted and logged, and neither runs nor is listed here.
 */
import type { KV } from '@nats-io/kv';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { ClusterConnection } from '../connection.ts';
import { NamedBucket } from '../named-bucket.ts';
import { type MessageRefusals, WireSchema } from '../refusals.ts';
import { ClusterUnavailableError } from '../errors.ts';

export const STREAMS_BUCKET = 'vigie_streams';

export interface StoredStream {
  text: string;
  persist: boolean;
}

const STORED = new WireSchema<StoredStream>(Type.Object({ text: Type.String(), persist: Type.Boolean() }));

/** What the replica applies to: the stream service (src/stream/service.ts). */
export interface ReplicatedStreams {
  apiStreamTexts(): { name: string; text: string; persist: boolean }[];
  /** `refused` is told of each stream the API would refuse (it is not applied). */
  applyReplicatedStreams(
    desired: ReadonlyMap<string, StoredStream>,
    refused: (name: string, why: string) => void,
  ): void;
}

export class StreamReplica {
  private readonly bucket: NamedBucket<StoredStream>;

  constructor(
    kv: KV,
    private readonly target: ReplicatedStreams,
    refusals: MessageRefusals,
    private readonly logger: Logger,
  ) {
    this.bucket = new NamedBucket<StoredStream>(
      kv,
      STREAMS_BUCKET,
      { source: 'streams', schema: STORED, refusals },
      logger,
      () => this.apply(),
    );
  }

  private apply(): void {
    this.target.applyReplicatedStreams(this.bucket.current, (name, why) => this.bucket.refuse(name, 'invalid', why));
  }

  async start(connection: ClusterConnection): Promise<void> {
    const keys = await this.bucket.start(connection);
    if (keys === 0) {
      const own = this.target.apiStreamTexts();
      if (own.length > 0)
        this.logger.info(
          { streams: own.length },
          `${STREAMS_BUCKET} is empty: seeding it with this node's API streams`,
        );
      for (const stream of own) await this.put(stream.name, stream.text, stream.persist);
    }
    this.apply();
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
      throw new ClusterUnavailableError(
        `the cluster's stream store (${STREAMS_BUCKET}) cannot be written: ${(error as Error).message}`,
      );
    }
  }

  stop(): void {
    this.bucket.stop();
  }
}
