/**
 * The bounded backlog between ingestion (HTTP, remote-write, OTLP) and the engine. A batch is pushed at once
 * when nothing waits; a large batch is cut into slices of `sliceSize` events, one slice per macrotask, so that
 * other requests (health, metrics, searches) are served meanwhile and arriving batches queue behind it in order.
 * The backlog never grows past `maxPending` events: `submit` then answers null and the caller replies 503, which
 * Prometheus and OTLP senders retry later.
 */
import type { Event } from '../event.ts';

/** Pushes events into a target (a stream name, or `default`) and says how it went; `seq` is the batch's and
 *  `end` how many of its events have gone through with these (the journal position,
 *  src/stream/durability/journal.ts). */
export type PushEvents<R> = (target: string, events: Event[], seq: number, end: number) => R;

interface Batch<R> {
  target: string;
  events: Event[];
  seq: number;
  offset: number;
  results: R[];
  resolve(results: R[]): void;
}

export class IngestBacklog<R> {
  private readonly queue: Batch<R>[] = [];
  private pendingEvents = 0;
  private scheduled = false;

  constructor(
    private readonly push: PushEvents<R>,
    public maxPending: number,
    private readonly sliceSize = 4096,
  ) {}

  /** Events accepted but not pushed yet. */
  get pending(): number {
    return this.pendingEvents;
  }

  /**
   * Queues the events; resolves with the push results (one per slice) once they all were pushed. Null when
   * the backlog is full. A batch larger than the whole backlog is still taken when nothing else waits,
   * otherwise it could never get in.
   */
  submit(target: string, events: Event[], seq: number): Promise<R[]> | null {
    if (this.isFull(events.length)) return null;
    if (this.queue.length === 0 && events.length <= this.sliceSize) {
      return Promise.resolve([this.push(target, events, seq, events.length)]);
    }
    return new Promise<R[]>((resolve) => {
      this.queue.push({ target, events, seq, offset: 0, results: [], resolve });
      this.pendingEvents += events.length;
      if (this.queue.length === 1) this.drain();
    });
  }

  /**
   * Holds room for `count` events that will be handed over with `enqueue` later (a batch waiting for its journal
   * write); false, and nothing held, when the backlog cannot take them. `release` gives the room back unused.
   */
  reserve(count: number): boolean {
    if (this.isFull(count)) return false;
    this.pendingEvents += count;
    return true;
  }

  release(count: number): void {
    this.pendingEvents -= count;
  }

  /**
   * Queues events whose room `reserve` held, behind what waits; they are pushed on a later macrotask, in slices,
   * so that many batches handed over at once (a group write of the journal settling) never hold the loop longer
   * than one slice.
   */
  enqueue(target: string, events: Event[], seq: number): Promise<R[]> {
    return new Promise<R[]>((resolve) => {
      this.queue.push({ target, events, seq, offset: 0, results: [], resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.drain);
      }
    });
  }

  /** Resolves once nothing waits in the queue (at stop: what was written goes through before the last checkpoint). */
  async idle(): Promise<void> {
    while (this.queue.length > 0) await new Promise((resolve) => setImmediate(resolve));
  }

  /** Whether a batch of `count` events would be refused now. */
  isFull(count: number): boolean {
    return this.pendingEvents > 0 && this.pendingEvents + count > this.maxPending;
  }

  private readonly drain = (): void => {
    this.scheduled = false;
    let budget = this.sliceSize;
    while (budget > 0 && this.queue.length > 0) {
      const batch = this.queue[0] as Batch<R>;
      const count = Math.min(budget, batch.events.length - batch.offset);
      const slice =
        count === batch.events.length ? batch.events : batch.events.slice(batch.offset, batch.offset + count);
      batch.offset += count;
      batch.results.push(this.push(batch.target, slice, batch.seq, batch.offset));
      budget -= count;
      this.pendingEvents -= count;
      if (batch.offset === batch.events.length) {
        this.queue.shift();
        batch.resolve(batch.results);
      }
    }
    if (this.queue.length > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.drain);
    }
  };
}
