/**
 * The event log a partition is fed from (docs/architecture.md, "Ports"): every batch an input acknowledges is in the
 * log first, a partition (src/stream/partition/partition.ts) applies the log in order and records in each checkpoint
 * how far it got, and a partition that starts (a restart, a new owner) restores its last checkpoint and reads the log
 * from there. A single node's log is the file journal (src/stream/durability/journal-log.ts); a cluster's is JetStream,
 * one log per stream whose messages hold every partition's events (src/cluster/). The inputs append through the
 * placement's ingest (src/stream/partition/placement.ts); this is what a partition reads. A contract of its own, with
 * its own types, so that a log's implementation imports nothing else of stream/.
 */
import type { Event } from '../event.ts';

/** How far a partition got in its log: every entry before `seq`, and the first `offset` events of entry `seq`. A
 *  cluster's entries are messages, each applied whole (`offset` 0). */
export interface LogPosition {
  readonly seq: number;
  readonly offset: number;
}

export const LOG_START: LogPosition = { seq: 0, offset: 0 };

/**
 * What an input hands a single node's log (the journal) of a batch: its events, encoded once. `format` says how
 * `payload` holds them: `events`, a JSON array of events as they were pushed; `json-body`, the body of
 * `PUT /api/v1/stream/<name>` as received, whose events without a time get `receivedAtNs`
 * (src/stream/durability/journal-records.ts decodes both).
 */
export interface LogRecord {
  readonly target: string;
  readonly input: string;
  readonly format: 'events' | 'json-body';
  readonly receivedAtNs: number;
  readonly count: number;
  readonly payload: Buffer;
}

/** A record as the single node's journal hands it back, with its place in the journal. */
export interface LogEntry extends LogRecord {
  readonly seq: number;
}

/** A partition's log. */
export interface PartitionLog {
  /**
   * Hands `reader` the log's entries after `from`, in order: what the log holds now (the replay of a restart or a
   * failover), then each entry as it is appended, until `stop`. The first entry handed may be entry `from.seq`, its
   * first `from.offset` events left out.
   */
  follow(from: LogPosition, reader: LogReader): void;
  /** Hands the partition nothing more. */
  stop(): void;
  /** A committed checkpoint of the partition covers the log up to `position`: the log may drop what no partition
   *  still needs. */
  covered(position: LogPosition): void;
}

/** What a partition did with a batch: the errors its actions raised, the first of them named. */
export interface AppliedBatch {
  readonly errorCount: number;
  readonly errors: readonly { readonly stream: string; readonly error: Error }[];
}

/** What a log hands its entries to: a partition. */
export interface LogReader {
  /** The position of the last entry applied. */
  readonly applied: LogPosition;
  /**
   * Applies an entry of the log: `events` for `target` (a stream, or `default`), or null when the entry holds nothing
   * of this partition's (its position still moves on). `position` is where the log is once they are applied; null for
   * a batch the log does not hold (a single node with `streams.journal: off`), which moves no position.
   */
  apply(position: LogPosition | null, target: string, events: readonly Event[] | null): AppliedBatch;
}
