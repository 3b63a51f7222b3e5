/**
 * The cluster's event log (docs/cluster.md, "The event log"): the JetStream stream `vigie_events`, one subject per
 * stream, `vigie.events.<stream id>`. Every input of every node hands its events to `ClusterEventLog.submit`, which
 * splits them by partition and publishes them; the input acknowledges once JetStream has acknowledged every message
 * that holds them, so an acknowledged event is on the log's disks (and replicas), whatever happens to the node that
 * took it or to the one that runs its partition.
 *
 * Batching is group commit, as in the single-node journal: the events submitted to one stream during one turn of the
 * event loop go out as one message (cut at `MAX_MESSAGE_BYTES`), each partition's events a part of it
 * (src/cluster/streams/log-message.ts), so a push of 1,000 events over 64 partitions is one publish, and 100 concurrent
 * pushes to one stream are one too. Every node running partitions of the stream reads each message once and parses
 * its own parts (src/cluster/streams/log-reader.ts).
 *
 * Backpressure: events published and not yet acknowledged count as pending, capped by `streams.max-pending-events`;
 * past it `submit` answers 'full' (HTTP 503 with Retry-After, Riemann TCP stops reading), as the single node's
 * backlog does. A publish JetStream refuses or does not acknowledge in time fails the inputs whose events it held
 * (503): they were not acknowledged, so the sender retries.
 */
import { createHash } from 'node:crypto';
import type { DiscardPolicy, JetStreamManager } from '@nats-io/jetstream';
import { Counter, type Registry } from 'prom-client';
import type { Event } from '../../stream/event.ts';
import type { EventIngest, IngestOutcome } from '../../stream/partition/placement.ts';
import { ClusterUnavailableError } from '../errors.ts';
import { addStreamIfAbsent } from '../nats.ts';
import type { EventCodec } from './event-codec.ts';
import {
  encodeBatch,
  type EncodedPack,
  EventTooLarge,
  type LogTarget,
  MAX_MESSAGE_BYTES,
  type PartitionOwners,
} from './log-batch.ts';
import { encodeLogMessage, headBytesOf, MAX_HEAD_WRITTEN, type WrittenPack } from './log-message.ts';
import type { LogPublisher } from './log-publisher.ts';
import type { OwnMessages, OwnParts } from './own-messages.ts';

export const EVENTS_STREAM = 'vigie_events';
const EVENTS_SUBJECT_PREFIX = 'vigie.events.';
/** How long a publish may wait for JetStream's acknowledgement before its inputs get a 503. */
export const PUBLISH_TIMEOUT_MS = 5_000;
const NO_EVENTS: IngestOutcome = { errorCount: 0, firstFailure: undefined };

/** A stream's id in subjects and consumer names: stream names allow `.`, which NATS uses as a separator. */
export function streamId(stream: string): string {
  let id = streamIds.get(stream);
  if (id === undefined) {
    if (streamIds.size >= 1_000) streamIds.clear();
    id = createHash('sha256').update(stream).digest('hex').slice(0, 16);
    streamIds.set(stream, id);
  }
  return id;
}
/** Every message of the log names its stream's id: computed once per stream, not per message. */
const streamIds = new Map<string, string>();

/** The log's subject for a stream's events, every partition's. */
export function streamSubject(stream: string): string {
  return `${EVENTS_SUBJECT_PREFIX}${streamId(stream)}`;
}

export interface EventLogLimits {
  replicas: number;
  /** Bytes the log may hold (what no checkpoint covers yet); past it publishes are refused: 503. */
  maxBytes: number;
}

export async function ensureEventsStream(jsm: JetStreamManager, limits: EventLogLimits): Promise<void> {
  await addStreamIfAbsent(jsm, EVENTS_STREAM, EVENTS_SUBJECT_PREFIX, {
    // Refuse rather than forget: a full log answers 503, it never drops what a checkpoint does not cover.
    discard: 'new' as DiscardPolicy,
    max_bytes: limits.maxBytes,
    num_replicas: limits.replicas,
  });
}

/** The events of one stream waiting for the next publish, per partition, and the inputs waiting for it. */
interface Pending {
  readonly stream: string;
  /** The packs of the turn's batches (src/cluster/streams/log-batch.ts), in order. */
  readonly packs: WrittenPack[];
  /** The events themselves, of the partitions that run here (src/cluster/streams/own-messages.ts), and how many. */
  own: Map<number, (readonly Event[])[]> | null;
  ownCount: number;
  bytes: number;
  headBytes: number;
  count: number;
  readonly waiters: Waiter[];
}

