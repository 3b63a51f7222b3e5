/**
 * Where a partition's checkpoints are kept (docs/architecture.md, "Ports"; docs/durability.md, "Checkpoints"): rows
 * of action state and index entries, which a partition's checkpoint rounds (src/stream/durability/snapshotter.ts) write
 * in time-boxed slices and commit with the log position they cover, and which a partition that starts reads back. A
 * single node keeps them in SQLite (src/stream/durability/sqlite-checkpoints.ts), where rows stay from round to round
 * and a round writes what changed; a cluster's partitions in JetStream's KV bucket and object store (src/cluster/),
 * which packs a round's rows into one value: each round there writes everything (`whole`). A contract of its own, with
 * its own types, so that a store's implementation imports nothing else of stream/.
 */
import type { LogPosition } from './event-log.ts';

/**
 * The layout of the state rows this version writes (an own row of a `by` holds `{own, since}`, each fork a row of its
 * own: src/stream/durability/state-checkpoint.ts); a checkpoint of another layout is not restored.
 */
export const CHECKPOINT_FORMAT_VERSION = 1;

/** What a committed checkpoint says of itself. */
export interface CheckpointHead {
  /** Rounds count up from the first one a store holds (0: none committed). */
  readonly round: number;
  /** The layout of the state rows (src/stream/durability/state-checkpoint.ts); a checkpoint of another is not
   *  restored. */
  readonly formatVersion: number;
  /** The position of the log it covers: a restore reads the log after it. */
  readonly position: LogPosition;
  /** Who wrote it, when the store knows another writer may have (a cluster's node). */
  readonly writer?: string;
}

/** One action's state, or one fork of a `by`: a key (stream, action's place in the tree, fork key or ''), the round
 *  that wrote it, and the state as JSON text (null: the fork was removed). */
export interface StateRow {
  readonly stream: string;
  readonly path: string;
  readonly forkKey: string;
  readonly round: number;
  readonly action: string;
  readonly configHash: string;
  readonly state: string | null;
}

/** An index's own row: its clock, and the hash of the stream config it was built by. */
export interface IndexMeta {
  readonly stream: string;
  readonly currentTimeNs: number;
  readonly configHash: string;
}

/** An index's row as read back: its config hash null when an earlier version wrote it without one (it is restored
 *  into the stream whatever the stream's config is, as that version did). */
export interface StoredIndexMeta extends Omit<IndexMeta, 'configHash'> {
  readonly configHash: string | null;
}

/** An index entry as read back: its event as JSON text, or as parsed from a store that holds it as JSON itself. */
export interface StoredIndexEntry {
  readonly key: string;
  readonly event: string | object;
}

/** What a round writes, inside a slice (`CheckpointStore.slice`). */
export interface CheckpointWriter {
  /** Drops every entry of a stream's index (it is written whole, or its stream is gone). */
  dropIndex(stream: string): void;
  putIndexMeta(meta: IndexMeta): void;
  /** `eventJson`: the entry's event as JSON text. */
  putIndexEntry(stream: string, key: string, eventJson: string): void;
  removeIndexEntry(stream: string, key: string): void;
  putState(row: StateRow): void;
  /** Deletes the rows of one key older than `round` (superseded once `round` is committed). */
  deleteOlderStates(stream: string, path: string, forkKey: string, round: number): void;
  /** Deletes at most `limit` rows of a stream older than `round`; returns how many it deleted. */
  purgeStates(stream: string, round: number, limit: number): number;
  /** The round is written: this head makes it the checkpoint a restore reads, once `committed()` says so. */
  commit(head: CheckpointHead): void;
}

/** 'superseded': another writer's checkpoint replaced the one the store read (a cluster partition that moved): this
 *  round is not kept, and the partition stops here. */
export type CommitOutcome = 'committed' | 'superseded';

/** A store's damage that costs streams their state or index, found when it was opened or read. */
export interface CheckpointDamage {
  readonly kind: 'state' | 'index';
  /** What was wrong, and where what could not be read was set aside. */
  readonly problem: string;
  /** The streams it touched, null when the store cannot say (every stream that may have had some). */
  readonly streams: readonly string[] | null;
}

/** The parts of a checkpoint a read may fail on, each set aside on its own. */
export type CheckpointPart = 'head' | 'states' | 'indexes';

/** A store's checkpoint as a restore reads it. A read throws when what it reads is damaged (`setAside`). */
export interface CheckpointReader {
  /** Damage found before any read (a single node: tables set aside when the database was opened). */
  readonly damaged: readonly CheckpointDamage[];
  /** The last committed round, null when there is none. */
  head(): CheckpointHead | null;
  /** The state rows of the committed round `round` (each key's newest). */
  stateRows(round: number): readonly StateRow[];
  /** The streams that have state rows. */
  stateStreams(): readonly string[];
  /** Forgets every state (a checkpoint of a format this version does not read). */
  discardStates(): void;
  indexMetas(): readonly StoredIndexMeta[];
  indexEntries(stream: string): readonly StoredIndexEntry[];
  /** A read of `part` threw `problem`: what it read is set aside, so that the next round writes sound rows. */
  setAside(part: CheckpointPart, problem: string): CheckpointDamage[];
}

export interface CheckpointStore {
  /** True: a committed checkpoint is only what its round wrote, so every round writes every row; false: rows stay
   *  until deleted, and a round writes what changed since the last. */
  readonly whole: boolean;
  /** The checkpoint to restore (a cluster's store fetches it). */
  load(): Promise<CheckpointReader>;
  /** A round begins: a store that keeps only each round's rows starts a new checkpoint. */
  begin(round: number): void;
  /** The streams whose index the store holds now. */
  indexStreams(): readonly string[];
  /** Drops a stream's index outside a round (its stream is gone, or its index is empty). */
  dropIndex(stream: string): void;
  /** Runs one slice of a round as one unit (SQLite: one transaction): what `work` throws undoes the slice. */
  slice(work: (writer: CheckpointWriter) => void): void;
  /** Once the slice that called `commit` ran: whether the round is kept, at once or once it is written. */
  committed(): CommitOutcome | Promise<CommitOutcome>;
  /** A round begins (`bulk`: with many rows to write), a slice is written and `more` follow, the round is over:
   *  a store may pace what it does besides (SQLite: its WAL checkpoints). */
  pace(moment: 'bulk' | 'more' | 'done'): void;
  /** After the last round. */
  close(): Promise<void>;
}
