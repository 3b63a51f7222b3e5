/**
 * This node's reader of one stream's event log (docs/cluster.md, "The event log"): one JetStream consumer on the
 * stream's subject feeds every partition of the stream this node runs. Each message holds every partition's
 * events of one node's turn (src/cluster/streams/log-message.ts); the reader decodes its head once, and hands each
 * partition it runs that partition's events, parsed from that part's bytes alone, or nothing: every message moves
 * every partition's sequence on.
 *
 * Partitions start at different sequences (each from its own checkpoint). The consumer starts after the lowest
 * sequence of the partitions it feeds, and a partition is handed only the messages after its own. A partition that
 * arrives behind what the consumer delivered already (taken from a node that died) makes the consumer start again
 * from it: the others skip what they applied. So does a gap in the deliveries (a reconnection, a slow-consumer
 * disconnect) and a consumer that is lost (deleted, or gone with a nats-server's restart). The consumer keeps no
 * acknowledgements (`ack_policy: none`) and its state in memory: the checkpoints are where the partitions' positions
 * are kept, and the log is purged below all of them (`StreamLogReaders.checkpointed` below).
 */
import type {
  AckPolicy,
  ConsumerMessages,
  DeliverPolicy,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { Event } from '../../stream/event.ts';
import type { EventCodec } from './event-codec.ts';
import {
  concatPacks,
  decodeLogHead,
  eventsOfPartition,
  isDamage,
  type LogDamage,
  type LogEncoding,
  type LogPack,
} from './log-message.ts';
import type { OwnMessages } from './own-messages.ts';
import type { MessageRefusals } from '../refusals.ts';
import { MAX_PARTITIONS } from '../settings.ts';
import type { CheckpointBucket } from './stream-checkpoints.ts';
import { EVENTS_STREAM, streamId, streamSubject } from './stream-log.ts';

const NS_PER_MS = 1e6;
/**
 * Messages pulled ahead of the partitions: at most 14 MiB of 900 KiB messages, what a slow node buffers. A pull
 * bounded in bytes instead stalled until the pull expired (30 s) whenever the next message did not fit in it.
 */
const PULL_MESSAGES = 16;
/** A consumer left behind by a node that died is deleted by JetStream after this long unused. */
const INACTIVE_MS = 10 * 60_000;

/** A partition a reader feeds (src/cluster/streams/owned-partition.ts). */
export interface FedPartition {
  readonly stream: string;
  readonly partition: number;
  /** The sequence of the last message it applied. */
  readonly appliedSeq: number;
  /** Message `seq`: its events of this partition, or none. */
  apply(seq: number, events: Event[] | null): void;
}

export interface ReaderContext<P extends FedPartition> {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly nodeId: string;
  readonly logger: Logger;
  readonly refusals: MessageRefusals;
  readonly nesting: { readonly eventDepth: number };
  readonly codec: EventCodec;
  /** The messages this node published, with the events of its partitions (src/cluster/streams/own-messages.ts). */
  readonly own: OwnMessages;
  /** Counts a gap in a consumer's deliveries (the consumer started again). */
  gaps(): void;
  /** The consumer cannot be made: the partitions it was to feed are dropped here (and taken again). */
  failed(runners: readonly P[]): void;
}

export class StreamLogReader<P extends FedPartition> {
  /** The partitions fed by the consumer as it runs, by partition. */
  private readonly fed = new Map<number, P>();
  /** Partitions waiting for the consumer to start again at or before the message after their sequence. */
  private readonly waiting = new Set<P>();
  private readonly consumerName: string;
  private messages: ConsumerMessages | null = null;
  /** The log sequence of the last message the current consumer delivered (its start minus one before the first). */
  private delivered = 0;
  private opening: Promise<void> | null = null;
  /** A start was asked for while one was under way (a gap in the new consumer's deliveries): another follows it. */
  private again = false;
  /** Each start's number: a consumer closed by the next start delivers nothing more. */
  private generation = 0;
  private closed = false;

  constructor(
    readonly stream: string,
    private readonly context: ReaderContext<P>,
    /** How many readers of the stream this node made before: a reader closing (deleting its consumer) must not
     *  delete the consumer of the stream's next reader here. */
    instance: number,
  ) {
    this.consumerName = `r_${streamId(stream)}_${context.nodeId}_${instance}`;
  }

  get empty(): boolean {
    return this.fed.size === 0 && this.waiting.size === 0;
  }

  /** Feeds `runner` the messages after its sequence: at once if the consumer has not passed it, else after a
   *  restart. */
  attach(runner: P): void {
    if (this.messages !== null && this.opening === null && runner.appliedSeq >= this.delivered) {
      this.fed.set(runner.partition, runner);
      return;
    }
    this.waiting.add(runner);
    this.open();
  }

  detach(runner: P): void {
    if (this.fed.get(runner.partition) === runner) this.fed.delete(runner.partition);
    this.waiting.delete(runner);
  }

  /** (Re)starts the consumer after the lowest sequence of every partition it feeds; one start at a time. */
  private open(): void {
    if (this.closed) return;
    if (this.opening !== null) {
      this.again = true;
      return;
    }
    this.opening = this.restart()
      .catch((error: unknown) => {
        if (this.closed) return;
        const runners = [...this.fed.values(), ...this.waiting];
        this.fed.clear();
        this.waiting.clear();
        this.context.logger.error(
          { err: error, stream: this.stream },
          `stream ${this.stream}: cannot read its event log (its partitions here are taken again): ${(error as Error).message}`,
        );
        this.context.failed(runners);
      })
      .finally(() => {
        this.opening = null;
        // Partitions that arrived while it started, behind where it started, or a gap in the new consumer.
        if ((this.again || this.waiting.size > 0) && !this.closed) {
          this.again = false;
          this.open();
        }
      });
  }

  private async restart(): Promise<void> {
    const { context } = this;
    const generation = ++this.generation;
    const old = this.messages;
    this.messages = null;
    await old?.close().catch(() => undefined);
    // Yield once, so that the partitions taken in one turn (a member's) all join this start.
    await new Promise((resolve) => setImmediate(resolve));
    if (this.closed) return;
    for (const runner of this.waiting) this.fed.set(runner.partition, runner);
    this.waiting.clear();
    if (this.fed.size === 0) return;
    let from = Number.POSITIVE_INFINITY;
    for (const runner of this.fed.values()) from = Math.min(from, runner.appliedSeq + 1);
    await context.jsm.consumers.delete(EVENTS_STREAM, this.consumerName).catch(() => undefined);
    await context.jsm.consumers.add(EVENTS_STREAM, {
      durable_name: this.consumerName,
      filter_subject: streamSubject(this.stream),
      ack_policy: 'none' as AckPolicy,
      deliver_policy: 'by_start_sequence' as DeliverPolicy,
      opt_start_seq: from,
      inactive_threshold: INACTIVE_MS * NS_PER_MS,
      // Its state in memory: a file-backed consumer had nats-server write its state file after every few deliveries
      // (a sixth of its CPU under ingest, bench/JOURNAL.md), and this one is made again whenever it is lost.
      mem_storage: true,
    });
    if (this.closed) return;
    const consumer = await context.js.consumers.get(EVENTS_STREAM, this.consumerName);
    let deliveries = 0;
    let live = true;
    this.delivered = from - 1;
    // A callback rather than an async iterator: no promise and microtask per message.
    const messages: ConsumerMessages = await consumer.consume({
      max_messages: PULL_MESSAGES,
      // A consumer that no longer exists ends this consume with an error, and it is made again below, rather than
      // asked for again and again while nothing arrives.
      abort_on_missing_resource: true,
      callback: (message) => {
        if (!live || this.closed || generation !== this.generation) return;
        const delivery = message.info.deliverySequence;
        if (deliveries > 0 && delivery !== deliveries + 1) {
          live = false;
          context.gaps();
          context.logger.warn(
            { stream: this.stream, expected: deliveries + 1, got: delivery },
            `stream ${this.stream}: delivery ${deliveries + 1} of its event log never arrived (got ${delivery}); reading again after the lowest sequence of its partitions here`,
          );
          this.open();
          return;
        }
        deliveries = delivery;
        this.read(message);
      },
    });
    if (this.closed) {
      await messages.close().catch(() => undefined);
      return;
    }
    this.messages = messages;
    void messages.closed().then((error) => {
      if (!error || !live || this.closed || generation !== this.generation) return;
      live = false;
      context.logger.warn(
        { err: error, stream: this.stream },
        `stream ${this.stream}: its consumer of the event log is gone (${error.message}); reading again after the lowest sequence of its partitions here`,
      );
      this.open();
    });
  }

  /** One message: each partition fed here that has not applied it gets its events (or nothing). */
  private read(message: JsMsg): void {
    const seq = message.seq;
    this.delivered = seq;
    const { context } = this;
    const data = Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength);
    // Any partition `cluster.partitions` allows: a stream that gains or loses `:partition-by` is published by some
    // nodes under its old count for a moment, and a pack's partition that does not run here is simply not read.
    const head = decodeLogHead(data, MAX_PARTITIONS);
    // Per partition, the packs that hold its events, in order.
    const held: (LogPack[] | undefined)[] = [];
    let encoding: LogEncoding = 'msgpack';
    if (isDamage(head)) {
      context.refusals.refuse(
        'events',
        head.reason,
        `stream ${this.stream}: event-log message ${seq} skipped: ${head.problem}`,
        { stream: this.stream, seq },
      );
    } else if (head.stream !== this.stream) {
      context.refusals.refuse(
        'events',
        'key',
        `stream ${this.stream}: event-log message ${seq} names stream ${JSON.stringify(head.stream)}: skipped`,
        { stream: this.stream, seq },
      );
    } else {
      encoding = head.encoding;
      for (const pack of head.packs) {
        for (const partition of pack.partitions) {
          const packs = held[partition];
          if (packs === undefined) held[partition] = [pack];
          else packs.push(pack);
        }
      }
    }
    // A message this node published holds, for the partitions that ran here then, the events it encoded: those
    // are applied as they are rather than decoded back.
    const own = held.length > 0 ? context.own.take(data) : undefined;
    // Each pack decoded once, by the first partition that needs it: a pack holds the partitions of one node.
    const decoded = new Map<LogPack, unknown[] | LogDamage>();
    for (const runner of this.fed.values()) {
      if (seq <= runner.appliedSeq) continue;
      const packs = held[runner.partition];
      if (packs === undefined) {
        runner.apply(seq, null);
        continue;
      }
      const kept = own?.get(runner.partition);
      if (kept !== undefined) {
        runner.apply(seq, kept.length === 1 ? (kept[0] as Event[]) : concatPacks(kept));
        continue;
      }
      const events = eventsOfPartition(
        data,
        encoding,
        packs,
        runner.partition,
        context.nesting.eventDepth,
        context.codec,
        decoded,
      );
      if (isDamage(events)) {
        context.refusals.refuse(
          'events',
          events.reason,
          `stream ${this.stream} partition ${runner.partition}: its events in event-log message ${seq} skipped: ${events.problem}`,
          { stream: this.stream, seq },
        );
        runner.apply(seq, null);
      } else runner.apply(seq, events);
    }
  }

  /** Stops reading and deletes the consumer (no partition of the stream runs here any more, or the node stops). */
  async close(): Promise<void> {
    this.closed = true;
    this.fed.clear();
    this.waiting.clear();
    await this.opening;
    await this.messages?.close().catch(() => undefined);
    this.messages = null;
    await this.context.jsm.consumers.delete(EVENTS_STREAM, this.consumerName).catch(() => undefined);
  }
}

