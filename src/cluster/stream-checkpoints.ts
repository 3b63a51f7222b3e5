/**
 * Checkpoints of stream partitions (docs/cluster.md, "What moves on a failover"): the action states and the index of
 * one partition, with the sequence number of the last event-log message they cover, in the object store
 * `vigie_checkpoints` (a big index does not fit a KV value), and for each partition a pointer to its latest one in
 * the KV bucket `vigie_checkpoints`.
 *
 * The pointer is written with compare-and-set on its revision, and never moved back to an older sequence: a node
 * that lost a partition and still had a checkpoint in flight cannot overwrite the newer one of the partition's new
 * owner (which may have purged the log past the older one's sequence).
 */
import { randomUUID } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import type { Logger } from 'pino';
import type { IndexSnapshot } from '../stream/index-store.ts';
import type { SavedUnit } from '../stream/state-units.ts';

export const CHECKPOINTS_BUCKET = 'vigie_checkpoints';
/** The layout of a checkpoint this version writes; another is skipped (the partition starts afresh). */
export const PARTITION_CHECKPOINT_VERSION = 1;

export interface PartitionCheckpoint {
  version: number;
  stream: string;
  partition: number;
  /** The last event-log message the state covers (0: none). */
  seq: number;
  node: string;
  units: [string, SavedUnit][];
  index: IndexSnapshot;
}

interface Pointer {
  seq: number;
  object: string;
  node: string;
  atMs: number;
}

export type SaveOutcome = 'saved' | 'superseded';

export class CheckpointStore {
  constructor(
    private readonly kv: KV,
    private readonly objects: ObjectStore,
    private readonly logger: Logger,
  ) {}

  /** The latest checkpoint of a partition; null when there is none or it cannot be read (logged). */
  async load(key: string): Promise<PartitionCheckpoint | null> {
    const entry = await this.kv.get(key);
    if (entry === null || entry.operation !== 'PUT') return null;
    let pointer: Pointer;
    try {
      pointer = entry.json<Pointer>();
    } catch {
      this.logger.error({ key }, `unreadable checkpoint pointer ${key} in ${CHECKPOINTS_BUCKET}: the partition starts afresh`);
      return null;
    }
    const data = await this.objects.getBlob(pointer.object);
    if (data === null) {
      this.logger.error({ key, object: pointer.object }, `checkpoint ${pointer.object} is missing from ${CHECKPOINTS_BUCKET}: the partition starts afresh`);
      return null;
    }
    try {
      const checkpoint = JSON.parse(Buffer.from(data).toString('utf8')) as PartitionCheckpoint;
      if (checkpoint.version !== PARTITION_CHECKPOINT_VERSION) {
        this.logger.warn({ key, version: checkpoint.version }, `checkpoint ${pointer.object} has format ${checkpoint.version}, this version reads ${PARTITION_CHECKPOINT_VERSION}: skipped`);
        return null;
      }
      return checkpoint;
    } catch (error) {
      this.logger.error({ key, err: error }, `checkpoint ${pointer.object} cannot be read (${(error as Error).message}): the partition starts afresh`);
      return null;
    }
  }

  /** Writes a checkpoint and points the partition at it, unless a newer one is there already. */
  async save(key: string, checkpoint: PartitionCheckpoint): Promise<SaveOutcome> {
    const entry = await this.kv.get(key);
    let previous: Pointer | null = null;
    if (entry !== null && entry.operation === 'PUT') {
      try {
        previous = entry.json<Pointer>();
      } catch {
        previous = null;
      }
      if (previous !== null && previous.seq > checkpoint.seq) return 'superseded';
    }
    const object = `${key}.${checkpoint.seq}.${randomUUID().slice(0, 8)}`;
    await this.objects.putBlob({ name: object }, Buffer.from(JSON.stringify(checkpoint)));
    const pointer = JSON.stringify({ seq: checkpoint.seq, object, node: checkpoint.node, atMs: Date.now() } satisfies Pointer);
    try {
      if (entry === null) await this.kv.create(key, pointer);
      else await this.kv.update(key, pointer, entry.revision);
    } catch (error) {
      await this.objects.delete(object).catch(() => undefined);
      // Someone else wrote the pointer meanwhile: the partition has another owner now.
      if (/wrong last sequence|key exists/i.test((error as Error).message)) return 'superseded';
      throw error;
    }
    if (previous !== null) await this.objects.delete(previous.object).catch(() => undefined);
    return 'saved';
  }
}
