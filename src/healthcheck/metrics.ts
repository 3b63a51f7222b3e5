/**
 * The healthcheck metrics, named as upstream: `healthcheck_total{name,status}` and
 * `healthcheck_duration_seconds{name}`, both with the keys of `healthchecks-labels` as extra labels (value ""
 * when a check lacks the label). Plus `healthcheck_scheduling_lag_seconds`, how late runs start, which the
 * `checks` benchmark reads. A check's label sets are built once when it is added, not per run.
 *
 * The last result per check, as gauges (so that an alert rule needs no rate): `healthcheck_up` 1/0 (as
 * blackbox_exporter's `probe_success`), `healthcheck_last_duration_seconds`, and for TLS checks
 * `healthcheck_tls_certificate_expiry_seconds`, the earliest NotAfter of the chain as a Unix time.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Upstream's buckets (docs/http-api.md, metrics). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const LAG_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A check's label sets, and its series bound once (prom-client children) so that a run looks nothing up. */
export interface CheckMetricLabels {
  readonly success: Record<string, string>;
  readonly failure: Record<string, string>;
  readonly duration: Record<string, string>;
  readonly successCount: { inc(value?: number): void };
  readonly failureCount: { inc(value?: number): void };
  readonly durations: { observe(value: number): void };
}

export class HealthcheckMetrics {
  private readonly total: Counter<string>;
  private readonly duration: Histogram<string>;
  private readonly lag: Histogram<string>;
  private readonly up: Gauge<string>;
  private readonly lastDuration: Gauge<string>;
  private readonly certificateExpiry: Gauge<string>;
  /** `name` and `status` are ours; a label key of that name in `healthchecks-labels` cannot be honoured. */
  private readonly labelKeys: string[];

  constructor(registry: Registry, labelKeys: readonly string[]) {
    this.labelKeys = labelKeys.filter((key) => key !== 'name' && key !== 'status');
    this.total = new Counter({
      name: 'healthcheck_total',
      help: 'Count the number of healthchecks executions.',
      labelNames: ['name', 'status', ...this.labelKeys],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'healthcheck_duration_seconds',
      help: 'Time to execute a healthcheck.',
      labelNames: ['name', ...this.labelKeys],
      buckets: DURATION_BUCKETS,
      registers: [registry],
    });
    this.lag = new Histogram({
      name: 'healthcheck_scheduling_lag_seconds',
      help: 'How late periodic healthcheck runs start compared to their due time (waiting for a run slot included).',
      buckets: LAG_BUCKETS,
      registers: [registry],
    });
    const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ['name', ...this.labelKeys], registers: [registry] });
    this.up = gauge('healthcheck_up', 'Whether the last run of the healthcheck succeeded (1) or failed (0).');
    this.lastDuration = gauge('healthcheck_last_duration_seconds', 'Duration of the last run of the healthcheck.');
    this.certificateExpiry = gauge(
      'healthcheck_tls_certificate_expiry_seconds',
      'TLS healthchecks: the earliest expiry (NotAfter) of the certificate chain seen by the last handshake, as a Unix time in seconds.',
    );
  }

  /** Binding a child creates no series: a check's series appear when it first runs, as before. */
  labelsFor(name: string, labels: Readonly<Record<string, string>>): CheckMetricLabels {
    const success = this.labelSet(name, labels, 'success');
    const failure = this.labelSet(name, labels, 'failure');
    const duration = this.labelSet(name, labels);
    return {
      success,
      failure,
      duration,
      successCount: this.total.labels(success),
      failureCount: this.total.labels(failure),
      durations: this.duration.labels(duration),
    };
  }

  /** Built key by key: objects made with spread get a hidden class each, which costs 12 MB over 12,000 checks. */
  private labelSet(name: string, labels: Readonly<Record<string, string>>, status?: string): Record<string, string> {
    const set: Record<string, string> = { name };
    for (const key of this.labelKeys) set[key] = labels[key] ?? '';
    if (status !== undefined) set.status = status;
    return set;
  }

  /** `certificateExpirySeconds`: what the run's TLS handshake saw, when the check makes one. */
  observeRun(labels: CheckMetricLabels, success: boolean, durationSeconds: number, certificateExpirySeconds?: number): void {
    (success ? labels.successCount : labels.failureCount).inc();
    labels.durations.observe(durationSeconds);
    this.up.set(labels.duration, success ? 1 : 0);
    this.lastDuration.set(labels.duration, durationSeconds);
    if (certificateExpirySeconds !== undefined) this.certificateExpiry.set(labels.duration, certificateExpirySeconds);
  }

  observeLag(lagSeconds: number): void {
    this.lag.observe(lagSeconds);
  }

  /** Drops every series of a check (removed or replaced). */
  remove(labels: CheckMetricLabels): void {
    this.total.remove(labels.success);
    this.total.remove(labels.failure);
    this.duration.remove(labels.duration);
    this.up.remove(labels.duration);
    this.lastDuration.remove(labels.duration);
    this.certificateExpiry.remove(labels.duration);
  }
}