interface Waiter {
  remaining: number;
  failed: boolean;
  readonly events: number;
  readonly resolve: (outcome: IngestOutcome) => void;
  readonly reject: (error: Error) => void;
}

export class EventLogMetrics {
  readonly published: Counter<'stream'>;
  readonly messages: Counter;
  readonly failures: Counter;
  readonly gaps: Counter;

  constructor(registry: Registry) {
    this.gaps = new Counter({
      name: 'cluster_partition_consumer_gaps_total',
      help: "Messages of the event log lost between NATS and this node (a reconnection, a slow consumer): the stream's consumer started again after the lowest sequence of its partitions here.",
      registers: [registry],
    });
    this.published = new Counter({
      name: 'cluster_events_published_total',
      help: "Events this node's inputs published to the cluster's event log.",
      labelNames: ['stream'],
      registers: [registry],
    });
    this.messages = new Counter({
      name: 'cluster_event_messages_published_total',
      help: 'Messages (batches of events of one stream) published to the event log.',
      registers: [registry],
    });
    this.failures = new Counter({
      name: 'cluster_event_publish_failures_total',
      help: 'Publishes to the event log that failed (their inputs answered 503).',
      registers: [registry],
    });
  }
}

export interface ClusterEventLogOptions {
  publisher: LogPublisher;
  codec: EventCodec;
  /** `cluster.partitions`: how many partitions a stream with `:partition-by` has. */
  partitions: number;
  /** The stream a target names, or the `:default true` streams for `default`; null: no such stream. */
  resolve: (target: string) => readonly LogTarget[] | null;
  /** Events published and not acknowledged yet at most (`streams.max-pending-events`). */
  maxPending: number;
  /** Counts a batch refused because too many events wait, by input. */
  onFull: (input: string) => void;
  metrics: EventLogMetrics;
  /** Where the events of the partitions that run here are kept until this node reads them back; none: nowhere. */
  own?: { readonly messages: OwnMessages; readonly runsHere: (stream: string, partition: number) => boolean } | null;
  /** Which node runs each partition, so that each node's partitions go in one pack a batch; none: a pack each. */
  owners?: PartitionOwners | null;
  /** The part's errors for a push to a stream it does not have, and for a batch it refuses as it is. */
  unknownStream: (name: string) => Error;
  invalidBatch: (message: string) => Error;
}

export class ClusterEventLog implements EventIngest {
  private pendingEvents = 0;
  private queued = new Map<string, Pending>();
  private scheduled = false;
  private closed = false;

  private readonly publisher: LogPublisher;
  private readonly codec: EventCodec;
  private readonly partitions: number;
  private readonly resolve: ClusterEventLogOptions['resolve'];
  private readonly onFull: (input: string) => void;
  private readonly metrics: EventLogMetrics;
  private readonly own: NonNullable<ClusterEventLogOptions['own']> | null;
  private readonly owners: PartitionOwners | null;
  private readonly refusal: Pick<ClusterEventLogOptions, 'unknownStream' | 'invalidBatch'>;
  maxPending: number;

  constructor(options: ClusterEventLogOptions) {
    ({
      publisher: this.publisher,
      codec: this.codec,
      partitions: this.partitions,
      resolve: this.resolve,
      onFull: this.onFull,
      metrics: this.metrics,
      maxPending: this.maxPending,
    } = options);
    this.own = options.own ?? null;
    this.owners = options.owners ?? null;
    this.refusal = options;
  }

  get pending(): number {
    return this.pendingEvents;
  }

  /** An input's batch: its events were checked when it took them (src/stream/event.ts), and are handed over, so
   *  those of the partitions that run here are kept beside the message rather than decoded back. */
  submit(target: string, events: Event[], input: string): Promise<IngestOutcome> | 'full' {
    return this.append(target, events, input, true);
  }

  /** Fire and forget (`reinject!` into a stream another node may run): counted as a failure when it fails. Never
   *  kept: a reinjected event may still be held by the stream that sent it. */
  forward(target: string, event: Event): void {
    const pending = this.append(target, [event], 'reinject', false);
    if (pending !== 'full') pending.catch(() => undefined);
  }

