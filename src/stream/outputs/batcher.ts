/**
 * The queue, batching and retry shared by every output kind. Events wait in a bounded queue (overflow is
 * dropped and counted, never buffered without bound); a batch leaves when `batch-size` events are queued or
 * `flush-interval` after the first event that found the queue empty (wall clock, the one place of the stream part
 * that reads it: outputs talk to the outside world). The flush timer is armed by that event, not kept running: an
 * output with nothing queued does not wake the service (docs/performance.md, "An idle service"). One batch is in
 * flight at a time, so batches arrive in order. Transient failures are retried `retries` times with exponential
 * backoff; a refusal (4xx) drops the batch at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Emission, Event } from '../event.ts';
import { DeliveryError } from '../../notify/delivery.ts';
import type { Deliver, DropReason, Output, OutputObserver } from './types.ts';

export interface BatchSettings {
  readonly queueSize: number;
  readonly batchSize: number;
  readonly flushIntervalMs: number;
  readonly retries: number;
  readonly retryBackoffMs: number;
}

const MAX_BACKOFF_MS = 30_000;

export interface BatchingOutputOptions {
  name: string;
  settings: BatchSettings;
  deliver: Deliver;
  observer: OutputObserver;
  /** Says why an event is refused before it takes a place in the queue (the destination cannot represent it,
   *  it belongs to a maintenance window), or null to take it. */
  refuse?: ((event: Event) => DropReason | null) | null;
  /** After the last batch is delivered (an agent or a transport to close). */
  onClose?: () => Promise<void>;
}

export class BatchingOutput implements Output {
  private queue: Event[] = [];
  private draining: Promise<void> | null = null;
  /** Set by the timer and by close: send everything queued, not only full batches. */
  private flushAll = false;
  private closing: Promise<void> | null = null;
  private readonly abort = new AbortController();
  /** Armed while events wait for `flush-interval`; null when none does. */
  private timer: NodeJS.Timeout | null = null;
  private readonly onFlushTimer = (): void => {
    this.timer = null;
    this.flush();
  };

  readonly name: string;
  private readonly settings: BatchSettings;
  private readonly deliver: Deliver;
  private readonly observer: OutputObserver;
  private readonly refuse: ((event: Event) => DropReason | null) | null;
  private readonly onClose: () => Promise<void>;

  constructor(options: BatchingOutputOptions) {
    ({ name: this.name, settings: this.settings, deliver: this.deliver, observer: this.observer } = options);
    this.refuse = options.refuse ?? null;
    this.onClose = options.onClose ?? (async () => undefined);
  }

  send(emission: Emission): void {
    if (emission === null) return;
    if (Array.isArray(emission)) {
      for (let i = 0; i < emission.length; i++) this.enqueue(emission[i] as Event);
    } else {
      this.enqueue(emission);
    }
  }

  queueSize(): number {
    return this.queue.length;
  }

  /** Sends what is queued now, without waiting for a full batch. */
  flush(): void {
    if (this.queue.length === 0) return;
    this.flushAll = true;
    void this.drain();
  }

  close(timeoutMs: number): Promise<void> {
    this.closing ??= this.shutdown(timeoutMs);
    return this.closing;
  }

  private enqueue(event: Event): void {
    if (this.closing !== null) return this.observer.dropped(this.name, 'shutdown', 1);
    if (this.refuse !== null) {
      const reason = this.refuse(event);
      if (reason !== null) return this.observer.dropped(this.name, reason, 1);
    }
    if (this.queue.length >= this.settings.queueSize) return this.observer.dropped(this.name, 'queue_full', 1);
    this.queue.push(event);
    if (this.queue.length >= this.settings.batchSize && this.draining === null) void this.drain();
    // A flush already in flight takes this event too (flushAll); otherwise it waits at most one interval.
    else if (this.timer === null && !this.flushAll)
      this.timer = setTimeout(this.onFlushTimer, this.settings.flushIntervalMs).unref();
  }

  private drain(): Promise<void> {
    this.draining ??= this.sendBatches().finally(() => {
      this.draining = null;
    });
    return this.draining;
  }

  private async sendBatches(): Promise<void> {
    const { batchSize } = this.settings;
    while (this.queue.length > 0 && (this.flushAll || this.queue.length >= batchSize)) {
      if (this.abort.signal.aborted) {
        this.drop('shutdown', this.queue.length);
        this.queue = [];
        break;
      }
      let batch: Event[];
      if (this.queue.length <= batchSize) {
        batch = this.queue;
        this.queue = [];
      } else {
        batch = this.queue.splice(0, batchSize);
      }
      await this.deliverWithRetry(batch);
    }
    this.flushAll = false;
  }

  private async deliverWithRetry(batch: Event[]): Promise<void> {
    const signal = this.abort.signal;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.deliver(batch, signal);
        this.observer.sent(this.name, batch.length);
        return;
      } catch (error) {
        const failure = error instanceof Error ? error : new Error(String(error));
        this.observer.failed(this.name, failure);
        if (signal.aborted) return this.drop('shutdown', batch.length);
        if (failure instanceof DeliveryError && !failure.retryable) return this.drop('rejected', batch.length);
        if (attempt >= this.settings.retries) return this.drop('retries_exhausted', batch.length);
        const backoff = Math.min(this.settings.retryBackoffMs * 2 ** attempt, MAX_BACKOFF_MS);
        try {
          await sleep(backoff, undefined, { signal });
        } catch {
          return this.drop('shutdown', batch.length);
        }
      }
    }
  }

  private drop(reason: DropReason, count: number): void {
    if (count > 0) this.observer.dropped(this.name, reason, count);
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const deadline = setTimeout(() => this.abort.abort(), timeoutMs);
    try {
      while (this.queue.length > 0 || this.draining !== null) {
        this.flushAll = true;
        await this.drain();
      }
    } finally {
      clearTimeout(deadline);
      await this.onClose();
    }
  }
}
