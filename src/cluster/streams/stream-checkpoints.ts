/**
 * The bucket of the stream partitions' checkpoints (docs/cluster.md, "What moves on a failover"): for each partition
 * a pointer in the KV bucket `vigie_checkpoints` holds its latest checkpoint
 * (src/cluster/streams/partition-checkpoints.ts writes it: one value holding the action states and the index of one
 * partition, with the sequence number of the last event-log message they cover): inside it when it is at most
 * `INLINE_MAX_BYTES` (one KV write), otherwise in the object store `vigie_checkpoints` under a name the pointer gives
 * (a big index does not fit a KV value). The object store costs six JetStream requests or more per save (the chunks,
 * their metadata, then the deletion of the previous object); with 64 partitions checkpointed every few seconds those
 * were a quarter of a node's CPU under ingest (bench/JOURNAL.md).
 *
 * The pointer is written with compare-and-set on the revision the writer last loaded or wrote: a node whose view
 * of the partition is stale (it lost the partition and still had a checkpoint in flight, or it took the partition
 * while the previous owner checkpointed and purged the log once more) cannot point it at a state that misses
 * events; it reloads the newest checkpoint instead.
 *
 * Beside each pointer, `<key>.seq` holds the bare sequence of its checkpoint: the log of a stream is purged below
 * the lowest of its partitions' (`floor`), read without fetching checkpoints that may weigh 256 KB each.
 *
 * Pointers and checkpoints are untrusted (docs/cluster.md, "What a node does with what it reads"): a pointer that is
 * not one, or names an object of another partition, and a checkpoint that is not one of this partition (its index
 * events checked as events, src/stream/event.ts) are refused, counted (`source="checkpoints"`), and the partition
 * starts afresh from the log.
 */
import { randomUUID } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { CHECKPOINT_FORMAT_VERSION } from '../../stream/durability/checkpoint-store.ts';
import { eventsProblem } from '../../stream/event.ts';
import { matchingKey, type MessageRefusals, WireSchema } from '../refusals.ts';

export const CHECKPOINTS_BUCKET = 'vigie_checkpoints';
/** The layout of a checkpoint this version writes; another is skipped (the partition starts afresh). Version 1 held
 *  each action's state whole (`units`) and the index as `{key, event}` objects. */
export const PARTITION_CHECKPOINT_VERSION = 2;
/** A checkpoint up to this size is written in its pointer: well under NATS' default max_payload (1 MiB). */
const INLINE_MAX_BYTES = 256 * 1024;

/**
 * A partition's checkpoint: what its last committed round wrote to the store
 * (src/stream/durability/checkpoint-store.ts). The rows of action state are `[stream, path, forkKey, round, action,
 * configHash, state]` (state as JSON, null for a fork removed), the index entries `[stream, key, event]`.
 */
export interface PartitionCheckpoint {
  version: number;
  stream: string;
  partition: number;
  /** The last event-log message the state covers (0: none). */
  seq: number;
  node: string;
  round: number;
  formatVersion: number;
  /** A config hash is null in a checkpoint of format 1, which had none. */
  indexes: { stream: string; currentTimeNs: number; configHash: string | null }[];
  entries: [string, string, object][];
  states: [string, string, string, number, string, string, unknown][];
}

/** A pointer names its checkpoint's object, or holds the checkpoint itself (checked on its own, below). */
interface Pointer {
  seq: number;
  object?: string;
  checkpoint?: unknown;
  node: string;
  atMs: number;
}

const POINTER = new WireSchema<Pointer>(
  Type.Object({
    seq: Type.Integer({ minimum: 0 }),
    object: Type.Optional(Type.String()),
    checkpoint: Type.Optional(Type.Unknown()),
    node: Type.String(),
    atMs: Type.Number(),
  }),
  (pointer) =>
    (pointer.object === undefined) === (pointer.checkpoint === undefined)
      ? 'a pointer names an object or holds a checkpoint, one of the two'
      : null,
);

