/**
 * One stream partition run by this node (docs/cluster.md, "Streams"): an engine holding that stream alone (its own
 * state and index), fed by a durable JetStream consumer on the partition's subject, and checkpointed to JetStream
 * (src/cluster/stream-checkpoints.ts) every `streams.snapshot-interval`.
 *
 * Taking a partition: restore its checkpoint (states, index, sequence), then consume from the message after that
 * sequence, so the events the previous owner took after its last checkpoint go through again and every window
 * resumes where it was. After a checkpoint is saved the consumer acknowledges up to it (AckAll) and the partition's
 * messages it covers are purged from the log. A partition lost to another node (a member joined) stops at once
 * without a checkpoint: the new owner restores the last one and replays from it (outputs at-least-once); a node
 * that stops cleanly checkpoints first, then leaves.
 *
 * A message of the log is untrusted (docs/cluster.md, "What a node does with what it reads"): one that is not a record
 * or whose events the HTTP ingest would refuse is skipped, counted and logged (`source="events"`), and covered by the
 * next checkpoint's acknowledgement like the others (AckAll: terminating it would acknowledge every message before
 * it ahead of the checkpoint); an exception of the engine on a message is counted and the partition goes on.
 */
import type { AckPolicy, ConsumerMessages, DeliverPolicy, JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { Condition } from '../stream/condition.ts';
import type { EdnMap } from '../stream/edn.ts';
import type { StreamEngine } from '../stream/engine.ts';
import type { Event } from '../stream/event.ts';
import type { IndexStore } from '../stream/index-store.ts';
import { saveUnits } from '../stream/state-units.ts';
import type { MessageRefusals } from './refusals.ts';
import { MAX_DELIVER } from './results.ts';
import { type CheckpointStore, NO_POINTER, PARTITION_CHECKPOINT_VERSION, type PointerState } from './stream-checkpoints.ts';
import { EVENTS_STREAM, eventsOfMessage, partitionSubject, streamId } from './stream-log.ts';

const NS_PER_MS = 1e6;
/** Messages pulled ahead of the engine. */
const PULL_BATCH = 256;
/** A consumer left behind by a node that died is deleted by JetStream after this long unused. */
const INACTIVE_MS = 10 * 60_000;

export interface RunnerContext {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly checkpoints: CheckpointStore;
  readonly node: string;
  readonly nodeId: string;
  readonly logger: Logger;
  readonly refusals: MessageRefusals;
  /** The service's nesting limits (its StreamHost's, updated at reload): the event log's events are checked with them. */
  readonly nesting: { readonly eventDepth: number };
  /** A fresh engine for a partition (src/stream/service.ts `partitionEngine`). */
  newEngine(): StreamEngine;
  /** The checkpoint interval (streams.snapshot-interval). */
  readonly checkpointEveryMs: () => number;
  /** A partition this node ran was checkpointed by another node since, or cannot be consumed: it is dropped here
   *  (and started again from its checkpoint if this node still owns it). */
  superseded(runner: PartitionRunner): void;
  /** Counts a gap in a consumer's deliveries (a consumer started again). */
  gaps(): void;
}

export function partitionKey(stream: string, partition: number): string {
  return `${streamId(stream)}.${partition}`;
}

export class PartitionRunner {
  readonly key: string;
  private readonly engine: StreamEngine;
  private readonly consumerName: string;
  private messages: ConsumerMessages | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private appliedSeq = 0;
  private lastMessage: JsMsg | null = null;
  private checkpointedSeq = 0;
  private checkpointedActivity = -1;
  private saving: Promise<void> | null = null;
  private stopped = false;
  /** The partition's checkpoint pointer as this runner last loaded or wrote it. */
  private pointer: PointerState = NO_POINTER;

  constructor(
    readonly stream: string,
    readonly partition: number,
    private config: EdnMap,
    private readonly context: RunnerContext,
  ) {
    this.key = partitionKey(stream, partition);
    this.consumerName = `p_${streamId(stream)}_${partition}_${context.nodeId}`;
    this.engine = context.newEngine();
  }

  /** The config this partition runs (the catalog's object: a recompiled stream has a new one). */
  get configObject(): EdnMap {
    return this.config;
  }

  get index(): IndexStore | undefined {
    return this.engine.index(this.stream);
  }

  /** Restores the checkpoint and starts consuming after it. */
  async start(): Promise<void> {
    const { context, stream } = this;
    this.engine.add(stream, this.config);
    const { checkpoint, pointer } = await context.checkpoints.load(this.key, stream, this.partition);
    this.pointer = pointer;
    if (checkpoint !== null) {
      const { loaded, failed } = this.engine.restoreStates(stream, new Map(checkpoint.units));
      this.index?.restore(checkpoint.index);
      this.appliedSeq = checkpoint.seq;
      this.checkpointedSeq = checkpoint.seq;
      context.logger.info(
        { stream, partition: this.partition, seq: checkpoint.seq, from: checkpoint.node, states: loaded, failed, index: checkpoint.index.entries.length },
        `stream ${stream} partition ${this.partition}: checkpoint of ${checkpoint.node} restored (log sequence ${checkpoint.seq})`,
      );
    }
    await this.openConsumer();
    this.schedule();
  }

  /**
   * (Re)creates this node's durable consumer of the partition, starting after what the state covers, and consumes
   * from it. Also after a gap: a message lost between the server and this client (a reconnection, a slow-consumer
   * disconnect) would otherwise be acknowledged by the acknowledgement of a later one (AckAll) and never seen.
   */
  private async openConsumer(): Promise<void> {
    const { context, stream } = this;
    if (this.stopped) return;
    await context.jsm.consumers.delete(EVENTS_STREAM, this.consumerName).catch(() => undefined);
    await context.jsm.consumers.add(EVENTS_STREAM, {
      durable_name: this.consumerName,
      filter_subject: partitionSubject(stream, this.partition),
      ack_policy: 'all' as AckPolicy,
      ...(this.appliedSeq > 0 ? { deliver_policy: 'by_start_sequence' as DeliverPolicy, opt_start_seq: this.appliedSeq + 1 } : { deliver_policy: 'all' as DeliverPolicy }),
      // Acknowledged at checkpoints only: never redelivered meanwhile.
      ack_wait: Math.max(10 * 60_000, 4 * context.checkpointEveryMs()) * NS_PER_MS,
      max_ack_pending: 1_000_000,
      max_deliver: MAX_DELIVER,
      inactive_threshold: INACTIVE_MS * NS_PER_MS,
      // Its state in memory: a file-backed consumer had nats-server write each consumer's state file after every
      // few deliveries (a sixth of its CPU under ingest, docs/performance.md), and this consumer is made again from
      // the checkpoint whenever it is lost (below), so it needs no state that outlives a nats-server.
      mem_storage: true,
    });
    if (this.stopped) return;
    const consumer = await context.js.consumers.get(EVENTS_STREAM, this.consumerName);
    // A callback rather than an async iterator: no promise and microtask per message.
    let delivered = 0;
    let live = true;
    this.lastMessage = null;
    const messages: ConsumerMessages = await consumer.consume({
      max_messages: PULL_BATCH,
      // A consumer that no longer exists (deleted, or lost with a nats-server's restart) ends this consume with an
      // error, and it is made again below, rather than asked for again and again while nothing arrives.
      abort_on_missing_resource: true,
      callback: (message) => {
        if (this.stopped || !live) return;
        const delivery = message.info.deliverySequence;
        if (delivered > 0 && delivery !== delivered + 1) {
          live = false;
          this.reopen(messages, delivered + 1, delivery);
          return;
        }
        delivered = delivery;
        this.apply(message);
      },
    });
    this.messages = messages;
    void messages.closed().then((error) => {
      if (!error || this.stopped || !live) return;
      live = false;
      this.context.logger.warn(
        { err: error, stream, partition: this.partition, seq: this.appliedSeq },
        `stream ${stream} partition ${this.partition}: its consumer of the event log is gone (${error.message}); consuming again from log sequence ${this.appliedSeq + 1}`,
      );
      this.consumeAgain(messages);
    });
  }

  /** A gap in the consumer's delivery sequence: the consumer starts again after the last message applied. */
  private reopen(messages: ConsumerMessages, expected: number, got: number): void {
    this.context.gaps();
    this.context.logger.warn(
      { stream: this.stream, partition: this.partition, expected, got, seq: this.appliedSeq },
      `stream ${this.stream} partition ${this.partition}: delivery ${expected} never arrived (got ${got}); consuming again from log sequence ${this.appliedSeq + 1}`,
    );
    this.consumeAgain(messages);
  }

  /** Closes `messages` and makes the consumer again, starting after the last message applied. */
  private consumeAgain(messages: ConsumerMessages): void {
    void messages
      .close()
      .catch(() => undefined)
      .then(() => this.openConsumer())
      .catch((error: unknown) => {
        if (this.stopped) return;
        this.context.logger.error({ err: error, stream: this.stream, partition: this.partition }, `stream ${this.stream} partition ${this.partition}: cannot consume again: ${(error as Error).message}`);
        this.context.superseded(this);
      });
  }

  private apply(message: JsMsg): void {
    // A message this state already covers (redelivered, or before the checkpoint): skipped.
    if (message.seq <= this.appliedSeq) return;
    const events = eventsOfMessage(message.data, this.context.nesting.eventDepth, (reason, problem) =>
      this.context.refusals.refuse('events', reason, `stream ${this.stream} partition ${this.partition}: event-log message ${message.seq} skipped: ${problem}`, { stream: this.stream, seq: message.seq }),
    );
    if (events !== null) this.context.refusals.guard('events', () => this.engine.push(this.stream, events));
    this.appliedSeq = message.seq;
    this.lastMessage = message;
  }

  /** The stream's config changed: recompiled, keeping the state of every unchanged branch (its index starts empty). */
  setConfig(config: EdnMap): void {
    this.config = config;
    this.engine.add(this.stream, config, { keepStateIfUnchanged: true });
  }

  search(condition: Condition, limit: number): { events: Event[]; truncated: boolean } {
    return this.index?.search(condition, limit) ?? { events: [], truncated: false };
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.checkpoint().finally(() => this.schedule());
    }, this.context.checkpointEveryMs());
    this.timer.unref();
  }

  /** Saves the state as it is now, with the sequence it covers; then acknowledges and purges what it covers. */
  checkpoint(): Promise<void> {
    this.saving ??= this.save().finally(() => (this.saving = null));
    return this.saving;
  }

  private async save(): Promise<void> {
    const { context, stream } = this;
    const info = this.engine.get(stream);
    if (info === undefined) return;
    if (this.appliedSeq === this.checkpointedSeq && info.activity === this.checkpointedActivity) return;
    const seq = this.appliedSeq;
    const covered = this.lastMessage;
    const activity = info.activity;
    const index = this.engine.index(stream) as IndexStore;
    const saved = await context.checkpoints.save(this.key, {
      version: PARTITION_CHECKPOINT_VERSION,
      stream,
      partition: this.partition,
      seq,
      node: context.node,
      units: [...saveUnits(info.stateUnits)],
      index: index.snapshot(),
    }, this.pointer);
    if (saved.outcome === 'superseded') {
      context.logger.warn(
        { stream, partition: this.partition },
        `stream ${stream} partition ${this.partition}: another node checkpointed it since this one loaded it: dropped here (restarted from the newest checkpoint if this node owns it)`,
      );
      context.superseded(this);
      return;
    }
    this.pointer = saved.pointer;
    this.checkpointedSeq = seq;
    this.checkpointedActivity = activity;
    if (covered !== null && covered.seq <= seq && !this.stopped) covered.ack();
    if (seq > 0) {
      await context.jsm.streams.purge(EVENTS_STREAM, { filter: partitionSubject(stream, this.partition), seq: seq + 1 }).catch((error: unknown) => {
        context.logger.warn({ err: error, stream, partition: this.partition }, `cannot purge the event log of stream ${stream} partition ${this.partition}: ${(error as Error).message}`);
      });
    }
  }

  /**
   * Stops consuming. `checkpoint`: the node is leaving while it still owns the partition, so the next owner starts
   * from here; otherwise the partition moved and the new owner starts from the last checkpoint.
   */
  async stop(checkpoint: boolean): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.messages?.close().catch(() => undefined);
    if (checkpoint) {
      await this.saving;
      try {
        await this.save();
      } catch (error) {
        this.context.logger.warn({ err: error, stream: this.stream, partition: this.partition }, `stream ${this.stream} partition ${this.partition}: last checkpoint not saved: ${(error as Error).message}`);
      }
    }
    await this.context.jsm.consumers.delete(EVENTS_STREAM, this.consumerName).catch(() => undefined);
  }
}
