/**
 * The exporters' metrics: upstream's `exporter_duration_seconds{name,status}` (one observation per delivery
 * attempt), plus what upstream lacks because it never drops: the queue size, results sent, results dropped by
 * reason, and failed attempts, each by exporter name. Created once per process; the exporters change on reload.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Upstream's buckets for exporter pushes (the HTTP server's). */
const PUSH_BUCKETS = [0.05, 0.1, 0.2, 0.4, 0.8, 1, 1.5, 2, 3, 5];

/** Why results were dropped, the `reason` label of `exporter_dropped_total`. */
export type ExportDropReason =
  /** The queue was full: the destination is slower than the checks, or down. */
  | 'queue_full'
  /** The destination refused the batch (HTTP 4xx, a Riemann error reply): retrying would not help. */
  | 'rejected'
  /** Every retry of a transient failure failed. */
  | 'retries_exhausted'
  /** The local streams' ingest backlog was full. */
  | 'backlog_full'
  /** Still queued when the exporter was closed (reload or shutdown) and its grace time ran out. */
  | 'shutdown';

export class ExporterMetrics {
  private readonly duration: Histogram<'name' | 'status'>;
  private readonly sentTotal: Counter<'name'>;
  private readonly droppedTotal: Counter<'name' | 'reason'>;
  private readonly failuresTotal: Counter<'name'>;

  constructor(registry: Registry, queueSizes: () => Iterable<readonly [string, number]>) {
    this.duration = new Histogram({
      name: 'exporter_duration_seconds',
      help: 'Time to push to an exporter.',
      labelNames: ['name', 'status'],
      buckets: PUSH_BUCKETS,
      registers: [registry],
    });
    this.sentTotal = new Counter({
      name: 'exporter_sent_total',
      help: 'Healthcheck results delivered by an exporter.',
      labelNames: ['name'],
      registers: [registry],
    });
    this.droppedTotal = new Counter({
      name: 'exporter_dropped_total',
      help: 'Healthcheck results an exporter dropped, by reason.',
      labelNames: ['name', 'reason'],
      registers: [registry],
    });
    this.failuresTotal = new Counter({
      name: 'exporter_failures_total',
      help: 'Failed delivery attempts of an exporter.',
      labelNames: ['name'],
      registers: [registry],
    });
    new Gauge({
      name: 'exporter_queue_size',
      help: 'Healthcheck results waiting in an exporter queue.',
      labelNames: ['name'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [name, size] of queueSizes()) this.set({ name }, size);
      },
    });
  }

  pushed(name: string, success: boolean, seconds: number): void {
    this.duration.observe({ name, status: success ? 'success' : 'failure' }, seconds);
    if (!success) this.failuresTotal.inc({ name });
  }

  /** An attempt to reach the exporter's target that failed before anything was sent (a refused connection). */
  unreachable(name: string): void {
    this.failuresTotal.inc({ name });
  }

  sent(name: string, count: number): void {
    this.sentTotal.inc({ name }, count);
  }

  dropped(name: string, reason: ExportDropReason, count: number): void {
    if (count > 0) this.droppedTotal.inc({ name, reason }, count);
  }
}
