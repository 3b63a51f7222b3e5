/**
 * One stream partition run by this node (docs/cluster.md, "Streams"): an engine holding that stream alone (its own
 * state and index), fed by this node's reader of the stream's event log (src/cluster/log-reader.ts), and
 * checkpointed to JetStream (src/cluster/stream-checkpoints.ts) every `streams.snapshot-interval`.
 *
 * Taking a partition: restore its checkpoint (states, index, sequence), then read the log from the message after
 * that sequence, so the events the previous owner took after its last checkpoint go through again and every window
 * resumes where it was. Every message of the stream moves the partition's sequence on, whether it held events of
 * this partition or not, so a checkpoint covers every message up to its sequence. A partition lost to another node
 * (a member joined) stops at once without a checkpoint: the new owner restores the last one and replays from it
 * (outputs at-least-once); a node that stops cleanly checkpoints first, then leaves.
 */
import type { Logger } from 'pino';
import type { Condition } from '../stream/condition.ts';
import type { EdnMap } from '../stream/edn.ts';
import type { StreamEngine } from '../stream/engine.ts';
import type { Event } from '../stream/event.ts';
import type { IndexStore } from '../stream/index-store.ts';
import { saveUnits } from '../stream/state-units.ts';
import type { StreamLogReaders } from './log-reader.ts';
import type { MessageRefusals } from './refusals.ts';
import {
  type CheckpointStore,
  NO_POINTER,
  PARTITION_CHECKPOINT_VERSION,
  type PointerState,
} from './stream-checkpoints.ts';
import { streamId } from './stream-log.ts';

export interface RunnerContext {
  readonly checkpoints: CheckpointStore;
  readonly node: string;
  readonly logger: Logger;
  readonly refusals: MessageRefusals;
  /** The service's nesting limits (its StreamHost's, updated at reload): the event log's events are checked with them. */
  readonly nesting: { readonly eventDepth: number };
  /** A fresh engine for a partition (src/stream/service.ts `partitionEngine`). */
  newEngine(): StreamEngine;
  /** The checkpoint interval (streams.snapshot-interval). */
  readonly checkpointEveryMs: () => number;
  /** This node's readers of the event log (src/cluster/log-reader.ts): a partition is attached once its checkpoint is
   *  restored, detached when it stops, and tells them what its checkpoints cover. */
  readonly readers: Pick<StreamLogReaders, 'attach' | 'detach' | 'checkpointed'>;
  /** A partition this node ran was checkpointed by another node since, or cannot be consumed: it is dropped here
   *  (and started again from its checkpoint if this node still owns it). */
  superseded(runner: PartitionRunner): void;
}

/** A partition's key, made once: it is asked for each partition of each batch a node takes (src/cluster/streams.ts). */
export function partitionKey(stream: string, partition: number): string {
  let keys = partitionKeys.get(stream);
  if (keys === undefined) {
    if (partitionKeys.size >= 1_000) partitionKeys.clear();
    partitionKeys.set(stream, (keys = []));
  }
  return (keys[partition] ??= `${streamId(stream)}.${partition}`);
}
/** Per stream, the keys of its partitions made so far (at most `cluster.partitions` each). */
const partitionKeys = new Map<string, string[]>();

export class PartitionRunner {
  readonly key: string;
  private readonly engine: StreamEngine;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** The last message of the stream's log this partition's state covers. */
  private applied = 0;
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
    this.engine = context.newEngine();
  }

  /** The config this partition runs (the catalog's object: a recompiled stream has a new one). */
  get configObject(): EdnMap {
    return this.config;
  }

  get index(): IndexStore | undefined {
    return this.engine.index(this.stream);
  }

  get appliedSeq(): number {
    return this.applied;
  }

  /** Restores the checkpoint and takes the log's messages after it. */
  async start(): Promise<void> {
    const { context, stream } = this;
    this.engine.add(stream, this.config);
    const { checkpoint, pointer } = await context.checkpoints.load(this.key, stream, this.partition);
    this.pointer = pointer;
    if (checkpoint !== null) {
      const { loaded, failed } = this.engine.restoreStates(stream, new Map(checkpoint.units));
      this.index?.restore(checkpoint.index);
      this.applied = checkpoint.seq;
      this.checkpointedSeq = checkpoint.seq;
      context.logger.info(
        {
          stream,
          partition: this.partition,
          seq: checkpoint.seq,
          from: checkpoint.node,
          states: loaded,
          failed,
          index: checkpoint.index.entries.length,
        },
        `stream ${stream} partition ${this.partition}: checkpoint of ${checkpoint.node} restored (log sequence ${checkpoint.seq})`,
      );
    }
    if (this.stopped) return;
    context.readers.attach(this);
    this.schedule();
  }

  /**
   * Message `seq` of the stream's log: `events` are this partition's in it (none, or refused: the message still
   * counts as applied). An exception of the engine is counted and the partition goes on.
   */
  apply(seq: number, events: Event[] | null): void {
    if (events !== null) this.context.refusals.guard('events', () => this.engine.push(this.stream, events));
    this.applied = seq;
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
      // A checkpoint JetStream did not take (NATS away, a timeout) is logged and tried again at the next interval: the
      // partition's state and the log are still there. Unhandled, the rejection ended the process.
      void this.checkpoint()
        .catch((error: unknown) => {
          this.context.logger.warn(
            { err: error, stream: this.stream, partition: this.partition },
            `stream ${this.stream} partition ${this.partition}: checkpoint not saved (tried again at the next interval): ${(error as Error).message}`,
          );
        })
        .finally(() => this.schedule());
    }, this.context.checkpointEveryMs());
    this.timer.unref();
  }

  /** Saves the state as it is now, with the sequence it covers, which the log is then purged up to once every
   *  partition of the stream covers it (src/cluster/log-reader.ts, `StreamLogReaders.checkpointed`). */
  checkpoint(): Promise<void> {
    this.saving ??= this.save().finally(() => (this.saving = null));
    return this.saving;
  }

  private async save(): Promise<void> {
    const { context, stream } = this;
    const info = this.engine.get(stream);
    if (info === undefined) return;
    if (this.applied === this.checkpointedSeq && info.activity === this.checkpointedActivity) return;
    const seq = this.applied;
    const activity = info.activity;
    const index = this.engine.index(stream) as IndexStore;
    const saved = await context.checkpoints.save(
      this.key,
      {
        version: PARTITION_CHECKPOINT_VERSION,
        stream,
        partition: this.partition,
        seq,
        node: context.node,
        units: [...saveUnits(info.stateUnits)],
        index: index.snapshot(),
      },
      this.pointer,
    );
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
    context.readers.checkpointed(this, seq);
  }

  /**
   * Stops taking messages. `checkpoint`: the node is leaving while it still owns the partition, so the next owner starts
   * from here; otherwise the partition moved and the new owner starts from the last checkpoint.
   */
  async stop(checkpoint: boolean): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.context.readers.detach(this);
    if (checkpoint) {
      await this.saving;
      try {
        await this.save();
      } catch (error) {
        this.context.logger.warn(
          { err: error, stream: this.stream, partition: this.partition },
          `stream ${this.stream} partition ${this.partition}: last checkpoint not saved: ${(error as Error).message}`,
        );
      }
    }
  }
}
