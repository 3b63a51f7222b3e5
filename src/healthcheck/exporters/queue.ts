/**
 * The bounded queue in front of every exporter. The scheduler hands a result over with `offer`, which only
 * appends to an array (or counts a drop when the queue is full) and never waits: a destination that hangs or is
 * down costs the checks nothing. One drain runs at a time and delivers batches of up to `batchSize` results in
 * order; how a batch is delivered, retried or dropped is the exporter's `deliver`.
 */
import type { Logger } from 'pino';
import type { CheckResult } from '../result-types.ts';
import type { ExportDropReason, ExporterMetrics } from './metrics.ts';
import type { QueueSettings } from './settings.ts';

/** A batch that will not be delivered; the drain counts it under `reason` and goes on with the next. */
export class BatchDropped extends Error {
  constructor(
    readonly reason: ExportDropReason,
    message: string,
  ) {
    super(message);
  }
}

export interface ResultExporter {
  readonly name: string;
  /** Queues a result; never blocks, never throws. */
  offer(result: CheckResult): void;
  queueSize(): number;
  /** Delivers what is queued within `graceMs`, drops the rest (`shutdown`), releases connections. */
  close(graceMs: number): Promise<void>;
}

export abstract class QueuedExporter implements ResultExporter {
  private queue: CheckResult[] = [];
  private draining: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  /** Aborted when the close grace time runs out: deliveries in flight give up. */
  protected readonly abort = new AbortController();

  constructor(
    readonly name: string,
    private readonly queueSettings: QueueSettings,
    protected readonly metrics: ExporterMetrics,
    protected readonly logger: Logger,
  ) {}

  /** Sends one batch; throws BatchDropped to drop it (any other error is a bug and drops it as `rejected`). */
  protected abstract deliver(batch: CheckResult[], signal: AbortSignal): Promise<void>;

  /** Releases connections once the queue is drained or abandoned. */
  protected abstract release(): Promise<void>;

  offer(result: CheckResult): void {
    if (this.closing !== null) return this.metrics.dropped(this.name, 'shutdown', 1);
    if (this.queue.length >= this.queueSettings.queueSize) return this.metrics.dropped(this.name, 'queue_full', 1);
    this.queue.push(result);
    this.draining ??= this.startDrain();
  }

  queueSize(): number {
    return this.queue.length;
  }

  close(graceMs: number): Promise<void> {
    this.closing ??= this.shutdown(graceMs);
    return this.closing;
  }

  /** Starts after the current turn of the event loop, so that the results finishing together leave as one batch. */
  private async startDrain(): Promise<void> {
    await new Promise(setImmediate);
    try {
      await this.drain();
    } finally {
      this.draining = null;
    }
  }

  private async drain(): Promise<void> {
    const { batchSize } = this.queueSettings;
    while (this.queue.length > 0) {
      if (this.abort.signal.aborted) {
        this.metrics.dropped(this.name, 'shutdown', this.queue.length);
        this.queue = [];
        return;
      }
      const batch = this.queue.length <= batchSize ? this.queue : this.queue.slice(0, batchSize);
      this.queue = batch === this.queue ? [] : this.queue.slice(batchSize);
      try {
        await this.deliver(batch, this.abort.signal);
        this.metrics.sent(this.name, batch.length);
      } catch (error) {
        const reason = error instanceof BatchDropped ? error.reason : 'rejected';
        this.metrics.dropped(this.name, reason, batch.length);
        this.logger.warn(
          { exporter: this.name, results: batch.length, reason },
          `Failed to push healthchecks result for exporter ${this.name}: ${(error as Error).message}`,
        );
      }
    }
  }

  private async shutdown(graceMs: number): Promise<void> {
    const deadline = setTimeout(() => this.abort.abort(), graceMs);
    try {
      while (this.draining !== null || this.queue.length > 0) await (this.draining ??= this.startDrain());
    } finally {
      clearTimeout(deadline);
      await this.release();
    }
  }
}