  private append(target: string, events: Event[], input: string, handedOver: boolean): Promise<IngestOutcome> | 'full' {
    if (this.pendingEvents > 0 && this.pendingEvents + events.length > this.maxPending) {
      this.onFull(input);
      return 'full';
    }
    if (this.closed)
      return Promise.reject(new ClusterUnavailableError('this node is stopping: its event log is closed'));
    const streams = this.resolve(target);
    if (streams === null) return Promise.reject(this.refusal.unknownStream(target));
    if (events.length === 0 || streams.length === 0) return Promise.resolve(NO_EVENTS);
    // Encoded whole before any of it is queued: an event too large for a message refuses the batch, none of it sent.
    const packs: EncodedPack[] = [];
    // Several streams would share the objects kept.
    const keep = handedOver && streams.length === 1 ? (this.own?.runsHere ?? null) : null;
    try {
      for (const stream of streams) encodeBatch(this.codec, stream, events, this.partitions, packs, keep, this.owners);
    } catch (error) {
      if (!(error instanceof EventTooLarge)) throw error;
      return Promise.reject(
        this.refusal.invalidBatch(
          `events[${events.indexOf(error.event)}] encodes to ${error.bytes} bytes: the cluster's event log takes events of at most ${MAX_MESSAGE_BYTES} bytes`,
        ),
      );
    }
    return new Promise<IngestOutcome>((resolve, reject) => {
      const waiter: Waiter = { remaining: 0, failed: false, events: events.length * streams.length, resolve, reject };
      this.pendingEvents += waiter.events;
      for (const pack of packs) this.add(pack, waiter);
      this.schedule();
    });
  }

  private add(encoded: EncodedPack, waiter: Waiter): void {
    let pending = this.queued.get(encoded.stream);
    const headBytes = headBytesOf(encoded.layout);
    if (
      pending !== undefined &&
      (pending.bytes + encoded.pack.length > MAX_MESSAGE_BYTES || pending.headBytes + headBytes > MAX_HEAD_WRITTEN)
    ) {
      this.publish(pending);
      pending = undefined;
    }
    if (pending === undefined) {
      pending = {
        stream: encoded.stream,
        packs: [],
        own: null,
        ownCount: 0,
        bytes: 0,
        headBytes: 0,
        count: 0,
        waiters: [],
      };
      this.queued.set(encoded.stream, pending);
    }
    pending.packs.push(encoded);
    if (encoded.kept !== null) {
      pending.own ??= new Map();
      for (const [partition, events] of encoded.kept) {
        const kept = pending.own.get(partition);
        if (kept === undefined) pending.own.set(partition, [events]);
        else kept.push(events);
        pending.ownCount += events.length;
      }
    }
    pending.bytes += encoded.pack.length;
    pending.headBytes += headBytes;
    pending.count += encoded.count;
    if (pending.waiters.at(-1) !== waiter) {
      pending.waiters.push(waiter);
      waiter.remaining++;
    }
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batches = this.queued;
      this.queued = new Map();
      for (const pending of batches.values()) this.publish(pending);
    });
  }

  private publish(pending: Pending): void {
    if (this.queued.get(pending.stream) === pending) this.queued.delete(pending.stream);
    const bytes = encodeLogMessage(pending.stream, pending.packs);
    const own = this.own !== null && pending.own !== null ? this.own.messages : null;
    own?.remember(bytes, pending.own as OwnParts, pending.ownCount, this.maxPending);
    this.publisher.publish(streamSubject(pending.stream), bytes, (error) => {
      if (error === undefined) {
        this.metrics.messages.inc();
        this.metrics.published.inc({ stream: pending.stream }, pending.count);
        for (const waiter of pending.waiters) {
          if (--waiter.remaining > 0 || waiter.failed) continue;
          this.pendingEvents -= waiter.events;
          waiter.resolve(NO_EVENTS);
        }
        return;
      }
      this.metrics.failures.inc();
      own?.forget(bytes);
      const failure = new ClusterUnavailableError(
        `the cluster's event log did not take these events: ${error.message}`,
      );
      for (const waiter of pending.waiters) {
        if (waiter.failed) continue;
        waiter.failed = true;
        this.pendingEvents -= waiter.events;
        waiter.reject(failure);
      }
    });
  }

  /** Refuses new events and waits for nothing: what was published is acknowledged or failed on its own. */
  close(): void {
    this.closed = true;
  }
}
