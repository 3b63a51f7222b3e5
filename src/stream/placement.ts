/**
 * Where a stream service's events run and its indexes live (docs/architecture.md, "Ports"): in this process (the
 * local placement, src/stream/local-placement.ts: the ingest gateway, the journal and the checkpoint rounds in
 * SQLite), or on the partitions of a cluster (src/cluster/streams.ts). Chosen once, when the stream part is built
 * (src/parts.ts), so the service never asks which one it has; it is the stream part's door to a cluster, written
 * here so that stream/ imports nothing from cluster/.
 */
import type { Condition } from './condition.ts';
import type { StreamEngine, StreamInfo } from './engine.ts';
import type { Event } from './event.ts';
import type { IngestOutcome } from './ingest-gateway.ts';
import type { LogRecord } from './journal.ts';
import type { NestingLimits } from './nesting.ts';
import type { StreamPublisher } from './pubsub/channels.ts';
import type { StreamSettings } from './settings.ts';

/** What the inputs hand their events to. */
export interface EventIngest {
  submit(target: string, events: Event[], input: string, record?: LogRecord): Promise<IngestOutcome> | 'full';
  readonly pending: number;
  maxPending: number;
}

export interface IndexStats {
  size: number;
  currentTime: number;
}

export interface SearchAnswer {
  events: Event[];
  truncated: boolean;
}

export interface StreamPlacement {
  /** Where the inputs hand their events. */
  readonly ingest: EventIngest;
  /** At startup, once the streams are loaded: what a restart must bring back (states, indexes, events acknowledged since). */
  load(): Promise<void>;
  start(): void;
  /** New settings (SIGHUP). */
  reload(next: StreamSettings, previous: StreamSettings): void;
  /** An API stream was set here: stored beyond this node too; a throw undoes the local change (503). */
  putApiStream(name: string, text: string, persist: boolean): Promise<void>;
  deleteApiStream(name: string): Promise<void>;
  /** The first `limit` entries of a stream's index matching the query (`queryText` is `condition`'s source). */
  search(name: string, condition: Condition, queryText: string, limit: number): SearchAnswer | Promise<SearchAnswer>;
  /** Index size and current time of each stream. */
  indexStats(): Map<string, IndexStats> | Promise<Map<string, IndexStats>>;
  /** One stream's current time (epoch ns of the newest event its index saw, 0 before any). */
  currentTime(name: string): number | Promise<number>;
  /** The streams changed here (API, files, a reload). */
  catalogChanged(): void;
  /** Takes no more events, and leaves what a restart (or the next owner) needs. */
  stop(): Promise<void>;
}

/** What a placement may use of the stream service that holds it. */
export interface StreamHost {
  streamNames(): string[];
  streamInfo(name: string): StreamInfo | undefined;
  readonly maxPendingEvents: number;
  readonly snapshotIntervalMs: number;
  /** `streams.max-search-limit`: what a search may ask for at most, here or from another node. */
  readonly maxSearchLimit: number;
  readonly nesting: NestingLimits;
  /** Counts a batch an input refused (`stream_ingest_rejected_total`). */
  countRejected(input: string): void;
  /** An engine with the service's outputs, queues, caps and metrics, for one partition of a stream. */
  partitionEngine(forward: (destination: string, event: Event) => void, pubsub?: StreamPublisher): StreamEngine;
  apiStreamTexts(): { name: string; text: string; persist: boolean }[];
  /** The cluster's store changed: the API streams become exactly `desired`; what the API would refuse goes to `refused`. */
  applyReplicatedStreams(
    desired: ReadonlyMap<string, { text: string; persist: boolean }>,
    refused: (name: string, why: string) => void,
  ): void;
}

/** Builds the placement of a service, given the service. */
export type PlacementFactory = (host: StreamHost) => StreamPlacement;
