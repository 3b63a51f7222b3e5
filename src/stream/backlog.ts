/**
 * The bounded backlog between ingestion (HTTP, remote-write, OTLP) and the engine. A batch is pushed at once
 * when nothing waits; a large batch is cut into slices of `sliceSize` events, one slice per macrotask, so that
 * other requests (health, metrics, searches) are served meanwhile and arriving batches queue behind it in order.
 * The backlog never grows past `maxPending` events: `submit` then answers null and the caller replies 503, which
 * Prometheus and OTLP senders retry later.
 */
import type { Event } from './event.ts';

/** Pushes events into a target (a stream name, or `default`) and says how it went. */
export type PushEvents<R> = (target: string, events: Event[]) => R;

interface Batch<R> {
  target: string;
  events: Event[];
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
  submit(target: string, events: Event[]): Promise<R[]> | null {
    if (this.pendingEvents > 0 && this.pendingEvents + events.length > this.maxPending) return null;
    if (this.queue.length === 0 && events.length <= this.sliceSize) {
      return Promise.resolve([this.push(target, events)]);
    }
    return new Promise<R[]>((resolve) => {
      this.queue.push({ target, events, offset: 0, results: [], resolve });
      this.pendingEvents += events.length;
      if (this.queue.length === 1) this.drain();
    });
  }

  private readonly drain = (): void => {
    this.scheduled = false;
    let budget = this.sliceSize;
    while (budget > 0 && this.queue.length > 0) {
      const batch = this.queue[0] as Batch<R>;
      const count = Math.min(budget, batch.events.length - batch.offset);
      const slice = count === batch.events.length ? batch.events : batch.events.slice(batch.offset, batch.offset + count);
      batch.results.push(this.push(batch.target, slice));
      batch.offset += count;
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
