/**
 * The configured exporters as one result sink: the registry hands each periodic result to `offer`, which puts it
 * in every exporter's bounded queue and returns. A reload (SIGHUP) keeps the exporters whose settings did not
 * change (their queues and connections), starts the new ones, and closes the others after a grace time.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CheckResult } from '../result-types.ts';
import { HttpExporter } from './http.ts';
import { ExporterMetrics } from './metrics.ts';
import type { ResultExporter } from './queue.ts';
import { RiemannExporter } from './riemann.ts';
import type {
  ExporterSettings,
  HttpExporterSettings,
  RiemannExporterSettings,
  StreamExporterSettings,
} from './settings.ts';
import { type StreamIngest, StreamExporter } from './stream.ts';

/** How long a closing exporter may keep delivering what it queued. */
const CLOSE_GRACE_MS = 2_000;

type AnySettings = HttpExporterSettings | RiemannExporterSettings | StreamExporterSettings;

interface Running {
  kind: keyof ExporterSettings;
  settings: AnySettings;
  exporter: ResultExporter;
}

export class Exporters {
  private running: Running[] = [];
  private exporters: ResultExporter[] = [];
  private readonly metrics: ExporterMetrics;

  constructor(
    registry: Registry,
    private readonly logger: Logger,
    /** The stream part's ingest seam, bound once the stream part exists (src/process/parts.ts). */
    private readonly streamIngest: () => StreamIngest | null,
  ) {
    this.metrics = new ExporterMetrics(registry, () =>
      this.running.map(({ exporter }) => [exporter.name, exporter.queueSize()] as const),
    );
  }

  /** The registry's result sink. */
  readonly offer = (result: CheckResult): void => {
    const exporters = this.exporters;
    for (let i = 0; i < exporters.length; i++) (exporters[i] as ResultExporter).offer(result);
  };

  /** Builds the exporters of `settings`, keeping the running ones whose settings are unchanged. */
  async apply(settings: ExporterSettings): Promise<void> {
    const next: Running[] = [];
    const retired: Running[] = [];
    const previous = [...this.running];
    for (const kind of ['http', 'riemann', 'stream'] as const) {
      for (const entry of settings[kind]) {
        const same = previous.findIndex(
          (running) => running.kind === kind && isDeepStrictEqual(running.settings, entry),
        );
        if (same >= 0) next.push(...previous.splice(same, 1));
        else next.push({ kind, settings: entry, exporter: this.build(kind, entry) });
      }
    }
    retired.push(...previous);
    this.running = next;
    this.exporters = next.map(({ exporter }) => exporter);
    await Promise.all(retired.map(({ exporter }) => exporter.close(CLOSE_GRACE_MS)));
  }

  close(): Promise<void> {
    return this.apply({ http: [], riemann: [], stream: [] });
  }

  private build(kind: keyof ExporterSettings, settings: AnySettings): ResultExporter {
    const logger = this.logger.child({ exporter: settings.name });
    switch (kind) {
      case 'http':
        return new HttpExporter(settings as HttpExporterSettings, this.metrics, logger);
      case 'riemann': {
        const exporter = new RiemannExporter(settings as RiemannExporterSettings, this.metrics, logger);
        exporter.start();
        return exporter;
      }
      case 'stream': {
        const ingest = this.streamIngest();
        if (ingest === null)
          throw new Error('the stream exporter needs the stream part, which this process does not run');
        return new StreamExporter(settings as StreamExporterSettings, ingest, this.metrics, logger);
      }
    }
  }
}