/** This node's readers, one per stream with partitions here; and the purges of the streams' logs. */
export class StreamLogReaders<P extends FedPartition> {
  private readonly readers = new Map<string, StreamLogReader<P>>();
  /** Per stream, the readers made of it here (their consumers' names). */
  private readonly made = new Map<string, number>();
  /** The streams whose log is being purged now: one purge at a time each. */
  private readonly purging = new Set<string>();
  /** The streams whose partitions checkpointed again during their purge: purged once more after it. */
  private readonly purgeAgain = new Set<string>();

  constructor(
    private readonly context: ReaderContext<P>,
    private readonly checkpoints: CheckpointBucket,
    private readonly partitionCount: (stream: string) => number,
  ) {}

  /** The stream's reader, made by the first of its partitions that starts here, feeds `runner`. */
  attach(runner: P): void {
    let reader = this.readers.get(runner.stream);
    if (reader === undefined) {
      const instance = this.made.get(runner.stream) ?? 0;
      this.made.set(runner.stream, instance + 1);
      reader = new StreamLogReader(runner.stream, this.context, instance);
      this.readers.set(runner.stream, reader);
    }
    reader.attach(runner);
  }

  /** A partition stops here; the stream's reader goes with its last one. */
  detach(runner: P): void {
    const reader = this.readers.get(runner.stream);
    if (reader === undefined) return;
    reader.detach(runner);
    if (!reader.empty) return;
    this.readers.delete(runner.stream);
    void reader.close();
  }

