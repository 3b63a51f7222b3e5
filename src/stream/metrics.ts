/**
 * The stream part's Prometheus metrics, registered on the process registry handed to the part. Per-stream
 * children are looked up once per stream and cached: a label lookup per push would cost more than the push of a
 * small batch.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DropReason, OutputObserver } from './outputs/types.ts';

interface StreamChildren {
  duration: Histogram.Internal<'name'>;
  events: Counter.Internal;
  errors: Counter.Internal;
  /** Plain copies of the two counters, readable synchronously (prom-client reads them asynchronously). */
  eventCount: number;
  errorCount: number;
}

export class StreamMetrics {
  readonly remoteWriteSamples: Counter;
  readonly otlpSpans: Counter;
  readonly rejected: Counter<'route'>;
  readonly refusedBodies: Counter<'route' | 'reason'>;
  /** Pushed events accepted with a warning, by field (`time`, `metric`): see src/stream/ingest/push-warnings.ts. */
  readonly ingestWarnings: Counter<'field'>;
  private readonly duration: Histogram<'name'>;
  private readonly events: Counter<'name'>;
  readonly droppedEvents: Counter<'name' | 'reason'>;
  private readonly errors: Counter<'name'>;
  private readonly children = new Map<string, StreamChildren>();

  constructor(
    private readonly registry: Registry,
    pendingEvents: () => number,
  ) {
    const registers = [registry];
    this.duration = new Histogram({
      name: 'stream_duration_seconds',
      help: 'Time spent in each stream per pushed batch of events.',
      labelNames: ['name'],
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1],
      registers,
    });
    this.events = new Counter({
      name: 'stream_events_total',
      help: 'Events pushed into each stream.',
      labelNames: ['name'],
      registers,
    });
    this.errors = new Counter({
      name: 'stream_errors_total',
      help: 'Errors raised by the actions of each stream.',
      labelNames: ['name'],
      registers,
    });
    // Mirabelle counts time series here; the decoder gives events (one per sample), so Vigie counts samples.
    this.remoteWriteSamples = new Counter({
      name: 'prometheus_remote_write_total',
      help: 'Samples received through Prometheus remote write (one event each).',
      registers,
    });
    this.droppedEvents = new Counter({
      name: 'stream_dropped_events_total',
      help: 'Events dropped at a cardinality cap, by stream and reason (fork_limit, index_full).',
      labelNames: ['name', 'reason'],
      registers,
    });
    this.otlpSpans = new Counter({
      name: 'otlp_spans_total',
      help: 'Spans received through OTLP (one event each).',
      registers,
    });
    this.rejected = new Counter({
      name: 'stream_ingest_rejected_total',
      help: 'Ingestion requests answered 503 because the backlog was full.',
      labelNames: ['route'],
      registers,
    });
    this.refusedBodies = new Counter({
      name: 'stream_ingest_refused_bodies_total',
      help: 'Compressed ingestion bodies refused before parsing, by route and reason (too_large, invalid_gzip, unsupported_encoding).',
      labelNames: ['route', 'reason'],
      registers,
    });
    this.ingestWarnings = new Counter({
      name: 'stream_ingest_warnings_total',
      help: 'Pushed events accepted with a warning: a time in epoch seconds or milliseconds, a metric sent as a numeric string.',
      labelNames: ['field'],
      registers,
    });
    new Gauge({
      name: 'stream_ingest_pending_events',
      help: 'Events accepted by ingestion and not pushed into their streams yet.',
      registers,
      collect() {
        this.set(pendingEvents());
      },
    });
  }

  /** Output metrics: sent, dropped (by reason) and failed deliveries, and the queue sizes read at scrape time. */
  outputObserver(queueSizes: () => Record<string, number>): OutputObserver {
    const registers = [this.registry];
    const sent = new Counter({
      name: 'stream_output_sent_total',
      help: 'Events delivered by each output.',
      labelNames: ['output'],
      registers,
    });
    const dropped = new Counter({
      name: 'stream_output_dropped_total',
      help: 'Events dropped by each output, by reason (queue_full, rejected, retries_exhausted, unusable, shutdown, removed, maintenance).',
      labelNames: ['output', 'reason'],
      registers,
    });
    const failed = new Counter({
      name: 'stream_output_failures_total',
      help: 'Failed delivery attempts of each output (some are retried).',
      labelNames: ['output'],
      registers,
    });
    new Gauge({
      name: 'stream_output_queue_size',
      help: 'Events waiting in each output queue.',
      labelNames: ['output'],
      registers,
      collect() {
        for (const [output, size] of Object.entries(queueSizes())) this.set({ output }, size);
      },
    });
    return {
      sent: (output: string, count: number) => sent.inc({ output }, count),
      dropped: (output: string, reason: DropReason, count: number) => dropped.inc({ output, reason }, count),
      failed: (output: string) => failed.inc({ output }),
    };
  }

  observePush(stream: string, events: number, seconds: number): void {
    const children = this.childrenOf(stream);
    children.events.inc(events);
    children.eventCount += events;
    children.duration.observe(seconds);
  }

  countError(stream: string): void {
    const children = this.childrenOf(stream);
    children.errors.inc();
    children.errorCount++;
  }

  /** Events pushed into a stream and errors its actions raised, since the start (the dashboard derives rates). */
  counts(stream: string): { events: number; errors: number } {
    const children = this.children.get(stream);
    return { events: children?.eventCount ?? 0, errors: children?.errorCount ?? 0 };
  }

  /** A removed stream's series go away with it (stream names come from clients, series must not pile up). */
  forget(stream: string): void {
    if (!this.children.delete(stream)) return;
    this.duration.remove(stream);
    this.events.remove(stream);
    this.errors.remove(stream);
  }

  private childrenOf(stream: string): StreamChildren {
    let children = this.children.get(stream);
    if (children === undefined) {
      children = {
        duration: this.duration.labels(stream),
        events: this.events.labels(stream),
        errors: this.errors.labels(stream),
        eventCount: 0,
        errorCount: 0,
      };
      this.children.set(stream, children);
    }
    return children;
  }
}