/** Its index events checked under the reading service's `streams.max-event-depth`, read at each load. */
const checkpointSchema = (nesting: { readonly eventDepth: number }) =>
  new WireSchema<PartitionCheckpoint>(
    Type.Object({
      version: Type.Number(),
      stream: Type.String(),
      partition: Type.Integer({ minimum: 0 }),
      seq: Type.Integer({ minimum: 0 }),
      node: Type.String(),
      round: Type.Integer({ minimum: 0 }),
      formatVersion: Type.Number(),
      indexes: Type.Array(
        Type.Object({ stream: Type.String(), currentTimeNs: Type.Number(), configHash: Type.String() }),
      ),
      entries: Type.Array(Type.Tuple([Type.String(), Type.String(), Type.Object({})])),
      states: Type.Array(
        Type.Tuple([
          Type.String(),
          Type.String(),
          Type.String(),
          Type.Integer({ minimum: 0 }),
          Type.String(),
          Type.String(),
          Type.Unknown(),
        ]),
      ),
    }),
    (checkpoint) =>
      eventsProblem(
        checkpoint.entries.map((entry) => entry[2]),
        { eventDepth: nesting.eventDepth, timed: true, fromJson: true },
      ),
  );

/** A checkpoint of format 1 (before 2026-12-07): each action's state whole, the index as `{key, event}` objects. */
interface CheckpointFormat1 {
  version: 1;
  stream: string;
  partition: number;
  seq: number;
  node: string;
  units: [string, { hash: string; state: unknown }][];
  index: { currentTime: number; entries: { key: string; event: object }[] };
}

const format1Schema = (nesting: { readonly eventDepth: number }) =>
  new WireSchema<CheckpointFormat1>(
    Type.Object({
      version: Type.Literal(1),
      stream: Type.String(),
      partition: Type.Integer({ minimum: 0 }),
      seq: Type.Integer({ minimum: 0 }),
      node: Type.String(),
      units: Type.Array(Type.Tuple([Type.String(), Type.Object({ hash: Type.String(), state: Type.Unknown() })])),
      index: Type.Object({
        currentTime: Type.Number(),
        entries: Type.Array(Type.Object({ key: Type.String(), event: Type.Object({}) })),
      }),
    }),
    (checkpoint) =>
      eventsProblem(
        checkpoint.index.entries.map((entry) => entry.event),
        { eventDepth: nesting.eventDepth, timed: true, fromJson: true },
      ),
  );

