/**
 * The process-wide Prometheus registry: default process metrics plus the HTTP server metrics. Each part
 * registers its own metrics on this registry (handed to it, never imported as a global).
 *
 * A part whose series number in the hundreds of thousands (the per-check healthcheck series: about 20 per check,
 * 240,000 for 12,000 checks) registers a text collector instead: it writes its families in the exposition format
 * itself. prom-client builds an object per sample and formats its labels at every scrape, which held the event
 * loop 1.6 s per scrape at 12,000 checks (docs/performance.md).
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

export interface ServerMetrics {
  readonly registry: Registry;
  readonly requestDuration: Histogram<'method' | 'route' | 'status'>;
  readonly responses: Counter<'method' | 'route' | 'status'>;
  /** Wrong credentials, and requests refused for them (docs/hardening.md, "Guessing credentials"). */
  readonly authFailures: Counter;
  readonly authLimited: Counter;
}

/**
 * Writes whole metric families (HELP, TYPE and samples, each line ending in \n) in the Prometheus text format, in
 * pieces: `/metrics` sends each piece as it comes and lets the event loop run between two pieces.
 */
export type TextCollector = () => Iterable<string>;

const textCollectors = new WeakMap<Registry, Set<TextCollector>>();

/** Adds families to what `/metrics` serves for this registry; returns the function that removes them. */
export function registerTextCollector(registry: Registry, collector: TextCollector): () => void {
  let collectors = textCollectors.get(registry);
  if (collectors === undefined) textCollectors.set(registry, (collectors = new Set()));
  collectors.add(collector);
  return () => collectors.delete(collector);
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * What `/metrics` answers: the registry's metrics, then its text collectors' families piece by piece, each piece
 * after a turn of the event loop, so that checks and requests due meanwhile are not held up by a large scrape.
 */
export async function* renderMetrics(registry: Registry): AsyncGenerator<string> {
  yield await registry.metrics();
  for (const collector of textCollectors.get(registry) ?? []) {
    for (const piece of collector()) {
      await nextTurn();
      yield piece;
    }
  }
}

/** How often the event loop's delay is sampled for `nodejs_eventloop_lag_*`. */
const EVENT_LOOP_SAMPLE_MS = 5_000;

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  // The event loop's delay is sampled by a timer of this period: prom-client's 10 ms default woke an idle service
  // 100 times a second (docs/performance.md, "An idle service"). A block of the loop still shows: it delays the
  // next sample by as much.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  // These three gauges end in `_total`, which `promtool check metrics` rejects for non-counters; the
  // process_* and nodejs_eventloop_* series cover the same ground.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
    registry.removeSingleMetric(name);
  }
  return {
    registry,
    requestDuration: new Histogram({
      name: 'http_requests_duration_seconds',
      help: 'Time to handle HTTP requests, by route template.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1, 1.5, 2, 3, 5],
      registers: [registry],
    }),
    responses: new Counter({
      name: 'http_responses_total',
      help: 'Count of HTTP responses, by route template ("?" for unknown routes).',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    authFailures: new Counter({
      name: 'http_auth_failures_total',
      help: "Requests whose credential matched nothing: basic auth, a token, or a heartbeat check's own token.",
      registers: [registry],
    }),
    authLimited: new Counter({
      name: 'http_auth_limited_total',
      help: 'Requests refused (429) because their address presented http.max-auth-failures wrong credentials within http.auth-failure-window.',
      registers: [registry],
    }),
  };
}
