/**
 * The stream exporter (`exporters.stream[]`, Vigie's own): each result becomes an event, the Riemann exporter's
 * event as the streams represent it (result-event.ts), pushed into a local stream (or `default`, the default
 * streams) through the stream part's ingest seam: the same bounded backlog as every input, so a busy engine
 * refuses the batch (dropped and counted as `backlog_full`) instead of growing memory or holding up the checks.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { CheckResult } from '../result-types.ts';
import type { ExporterMetrics } from './metrics.ts';
import { BatchDropped, QueuedExporter } from './queue.ts';
import { resultToStreamEvent } from './result-event.ts';
import type { StreamExporterSettings } from './settings.ts';

/** What the stream part offers its inputs (its ingest gateway), seen from here; wired in src/process/parts.ts. */
export interface StreamIngest {
  submit(
    target: string,
    events: Record<string, unknown>[],
    input: string,
  ): Promise<{ errorCount: number; firstFailure?: { error: Error } | undefined }> | 'full';
}

/** The `input` label of the stream part's refusal metric. */
const INPUT = 'healthcheck-exporter';

export class StreamExporter extends QueuedExporter {
  private readonly host = hostname();

  constructor(
    private readonly settings: StreamExporterSettings,
    private readonly ingest: StreamIngest,
    metrics: ExporterMetrics,
    logger: Logger,
  ) {
    super(settings.name, settings, metrics, logger);
  }

  protected async deliver(batch: CheckResult[]): Promise<void> {
    const { service, ttlSeconds, stream } = this.settings;
    const events = new Array<Record<string, unknown>>(batch.length);
    for (let i = 0; i < batch.length; i++)
      events[i] = resultToStreamEvent(batch[i] as CheckResult, this.host, service, ttlSeconds);
    const started = performance.now();
    const outcome = this.ingest.submit(stream, events, INPUT);
    if (outcome === 'full') {
      this.metrics.pushed(this.name, false, 0);
      throw new BatchDropped('backlog_full', `the streams' ingest backlog is full`);
    }
    const { errorCount, firstFailure } = await outcome;
    this.metrics.pushed(this.name, errorCount === 0, (performance.now() - started) / 1000);
    if (errorCount > 0) {
      // The events went in; an action (or a missing stream) failed on them: said, not counted as a drop.
      this.logger.warn(
        { exporter: this.name, stream, errors: errorCount },
        `stream exporter ${this.name}: ${firstFailure?.error.message ?? 'an action failed'}`,
      );
    }
  }

  protected release(): Promise<void> {
    return Promise.resolve();
  }
}
