/**
 * The HTTP exporter (`exporters.http[]`): POSTs batches of results as a JSON array in the result shape of the API
 * (docs/http-api.md, "Results"), `Content-Type: application/json`. Unlike upstream (one result per request, sent
 * inline by the only exporter goroutine) it never holds up the checks: results wait in the exporter's bounded
 * queue and leave in batches over one keep-alive connection pool. A failed batch (network error, timeout, 429,
 * 5xx) is retried `retries` times with exponential backoff by undici's RetryAgent, then dropped and counted; any
 * other status ≥ 300 drops it at once.
 */
import type { Logger } from 'pino';
import type { Agent, RetryAgent } from 'undici';
import { mergeHeaders } from '../../common/headers.ts';
import { undici } from '../../common/undici.ts';
import type { CheckResult } from '../result-types.ts';
import type { ExporterMetrics } from './metrics.ts';
import { BatchDropped, QueuedExporter } from './queue.ts';
import type { HttpExporterSettings } from './settings.ts';
import { tlsConnectOptions } from './tls.ts';

/** Transient failures worth another attempt: undici's defaults plus its timeouts (a hanging collector). */
const RETRIED_ERRORS = [
  'ECONNRESET',
  'ECONNREFUSED',
  'ENOTFOUND',
  'ENETDOWN',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EHOSTUNREACH',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
];
const RETRIED_STATUSES = [429, 500, 502, 503, 504];
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 10_000;
/** One batch is in flight at a time; a second connection only covers a reconnect while the first closes. */
const CONNECTIONS = 2;

export class HttpExporter extends QueuedExporter {
  private readonly pool: Agent;
  private readonly client: RetryAgent;
  private readonly headers: Record<string, string>;
  private readonly origin: string;
  private readonly path: string;

  constructor(
    private readonly settings: HttpExporterSettings,
    metrics: ExporterMetrics,
    logger: Logger,
  ) {
    super(settings.name, settings, metrics, logger);
    const url = new URL(settings.url);
    this.origin = url.origin;
    this.path = `${url.pathname}${url.search}`;
    this.pool = new (undici().Agent)({
      connections: CONNECTIONS,
      connect: { timeout: settings.timeoutMs, ...(settings.tls ? tlsConnectOptions(settings.tls) : {}) },
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
    });
    this.client = new (undici().RetryAgent)(this.pool, {
      maxRetries: settings.retries,
      minTimeout: FIRST_BACKOFF_MS,
      maxTimeout: MAX_BACKOFF_MS,
      timeoutFactor: 2,
      methods: ['POST'],
      statusCodes: RETRIED_STATUSES,
      errorCodes: RETRIED_ERRORS,
    });
    // The body is JSON whatever the configured headers say.
    this.headers = mergeHeaders(settings.headers, { 'content-type': 'application/json' });
  }

  protected async deliver(batch: CheckResult[], signal: AbortSignal): Promise<void> {
    const started = performance.now();
    try {
      const response = await this.client.request({
        origin: this.origin,
        path: this.path,
        method: 'POST',
        headers: this.headers,
        body: JSON.stringify(batch, batch.some(hasDegraded) ? withoutDegraded : undefined),
        signal,
      });
      await response.body.dump();
      this.metrics.pushed(this.name, true, (performance.now() - started) / 1000);
    } catch (error) {
      this.metrics.pushed(this.name, false, (performance.now() - started) / 1000);
      throw failureOf(error, this.settings);
    }
  }

  protected release(): Promise<void> {
    return this.client.destroy();
  }
}

/** A final failure: retried ones exhausted their attempts; a non-retried status is a refusal. */
function failureOf(error: unknown, settings: HttpExporterSettings): BatchDropped {
  if (error instanceof undici().errors.RequestRetryError) {
    const status = error.statusCode;
    const reason = RETRIED_STATUSES.includes(status) ? 'retries_exhausted' : 'rejected';
    return new BatchDropped(reason, `HTTP exporter: request failed, status ${status}`);
  }
  return new BatchDropped(
    'retries_exhausted',
    `HTTP exporter: fail to send healthchecks to ${settings.url}: ${(error as Error).message}`,
  );
}

const hasDegraded = (result: CheckResult): boolean => result.degraded !== undefined;

/**
 * Exporters send results as Cabourotte did (docs/checks.md, "States"): a run's `degraded` condition feeds the check's
 * state, which Vigie's own routes show, and is left out here. Only a result's own key goes (a label may be named so).
 */
function withoutDegraded(this: unknown, key: string, value: unknown): unknown {
  return key === 'degraded' && this !== null && typeof this === 'object' && 'healthcheck-timestamp' in this
    ? undefined
    : value;
}
