/**
 * One stream partition's checkpoint store (src/stream/durability/checkpoint-store.ts) in JetStream (docs/cluster.md,
 * "What moves on a failover"): a round's rows packed into one value, the partition's checkpoint, which the bucket keeps
 * (src/cluster/streams/stream-checkpoints.ts). Only the last round counts, so each round writes every row (`whole`).
 * The rows are encoded as the round writes them, in its time-boxed slices on the event loop
 * (src/stream/durability/snapshotter.ts): a checkpoint whose index holds 100,000 events is never encoded in one piece.
 * The round is kept once its value is written and the pointer moved to it; a pointer another node moved since this one
 * read it means the partition is that node's now (`superseded`): the partition is dropped here.
 */
import type {
  CheckpointDamage,
  CheckpointHead,
  CheckpointReader,
  CheckpointStore,
  CheckpointWriter,
  CommitOutcome,
  IndexMeta,
  StateRow,
  StoredIndexEntry,
  StoredIndexMeta,
} from '../../stream/durability/checkpoint-store.ts';
import {
  type CheckpointBucket,
  NO_POINTER,
  PARTITION_CHECKPOINT_VERSION,
  type PartitionCheckpoint,
  type PointerState,
} from './stream-checkpoints.ts';

/** Rows joined into one buffer at a time. */
const BATCH = 256;

export interface PartitionCheckpointsOptions {
  bucket: CheckpointBucket;
  /** The partition's key (`<stream id>.<partition>`), its stream and number: what its checkpoint must be of. */
  key: string;
  stream: string;
  partition: number;
  /** This node, named in each checkpoint it writes. */
  node: string;
  /** Another node checkpointed the partition since this one read it. */
  superseded(): void;
}

export class PartitionCheckpoints implements CheckpointStore {
  readonly whole = true;
  private pointer: PointerState = NO_POINTER;
  private round: RoundRows | null = null;

  constructor(private readonly options: PartitionCheckpointsOptions) {}

  async load(): Promise<CheckpointReader> {
    const { bucket, key, stream, partition } = this.options;
    const { checkpoint, pointer } = await bucket.load(key, stream, partition);
    this.pointer = pointer;
    return new StoredRows(checkpoint);
  }

  begin(): void {
    this.round = new RoundRows();
  }

  /** Nothing stays from round to round. */
  indexStreams(): readonly string[] {
    return [];
  }

  dropIndex(): void {}

  slice(work: (writer: CheckpointWriter) => void): void {
    work(this.round ?? (this.round = new RoundRows()));
  }

  async committed(): Promise<CommitOutcome> {
    const round = this.round;
    this.round = null;
    const head = round?.head;
    if (round === null || head === undefined) throw new Error('no round was written');
    const { bucket, key, stream, partition, node } = this.options;
    const seq = head.position.seq;
    const encoded = round.encode({
      version: PARTITION_CHECKPOINT_VERSION,
      stream,
      partition,
      seq,
      node,
      round: head.round,
      formatVersion: head.formatVersion,
    });
    const saved = await bucket.save(key, encoded, { seq, node }, this.pointer);
    if (saved.outcome === 'superseded') {
      this.options.superseded();
      return 'superseded';
    }
    this.pointer = saved.pointer;
    return 'committed';
  }

  pace(): void {}

  async close(): Promise<void> {}
}

/** A round's rows, encoded as they are written: the JSON of a checkpoint's arrays, a batch of rows at a time. */
class RoundRows implements CheckpointWriter {
  head: CheckpointHead | undefined;
  private readonly metas = new Map<string, IndexMeta>();
  private readonly entries = new JsonArray();
  private readonly states = new JsonArray();
  /** Each stream's name as JSON, once. */
  private readonly names = new Map<string, string>();

  private name(stream: string): string {
    let json = this.names.get(stream);
    if (json === undefined) this.names.set(stream, (json = JSON.stringify(stream)));
    return json;
  }

  /** Each round writes an index whole, and nothing of earlier rounds is kept: nothing to drop or remove. */
  dropIndex(): void {}

  removeIndexEntry(): void {}

  putIndexMeta(meta: IndexMeta): void {
    this.metas.set(meta.stream, meta);
  }

  putIndexEntry(stream: string, key: string, eventJson: string): void {
    this.entries.push(`[${this.name(stream)},${JSON.stringify(key)},${eventJson}]`);
  }

  putState(row: StateRow): void {
    const { path, forkKey, round, action, configHash, state } = row;
    const key = `${this.name(row.stream)},${JSON.stringify(path)},${JSON.stringify(forkKey)}`;
    this.states.push(`[${key},${round},${JSON.stringify(action)},${JSON.stringify(configHash)},${state ?? 'null'}]`);
  }

  deleteOlderStates(): void {}

  purgeStates(): number {
    return 0;
  }

  commit(head: CheckpointHead): void {
    this.head = head;
  }

  /** The checkpoint's bytes: its head's fields, then the rows as written. */
  encode(fields: Omit<PartitionCheckpoint, 'indexes' | 'entries' | 'states'>): Buffer {
    const head = JSON.stringify({ ...fields, indexes: [...this.metas.values()] });
    return Buffer.concat([
      Buffer.from(`${head.slice(0, -1)},"entries":`),
      ...this.entries.buffers(),
      Buffer.from(',"states":'),
      ...this.states.buffers(),
      Buffer.from('}'),
    ]);
  }
}

/** A JSON array of pieces of JSON text, gathered into buffers a batch at a time. */
class JsonArray {
  private readonly done: Buffer[] = [];
  private batch: string[] = [];

  push(json: string): void {
    this.batch.push(json);
    if (this.batch.length === BATCH) this.flush();
  }

  private flush(): void {
    if (this.batch.length === 0) return;
    this.done.push(Buffer.from((this.done.length > 0 ? ',' : '') + this.batch.join(',')));
    this.batch = [];
  }

  buffers(): Buffer[] {
    this.flush();
    return [Buffer.from('['), ...this.done, Buffer.from(']')];
  }
}

/** A checkpoint as read back (checked by the bucket), as the partition's restore reads it. */
class StoredRows implements CheckpointReader {
  readonly damaged: readonly CheckpointDamage[] = [];
  private states: StateRow[];

  constructor(private readonly checkpoint: PartitionCheckpoint | null) {
    this.states = (checkpoint?.states ?? []).map(([stream, path, forkKey, round, action, configHash, state]) => ({
      stream,
      path,
      forkKey,
      round,
      action,
      configHash,
      // The rows' states are JSON in the checkpoint: as text again, as a row holds them.
      state: state === null ? null : JSON.stringify(state),
    }));
  }

  head(): CheckpointHead | null {
    const { checkpoint } = this;
    if (checkpoint === null) return null;
    const { round, formatVersion, seq, node } = checkpoint;
    return { round, formatVersion, position: { seq, offset: 0 }, writer: node };
  }

  stateRows(): readonly StateRow[] {
    return this.states;
  }

  stateStreams(): readonly string[] {
    return [...new Set(this.states.map((row) => row.stream))];
  }

  discardStates(): void {
    this.states = [];
  }

  indexMetas(): readonly StoredIndexMeta[] {
    return this.checkpoint?.indexes ?? [];
  }

  indexEntries(stream: string): readonly StoredIndexEntry[] {
    const entries: StoredIndexEntry[] = [];
    for (const [of, key, event] of this.checkpoint?.entries ?? []) if (of === stream) entries.push({ key, event });
    return entries;
  }

  /** What the bucket read was checked whole before any of it was used: no part of it fails later. */
  setAside(): CheckpointDamage[] {
    return [];
  }
}
