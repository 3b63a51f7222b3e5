/**
 * Where a stream service's events run and its indexes live (docs/architecture.md, "Ports"): in this process (the
 * local placement, src/stream/partition/local-placement.ts: the ingest gateway, the journal and one partition
 * checkpointed to SQLite), or on the partitions of a cluster (src/cluster/streams/streams.ts). Chosen once, when the
 * stream part is built (src/process/parts.ts), so the service never asks which one it has. It is the stream part's door
 * to a cluster, with the event log (src/stream/durability/event-log.ts) and the checkpoint store
 * (src/stream/durability/checkpoint-store.ts): contracts that own the types they speak, so that a cluster imports
 * nothing else of stream/ and stream/ nothing of cluster/.
 */
import type { CheckpointStore } from '../durability/checkpoint-store.ts';
import type { Emission, Event } from '../event.ts';
import type { LogReader, LogRecord, PartitionLog } from '../durability/event-log.ts';

/** What an input's batch did once it went through: the errors its actions raised, the first of them named. */
export interface IngestOutcome {
  readonly errorCount: number;
  readonly firstFailure: { readonly stream: string; readonly error: Error } | undefined;
}

/** What the inputs hand their events to. */
export interface EventIngest {
  /**
   * A batch for `target` (a stream, or `default`): events an input took and checked (src/stream/event.ts), handed
   * over; `input` names the input for the refusal metric; `record` is the batch as the input has it encoded already,
   * for a log that keeps it so. 'full' at once when no more events may wait.
   */
  submit(target: string, events: Event[], input: string, record?: LogRecord): Promise<IngestOutcome> | 'full';
  readonly pending: number;
  maxPending: number;
}

/** A compiled search query: whether an indexed event matches. */
export type EventMatcher = (event: Event) => boolean;

export interface IndexStats {
  size: number;
  currentTime: number;
}

export interface SearchAnswer {
  events: Event[];
  truncated: boolean;
}

/** The stream part's settings a placement reads. */
export interface PlacementSettings {
  readonly maxPendingEvents: number;
  readonly snapshotIntervalMs: number;
  /** `streams.journal`: a single node writes each acknowledged batch to its journal first. */
  readonly journal: boolean;
}

export interface StreamPlacement {
  /** Where the inputs hand their events. */
  readonly ingest: EventIngest;
  /** At startup, once the streams are loaded: what a restart must bring back (states, indexes, events acknowledged
   *  since). */
  load(): Promise<void>;
  start(): void;
  /** New settings (SIGHUP). */
  reload(next: PlacementSettings, previous: PlacementSettings): void;
  /** An API stream was set here: stored beyond this node too; a throw undoes the local change (503). */
  putApiStream(name: string, text: string, persist: boolean): Promise<void>;
  deleteApiStream(name: string): Promise<void>;
  /** The first `limit` entries of a stream's index matching the query (`queryText` is `query`'s source). */
  search(name: string, query: EventMatcher, queryText: string, limit: number): SearchAnswer | Promise<SearchAnswer>;
  /** Index size and current time of each stream. */
  indexStats(): Map<string, IndexStats> | Promise<Map<string, IndexStats>>;
  /** One stream's current time (epoch ns of the newest event its index saw, 0 before any). */
  currentTime(name: string): number | Promise<number>;
  /** The streams changed here (API, files, a reload). */
  catalogChanged(): void;
  /** Takes no more events, and leaves what a restart (or the next owner) needs. */
  stop(): Promise<void>;
}

/** A running stream, as a placement sees it. */
interface PlacedStream {
  /** `:partition-by`: the fields whose values choose an event's partition; null: one partition. */
  readonly partitionBy: readonly string[] | null;
  /** `:default true`: a push to `default` reaches it. */
  readonly isDefault: boolean;
}

/** Where a partition's engine publishes (`publish!`, the index feeds). */
export interface ChannelPublisher {
  publish(channel: string, emission: Emission): void;
}

/** This node's websocket channels, as a cluster's channels extend them to the other nodes. */
export interface LocalChannels extends ChannelPublisher {
  /** The channels that have subscribers here. */
  channelNames(): string[];
  /** Called when a channel gets its first subscriber or loses its last. */
  onChannelsChange: (() => void) | null;
}

/** What a partition of one stream runs on, beside the service's outputs, queues, caps and metrics. */
export interface PartitionPorts {
  /** Names it in log lines: `stream <name> partition <n>`. */
  readonly name: string;
  readonly log: PartitionLog;
  readonly store: CheckpointStore;
  /** Takes what it reinjects into other streams (`reinject!`). */
  forward(destination: string, event: Event): void;
  readonly channels: ChannelPublisher;
}

/** A partition of one stream (src/stream/partition/partition.ts), as its owner runs it. */
export interface PartitionHandle extends LogReader {
  /** Restores its last checkpoint, then follows its log from there; checkpoints every `streams.snapshot-interval`. */
  open(): Promise<void>;
  /** The stream's definition may have changed: recompiled if it did, keeping the state of every unchanged branch. */
  refresh(): void;
  search(query: EventMatcher, limit: number): SearchAnswer;
  /** Its index's size and current time (undefined once its stream is gone). */
  readonly stats: IndexStats | undefined;
  /** Takes nothing more; `checkpoint`: writes a last checkpoint first (its next owner starts from there). */
  close(checkpoint: boolean): Promise<void>;
}

/** What a placement may use of the stream service that holds it. */
export interface StreamHost {
  streamNames(): string[];
  streamInfo(name: string): PlacedStream | undefined;
  readonly maxPendingEvents: number;
  /** `streams.max-search-limit`: what a search may ask for at most, here or from another node. */
  readonly maxSearchLimit: number;
  /** `streams.max-edn-depth` and `streams.max-event-depth` (updated in place at reload). */
  readonly nesting: { readonly ednDepth: number; readonly eventDepth: number };
  /** Counts a batch an input refused (`stream_ingest_rejected_total`). */
  countRejected(input: string): void;
  /** A search query compiled (throws the part's 400 when it is not one). */
  parseQuery(queryText: string): EventMatcher;
  /** The part's error for a push to a stream it does not have (404). */
  unknownStream(name: string): Error;
  /** The part's error for a batch it refuses as it is (400). */
  invalidBatch(message: string): Error;
  /** A partition of `stream`, with its own engine and the service's outputs, queues, caps and metrics. */
  openPartition(stream: string, ports: PartitionPorts): PartitionHandle;
  apiStreamTexts(): { name: string; text: string; persist: boolean }[];
  /** The cluster's store changed: the API streams become exactly `desired`; what the API would refuse goes to
   *  `refused`. */
  applyReplicatedStreams(
    desired: ReadonlyMap<string, { text: string; persist: boolean }>,
    refused: (name: string, why: string) => void,
  ): void;
}

/** Builds the placement of a service, given the service. */
export type PlacementFactory = (host: StreamHost) => StreamPlacement;