/** A `by`'s state as format 1 saved it whole: its own state and its forks. */
function isForkTable(state: unknown): state is { own: unknown; entries: [string, unknown][] } {
  if (typeof state !== 'object' || state === null || Array.isArray(state)) return false;
  const { entries } = state as { entries?: unknown };
  return (
    Object.keys(state).length === 2 &&
    'own' in state &&
    Array.isArray(entries) &&
    entries.every((entry) => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string')
  );
}

/**
 * A checkpoint of format 1 as rows, so that a cluster upgraded from it (every node stopped, each checkpointing its
 * partitions, then started again) loses nothing: a `by`'s state becomes its own row and a row per fork, any other
 * state one row; the index, whose config was not recorded, is restored whatever the stream's config is, as format 1
 * was.
 */
function fromFormat1(old: CheckpointFormat1): PartitionCheckpoint {
  const { stream, partition, seq, node } = old;
  const round = 1;
  const states: PartitionCheckpoint['states'] = [];
  for (const [path, { hash, state }] of old.units) {
    if (!isForkTable(state)) {
      states.push([stream, path, '', round, '', hash, state]);
      continue;
    }
    states.push([stream, path, '', round, '', hash, { own: state.own, since: round }]);
    for (const [forkKey, fork] of state.entries) states.push([stream, path, forkKey, round, '', hash, fork]);
  }
  return {
    version: PARTITION_CHECKPOINT_VERSION,
    stream,
    partition,
    seq,
    node,
    round,
    formatVersion: CHECKPOINT_FORMAT_VERSION,
    indexes: [{ stream, currentTimeNs: old.index.currentTime, configHash: null }],
    entries: old.index.entries.map((entry) => [stream, entry.key, entry.event]),
    states,
  };
}

/** What a partition's store knows of its pointer: its revision (0: there is none) and the object it names. */
export interface PointerState {
  readonly revision: number;
  readonly object: string | null;
}

export const NO_POINTER: PointerState = { revision: 0, object: null };

export type SaveOutcome = { outcome: 'saved'; pointer: PointerState } | { outcome: 'superseded' };

/** A partition's key in the bucket, and what a checkpoint read there must be of. */
interface PartitionKey {
  readonly key: string;
  readonly stream: string;
  readonly partition: number;
}

export interface CheckpointBucketOptions {
  kv: KV;
  objects: ObjectStore;
  refusals: MessageRefusals;
  logger: Logger;
  /** The service's nesting limits: a checkpoint's index events are checked with them. */
  nesting: { readonly eventDepth: number };
}

export class CheckpointBucket {
  private readonly checkpoint: WireSchema<PartitionCheckpoint>;
  private readonly format1: WireSchema<CheckpointFormat1>;
  private readonly kv: KV;
  private readonly objects: ObjectStore;
  private readonly refusals: MessageRefusals;
  private readonly logger: Logger;

  constructor(options: CheckpointBucketOptions) {
    ({ kv: this.kv, objects: this.objects, refusals: this.refusals, logger: this.logger } = options);
    this.checkpoint = checkpointSchema(options.nesting);
    this.format1 = format1Schema(options.nesting);
  }

  /**
   * The latest checkpoint of a partition (null when there is none or it cannot be read, logged), and the pointer
   * as it was: the partition's next save must find it unchanged. `stream` and `partition`: what the checkpoint must
   * be of.
   */
  async load(
    key: string,
    stream: string,
    partition: number,
  ): Promise<{ checkpoint: PartitionCheckpoint | null; pointer: PointerState }> {
    const entry = await this.kv.get(key);
    if (entry === null) return { checkpoint: null, pointer: NO_POINTER };
    if (entry.operation !== 'PUT') return { checkpoint: null, pointer: { revision: entry.revision, object: null } };
    // Objects are named after their partition's key: a pointer elsewhere would load another partition's state.
    const decoded = matchingKey(POINTER.decode(entry.value), ({ object }) =>
      object === undefined || object.startsWith(`${key}.`) ? null : `it names object ${JSON.stringify(object)}`,
    );
    if (!decoded.ok) {
      this.refusals.refuse(
        'checkpoints',
        decoded.reason,
        `checkpoint pointer ${key} in ${CHECKPOINTS_BUCKET}: ${decoded.detail}; the partition starts afresh`,
        { key },
      );
      return { checkpoint: null, pointer: { revision: entry.revision, object: null } };
    }
    const pointer = decoded.value;
    const at: PartitionKey = { key, stream, partition };
    if (pointer.object === undefined) {
      const state: PointerState = { revision: entry.revision, object: null };
      return {
        checkpoint: this.checked(pointer.checkpoint, `the checkpoint in pointer ${key}`, at),
        pointer: state,
      };
    }
    const state: PointerState = { revision: entry.revision, object: pointer.object };
    const data = await this.objects.getBlob(pointer.object);
    if (data === null) {
      this.logger.error(
        { key, object: pointer.object },
        `checkpoint ${pointer.object} is missing from ${CHECKPOINTS_BUCKET}: the partition starts afresh`,
      );
      return { checkpoint: null, pointer: state };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(data).toString('utf8'));
    } catch (error) {
      this.refusals.refuse(
        'checkpoints',
        'not_json',
        `checkpoint ${pointer.object}: ${(error as Error).message}; the partition starts afresh`,
        { key },
      );
      return { checkpoint: null, pointer: state };
    }
    return { checkpoint: this.checked(parsed, `checkpoint ${pointer.object}`, at), pointer: state };
  }

  /** The checkpoint `parsed` is, if it is one of this format and of this partition; null (logged, counted) if not. */
  private checked(parsed: unknown, what: string, at: PartitionKey): PartitionCheckpoint | null {
    const version = (parsed as { version?: unknown } | null)?.version;
    if (version === 1) {
      const old = this.ofPartition(this.format1, parsed, what, at);
      return old === null ? null : fromFormat1(old);
    }
    if (typeof version === 'number' && version !== PARTITION_CHECKPOINT_VERSION) {
      this.logger.warn(
        { key: at.key, version },
        `${what} has format ${version}, this version reads ${PARTITION_CHECKPOINT_VERSION}: skipped`,
      );
      return null;
    }
    return this.ofPartition(this.checkpoint, parsed, what, at);
  }

  /** `parsed` as `schema` reads it, if it is of this partition; null (refused: logged, counted) if not. */
  private ofPartition<T extends { stream: string; partition: number }>(
    schema: WireSchema<T>,
    parsed: unknown,
    what: string,
    at: PartitionKey,
  ): T | null {
    const checkpoint = matchingKey(schema.validate(parsed), ({ stream, partition }) =>
      stream === at.stream && partition === at.partition ? null : `it is of stream ${stream} partition ${partition}`,
    );
    if (checkpoint.ok) return checkpoint.value;
    const { reason, detail } = checkpoint;
    this.refusals.refuse('checkpoints', reason, `${what}: ${detail}; the partition starts afresh`, { key: at.key });
    return null;
  }

  /** Deletes the checkpoints of every partition whose key starts with `prefix` (a stream removed from the cluster). */
  async forget(prefix: string): Promise<number> {
    let forgotten = 0;
    for await (const key of await this.kv.keys(`${prefix}.>`)) {
      const entry = await this.kv.get(key);
      if (entry?.operation === 'PUT') {
        try {
          const { object } = entry.json<Pointer>();
          if (typeof object === 'string') await this.objects.delete(object);
        } catch {
          // Unreadable, or already gone.
        }
      }
      await this.kv.purge(key);
      if (!key.endsWith('.seq')) forgotten++;
    }
    return forgotten;
  }

  /**
   * Writes a checkpoint and points the partition at it, if the pointer is still at `known` (compare-and-set on its
   * revision). Otherwise another node wrote it since this one loaded or last wrote it: this node's state may lack
   * what that node covered (and purged from the log), so it is not saved and the partition must be reloaded.
   */
  async save(
    key: string,
    encoded: Buffer,
    written: { seq: number; node: string },
    known: PointerState,
  ): Promise<SaveOutcome> {
    const head = { seq: written.seq, node: written.node, atMs: Date.now() };
    let object: string | null = null;
    let pointer: Uint8Array;
    if (encoded.length <= INLINE_MAX_BYTES) {
      // The checkpoint's JSON as the pointer's `checkpoint` field, without parsing and encoding it again.
      pointer = Buffer.concat([
        Buffer.from(`${JSON.stringify(head).slice(0, -1)},"checkpoint":`),
        encoded,
        Buffer.from('}'),
      ]);
    } else {
      object = `${key}.${written.seq}.${randomUUID().slice(0, 8)}`;
      await this.objects.putBlob({ name: object }, encoded);
      pointer = Buffer.from(JSON.stringify({ ...head, object } satisfies Pointer));
    }
    let revision: number;
    try {
      revision =
        known.revision === 0 ? await this.kv.create(key, pointer) : await this.kv.update(key, pointer, known.revision);
    } catch (error) {
      if (object !== null) await this.objects.delete(object).catch(() => undefined);
      if (/wrong last sequence|key exists/i.test((error as Error).message)) return { outcome: 'superseded' };
      throw error;
    }
    if (known.object !== null) await this.objects.delete(known.object).catch(() => undefined);
    await this.kv.put(`${key}.seq`, String(written.seq));
    return { outcome: 'saved', pointer: { revision, object } };
  }

  /**
   * The lowest sequence the checkpoints of partitions `0` to `partitions - 1` of a stream cover (its id), 0 when one
   * of them has none: the stream's log up to it is needed by no partition. A value that is not a sequence is refused
   * and counts as none.
   */
  async floor(id: string, partitions: number): Promise<number> {
    let floor = Number.POSITIVE_INFINITY;
    for (let partition = 0; partition < partitions; partition++) {
      const key = `${id}.${partition}.seq`;
      const entry = await this.kv.get(key);
      if (entry === null || entry.operation !== 'PUT') return 0;
      const text = entry.string();
      const seq = /^\d{1,15}$/.test(text) ? Number(text) : -1;
      if (seq < 0) {
        this.refusals.refuse(
          'checkpoints',
          'shape',
          `checkpoint sequence ${key} in ${CHECKPOINTS_BUCKET} is ${JSON.stringify(text.slice(0, 40))}, not a sequence: the log is not purged`,
          { key },
        );
        return 0;
      }
      floor = Math.min(floor, seq);
    }
    return Number.isFinite(floor) ? floor : 0;
  }
}
