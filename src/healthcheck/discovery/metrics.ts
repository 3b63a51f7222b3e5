/**
 * The discovery metrics: upstream's `http_discovery_duration_seconds{name}` and
 * `http_discovery_responses_total{status,name}` (one per poll), plus `http_discovery_failures_total{name,reason}`
 * saying why a poll changed nothing (request, status, json, invalid, apply).
 */
import { Counter, Histogram, type Registry } from 'prom-client';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

export type DiscoveryFailure = 'request' | 'status' | 'body' | 'json' | 'invalid' | 'apply';

export class DiscoveryMetrics {
  private readonly duration: Histogram<'name'>;
  private readonly responses: Counter<'status' | 'name'>;
  private readonly failures: Counter<'name' | 'reason'>;

  constructor(registry: Registry) {
    this.duration = new Histogram({
      name: 'http_discovery_duration_seconds',
      help: 'Time to execute the HTTP request for healthchecks discovery.',
      labelNames: ['name'],
      buckets: DURATION_BUCKETS,
      registers: [registry],
    });
    this.responses = new Counter({
      name: 'http_discovery_responses_total',
      help: 'Count the number of HTTP responses for discovery requests.',
      labelNames: ['status', 'name'],
      registers: [registry],
    });
    this.failures = new Counter({
      name: 'http_discovery_failures_total',
      help: 'Discovery polls that changed nothing, by reason.',
      labelNames: ['name', 'reason'],
      registers: [registry],
    });
  }

  polled(name: string, seconds: number, failure: DiscoveryFailure | null): void {
    this.duration.observe({ name }, seconds);
    this.responses.inc({ name, status: failure === null ? 'success' : 'failure' });
    if (failure !== null) this.failures.inc({ name, reason: failure });
  }
}