  /**
   * After a checkpoint of one of its partitions here, the stream's log is purged up to the lowest sequence every
   * partition's checkpoint covers: no partition, wherever it runs or will run, needs those messages. Any partition's
   * checkpoint may be the last one that lifts the lowest, so each of them asks; the asks of one stream meanwhile are
   * one more purge after the one under way.
   */
  checkpointed(runner: P, seq: number): void {
    const { stream } = runner;
    if (seq === 0) return;
    if (this.purging.has(stream)) {
      this.purgeAgain.add(stream);
      return;
    }
    this.purging.add(stream);
    void this.checkpoints
      .floor(streamId(stream), this.partitionCount(stream))
      .then((floor) =>
        floor > 0
          ? this.context.jsm.streams.purge(EVENTS_STREAM, { filter: streamSubject(stream), seq: floor + 1 })
          : undefined,
      )
      .catch((error: unknown) =>
        this.context.logger.warn(
          { err: error, stream },
          `cannot purge the event log of stream ${stream}: ${(error as Error).message}`,
        ),
      )
      .finally(() => {
        this.purging.delete(stream);
        if (this.purgeAgain.delete(stream)) this.checkpointed(runner, seq);
      });
  }

  /** Deletes a removed stream's events from the log and its checkpoints: a stream created later under the same name
   *  starts afresh. */
  async forget(stream: string): Promise<void> {
    const id = streamId(stream);
    await this.context.jsm.streams.purge(EVENTS_STREAM, { filter: streamSubject(stream) });
    // What an earlier version kept per partition (`vigie.events.<id>.<partition>`).
    await this.context.jsm.streams.purge(EVENTS_STREAM, { filter: `${streamSubject(stream)}.>` });
    const checkpoints = await this.checkpoints.forget(id);
    this.context.logger.info(
      { stream, checkpoints },
      `stream ${stream} removed from the cluster: its events in the log and its ${checkpoints} checkpoints deleted`,
    );
  }

  async close(): Promise<void> {
    const readers = [...this.readers.values()];
    this.readers.clear();
    await Promise.all(readers.map((reader) => reader.close()));
  }
}
