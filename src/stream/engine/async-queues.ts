/**
 * The queues of `async-queue!` (`streams.async-queues.<name>: {queue-size}`): an action hands its children's
 * emit and the emission to a named queue and returns at once; the queue runs them on later ticks, in batches
 * between `setImmediate` turns, so that I/O and other requests get the loop between batches. A full queue drops
 * the emission and counts it (`stream_async_queue_dropped_total{queue, reason="queue_full"}`): Mirabelle throws
 * to the caller there, which would fail the whole push. Errors below the queue go to the children's own error
 * handler (the compiler isolates every child), so they are counted and logged like any stream error.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Emit } from '../actions/types.ts';
import type { Emission } from '../event.ts';

export interface AsyncQueueSettings {
  readonly queueSize: number;
}

export const DEFAULT_ASYNC_QUEUE_SIZE = 10_000;
/** Emissions run per `setImmediate` turn: big enough to amortise the turn, small enough to keep the loop fair. */
const BATCH = 1_000;

/** What the stream actions see of the queues. */
export interface AsyncQueueRunner {
  has(name: string): boolean;
  /** Runs `emit(emission)` on a later tick, or drops it (counted) when the queue is full. */
  enqueue(name: string, emit: Emit, emission: Emission): void;
  /** Runs everything queued now (before a checkpoint saves the state below the queues, and at stop). */
  drain(): void;
}

export interface AsyncQueueObserver {
  dropped(queue: string, reason: 'queue_full', count: number): void;
}

/** A ring buffer of (emit, emission) pairs: two parallel arrays, so that enqueueing allocates nothing. */
class AsyncQueue {
  private readonly emits: (Emit | undefined)[];
  private readonly emissions: Emission[];
  private head = 0;
  private length = 0;
  private scheduled = false;

  constructor(
    readonly name: string,
    readonly capacity: number,
    private readonly observer: AsyncQueueObserver,
  ) {
    this.emits = new Array<Emit | undefined>(capacity);
    this.emissions = new Array<Emission>(capacity).fill(null);
  }

  get size(): number {
    return this.length;
  }

  enqueue(emit: Emit, emission: Emission): void {
    if (this.length >= this.capacity) return this.observer.dropped(this.name, 'queue_full', 1);
    const slot = (this.head + this.length) % this.capacity;
    this.emits[slot] = emit;
    this.emissions[slot] = emission;
    this.length++;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.runBatch);
    }
  }

  /** Runs everything queued now, synchronously (at shutdown, before the outputs flush). */
  drain(): void {
    while (this.length > 0) this.run(this.length);
  }

  private readonly runBatch = (): void => {
    this.scheduled = false;
    this.run(Math.min(this.length, BATCH));
    if (this.length > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.runBatch);
    }
  };

  private run(count: number): void {
    for (let i = 0; i < count; i++) {
      const slot = this.head;
      const emit = this.emits[slot] as Emit;
      const emission = this.emissions[slot] as Emission;
      this.emits[slot] = undefined;
      this.emissions[slot] = null;
      this.head = (slot + 1) % this.capacity;
      this.length--;
      // The children's emit is isolated by the compiler: it reports what throws and never throws itself.
      emit(emission);
    }
  }
}

export class AsyncQueues implements AsyncQueueRunner {
  private readonly queues = new Map<string, AsyncQueue>();

  constructor(settings: Readonly<Record<string, AsyncQueueSettings>>, observer: AsyncQueueObserver) {
    for (const [name, one] of Object.entries(settings))
      this.queues.set(name, new AsyncQueue(name, one.queueSize, observer));
  }

  has(name: string): boolean {
    return this.queues.has(name);
  }

  enqueue(name: string, emit: Emit, emission: Emission): void {
    this.queues.get(name)?.enqueue(emit, emission);
  }

  /** Queue lengths, for `stream_async_queue_size{queue}` at scrape time. */
  sizes(): Record<string, number> {
    const sizes: Record<string, number> = {};
    for (const [name, queue] of this.queues) sizes[name] = queue.size;
    return sizes;
  }

  /** Runs what is still queued (stop: the events reach their outputs before those flush). */
  drain(): void {
    for (const queue of this.queues.values()) queue.drain();
  }
}

/** Builds the queues with their metrics on the process registry. */
export function createAsyncQueues(
  settings: Readonly<Record<string, AsyncQueueSettings>>,
  registry: Registry,
): AsyncQueues {
  const registers = [registry];
  const dropped = new Counter({
    name: 'stream_async_queue_dropped_total',
    help: 'Emissions dropped by each async-queue!, by reason (queue_full).',
    labelNames: ['queue', 'reason'],
    registers,
  });
  const queues = new AsyncQueues(settings, {
    dropped: (queue, reason, count) => dropped.inc({ queue, reason }, count),
  });
  new Gauge({
    name: 'stream_async_queue_size',
    help: 'Emissions waiting in each async-queue!.',
    labelNames: ['queue'],
    registers,
    collect() {
      for (const [queue, size] of Object.entries(queues.sizes())) this.set({ queue }, size);
    },
  });
  return queues;
}
