/**
 * A partition of the streams (docs/architecture.md, "The flow of an event"): an engine, the position in its event log
 * that the engine has applied, checkpoint rounds every `streams.snapshot-interval`
 * (src/stream/durability/snapshotter.ts), and restore-then-replay when it starts. It is fed by its log
 * (src/stream/durability/event-log.ts) and checkpointed to its store (src/stream/durability/checkpoint-store.ts),
 * whatever they are: a single node runs one partition holding every stream, over the file journal and SQLite
 * (src/stream/partition/local-placement.ts); a cluster node runs the partitions it owns, each one stream's, over
 * JetStream (src/stream/partition/stream-partitions.ts, src/cluster/).
 *
 * Starting: restore the last committed checkpoint (action states, indexes, the position it covers), then read the log
 * from that position, so that the events acknowledged after the checkpoint go through again and every window
 * resumes where it was. Stopping with a checkpoint (a clean stop, or a node leaving while it owns the partition)
 * writes a last round; without one (a partition moved to another node) the next owner starts from the last one.
 */
import type { Logger } from 'pino';
import type { CheckpointMetrics } from '../durability/checkpoint-metrics.ts';
import type { CheckpointStore } from '../durability/checkpoint-store.ts';
import { type StreamEngine, StreamNotFoundError } from '../engine/engine.ts';
import type { Event } from '../event.ts';
import {
  type AppliedBatch,
  LOG_START,
  type LogPosition,
  type LogReader,
  type PartitionLog,
} from '../durability/event-log.ts';
import { StreamSnapshotter } from '../durability/snapshotter.ts';

export interface StreamPartitionOptions {
  engine: StreamEngine;
  log: PartitionLog;
  store: CheckpointStore;
  metrics: CheckpointMetrics;
  logger: Logger;
  /** Names the partition in log lines (a cluster's: `stream <name> partition <n>`); none for a single node's. */
  name?: string;
}

const NOTHING: AppliedBatch = { errorCount: 0, errors: [] };

export class StreamPartition implements LogReader {
  private position: LogPosition = LOG_START;
  private readonly rounds: StreamSnapshotter;
  private closed = false;

  constructor(private readonly options: StreamPartitionOptions) {
    const { engine, store, metrics, logger, log, name } = options;
    this.rounds = new StreamSnapshotter({
      engine,
      store,
      metrics,
      logger,
      label: name === undefined ? 'stream ' : `${name}: `,
      position: () => this.position,
      covered: (position) => log.covered(position),
    });
  }

  get applied(): LogPosition {
    return this.position;
  }

  /** Restores the last committed checkpoint, then has the log hand over its entries after the checkpoint's position. */
  async open(): Promise<void> {
    const { head, units, entries } = await this.rounds.restore();
    this.position = head?.position ?? LOG_START;
    const { name, logger, log } = this.options;
    if (name !== undefined && head !== null) {
      const of = head.writer === undefined ? '' : ` of ${head.writer}`;
      logger.info(
        { seq: this.position.seq, from: head.writer, states: units, index: entries },
        `${name}: checkpoint${of} restored (log sequence ${this.position.seq})`,
      );
    }
    if (!this.closed) log.follow(this.position, this);
  }

  /** (Re)starts the checkpoint rounds, every `intervalMs`. */
  start(intervalMs: number): void {
    if (!this.closed) this.rounds.start(intervalMs);
  }

  /** Starts no more rounds until `start` (a round under way finishes at `close`). */
  pause(): void {
    this.rounds.stop();
  }

  apply(position: LogPosition | null, target: string, events: readonly Event[] | null): AppliedBatch {
    if (position !== null) this.position = position;
    if (events === null || events.length === 0) return NOTHING;
    try {
      return this.options.engine.push(target, events);
    } catch (error) {
      // The stream was removed while its events waited.
      if (error instanceof StreamNotFoundError) return { errors: [{ stream: target, error }], errorCount: 1 };
      throw error;
    }
  }

  /**
   * Takes nothing more from the log. `checkpoint`: a last round is written first, so that the next start (here, or on
   * the partition's next owner) begins from here; otherwise it begins from the last committed round.
   */
  async close(checkpoint: boolean): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.rounds.stop();
    this.options.log.stop();
    if (checkpoint) {
      try {
        await this.rounds.write();
      } catch (error) {
        this.options.logger.warn(
          { err: error },
          `${this.options.name ?? 'stream'}: last checkpoint not saved: ${(error as Error).message}`,
        );
      }
    }
    await this.rounds.close();
  }
}
