/**
 * The stream service: the API's verbs (list, add, describe, remove, search, current time) and the part's
 * lifecycle, over the pieces that do the work:
 * - the catalog (src/stream/catalog.ts): who owns a stream name, API or file, and what the engine runs;
 * - the file sync (src/stream/file-sync.ts): the stream directories, scanned, diffed and watched;
 * - the snapshotter (src/stream/snapshotter.ts): index snapshots in SQLite;
 * - the ingest gateway (src/stream/ingest-gateway.ts): the bounded backlog between the inputs and the engine.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { VigieConfig } from '../config/load.ts';
import type { AsyncQueueRunner } from './async-queues.ts';
import { StreamCatalog } from './catalog.ts';
import { compileCondition } from './condition.ts';
import { prettyEdn } from './edn-pretty.ts';
import { EdnError, type EdnValue, isEdnMap, isKeyword, kw, parseEdn } from './edn.ts';
import { STREAM_NAME, StreamEngine, type StreamInfo } from './engine.ts';
import { StreamError, streamNotFound } from './errors.ts';
import type { Event } from './event.ts';
import { IngestGateway } from './ingest-gateway.ts';
import { FileJournal } from './journal.ts';
import { DropReporter } from './limits.ts';
import { StreamMetrics } from './metrics.ts';
import { buildOutputs, type OutputRegistry } from './outputs/index.ts';
import type { StreamPublisher } from './pubsub/channels.ts';
import type { StreamRepository } from './repository.ts';
import { StreamSnapshotter } from './snapshotter.ts';

export interface StreamSummary {
  name: string;
  source: 'api' | 'file' | 'persisted';
  /** The config printed back as indented EDN. */
  config: string;
  description: string | null;
  default: boolean;
  'index-size': number;
  /** Epoch nanoseconds of the newest event the index saw (0 before any). */
  'current-time': number;
  /** Events pushed and action errors since the service started. */
  events: number;
  errors: number;
}

export type StreamSettings = VigieConfig['streams'];

export interface StreamServiceOptions {
  settings: StreamSettings;
  repository: StreamRepository;
  registry: Registry;
  logger: Logger;
  /** Websocket channels (`publish!`, index feeds); handed to the engine. */
  pubsub?: StreamPublisher;
  /** `async-queue!` queues; handed to the engine. */
  asyncQueues?: AsyncQueueRunner;
  /** Where the journal's segments are (`<data-dir>/journal`). */
  journalDirectory: string;
}

export class StreamService {
  readonly metrics: StreamMetrics;
  readonly gateway: IngestGateway;
  private readonly engine: StreamEngine;
  private readonly catalog: StreamCatalog;
  private readonly snapshotter: StreamSnapshotter;
  private readonly journal: FileJournal;
  private readonly logger: Logger;
  private readonly outputs: OutputRegistry;
  private settings: StreamSettings;

  constructor(options: StreamServiceOptions) {
    this.settings = options.settings;
    this.logger = options.logger;
    const metrics = new StreamMetrics(options.registry, () => this.gateway.pending);
    this.metrics = metrics;
    // A reload rebuilds only the outputs whose settings changed, so the others keep their queues.
    this.outputs = buildOutputs(options.settings.outputs, metrics.outputObserver(() => this.outputs.queueSizes()));
    const drops = new DropReporter({
      count: (stream, reason) => metrics.droppedEvents.inc({ name: stream, reason }),
      warn: (stream, reason, dropped) =>
        options.logger.warn({ stream, reason, dropped }, `stream ${stream}: ${dropped} events dropped at a cardinality cap (${reason}); see streams.max-forks and streams.max-index-entries`),
    });
    this.engine = new StreamEngine({
      outputs: this.outputs,
      pubsub: options.pubsub,
      asyncQueues: options.asyncQueues,
      logger: options.logger,
      limits: options.settings.limits,
      observer: {
        pushed: (stream, events, seconds) => metrics.observePush(stream, events, seconds),
        error: (stream) => metrics.countError(stream),
        dropped: (stream, reason) => drops.drop(stream, reason),
      },
    });
    this.journal = new FileJournal(options.journalDirectory, options.registry, options.logger);
    const log = options.settings.journal ? this.journal : null;
    this.gateway = new IngestGateway(this.engine, options.settings.maxPendingEvents, (input) => metrics.rejected.inc({ route: input }), log);
    this.catalog = new StreamCatalog({
      engine: this.engine,
      repository: options.repository,
      outputs: this.outputs,
      asyncQueues: options.asyncQueues,
      directories: options.settings.directories,
      logger: options.logger,
    });
    this.snapshotter = new StreamSnapshotter(this.engine, options.repository, options.logger, options.registry, {
      position: () => this.gateway.applied,
      // Truncated by every committed round even while the journal is off, so nothing covered stays behind.
      log: this.journal,
    });
  }

  /**
   * Startup: API streams from SQLite, then the stream files, then the action states of the last checkpoint and
   * the index snapshots of unchanged streams, then the journal since that checkpoint (docs/durability.md).
   */
  load(): void {
    this.catalog.loadApiStreams();
    this.catalog.files.sync();
    const position = this.snapshotter.restore();
    this.gateway.useLog(this.settings.journal ? this.journal : null, position);
    // Replayed even with the journal now off: those events were acknowledged when it was on.
    const started = performance.now();
    const replayed = this.gateway.replay(this.journal.entriesAfter(position));
    if (replayed > 0) {
      this.logger.info({ events: replayed, ms: Math.round(performance.now() - started) }, 'journal replayed: the events acknowledged after the last checkpoint went through the streams again');
    }
    this.logger.info(
      { streams: this.engine.names().length, api: this.catalog.apiStreamCount, files: this.catalog.files.streams.size },
      'streams loaded',
    );
  }

  async start(): Promise<void> {
    await this.catalog.files.watch();
    this.snapshotter.start(this.settings.snapshotIntervalMs);
  }

  /** SIGHUP: new settings, and the stream files read again (only changed streams are recompiled). */
  async reload(config: VigieConfig): Promise<void> {
    const next = config.streams;
    const previous = this.settings;
    this.settings = next;
    this.gateway.maxPending = next.maxPendingEvents;
    if (next.journal !== previous.journal) {
      const log = next.journal ? this.journal : null;
      this.gateway.useLog(log, this.gateway.applied);
      this.logger.info(`streams.journal is now ${next.journal ? 'on' : 'off'}`);
    }
    // Before the files are read again: a changed stream file may use an output this reload adds.
    if (!isDeepStrictEqual(next.outputs, previous.outputs)) await this.reconfigureOutputs(next);
    if (next.snapshotIntervalMs !== previous.snapshotIntervalMs) this.snapshotter.start(next.snapshotIntervalMs);
    await this.catalog.files.setDirectories(next.directories);
    this.catalog.files.sync();
  }

  private async reconfigureOutputs(next: StreamSettings): Promise<void> {
    const changes = await this.outputs.reconfigure(next.outputs);
    this.logger.info(changes, 'streams.outputs reloaded');
    for (const name of changes.removed) {
      const users = this.engine.names().filter((stream) => sendsTo(this.engine.get(stream)?.config ?? null, name));
      if (users.length > 0) {
        this.logger.warn({ output: name, streams: users }, `output ${name} was removed but streams still send to it (${users.join(', ')}); those events are dropped and counted (reason removed)`);
      }
    }
  }

  async stop(): Promise<void> {
    this.snapshotter.stop();
    await this.catalog.files.close();
    // Every batch acknowledged so far is written; the last round then covers them all and drops the journal.
    await this.journal.close();
    this.snapshotter.write();
    await this.snapshotter.close();
    await this.outputs.close();
  }

  streamNames(): string[] {
    return this.engine.names();
  }

  /** Every running stream as the dashboard lists it: where it comes from, its config, index and counters. */
  summaries(): StreamSummary[] {
    return this.engine.names().map((name) => {
      const info = this.engine.get(name) as StreamInfo;
      return {
        name,
        source: this.catalog.ownerOf(name),
        config: prettyEdn(info.config),
        description: info.description,
        default: info.isDefault,
        'index-size': info.index.size,
        'current-time': info.index.currentTime,
        ...this.metrics.counts(name),
      };
    });
  }

  /**
   * POST /api/v1/stream/<name>: compiled first; stored (and written to its file) only once it compiled. Returns
   * the compiler's warnings (likely mistakes that still compile), also logged.
   */
  addStream(name: string, text: string): readonly string[] {
    if (!STREAM_NAME.test(name)) {
      throw new StreamError('invalid', `Invalid stream name ${JSON.stringify(name)}: use 1 to 255 characters of A-Z a-z 0-9 . _ -`);
    }
    let parsed: EdnValue;
    try {
      parsed = parseEdn(text);
    } catch (error) {
      if (error instanceof EdnError) throw new StreamError('invalid', `Invalid stream config: ${error.message}`);
      throw error;
    }
    const persist = isEdnMap(parsed) && parsed.get(kw('persist')) === true;
    this.catalog.putApiStream(name, text, parsed, persist);
    this.logger.info({ stream: name, persist }, `stream ${name} added through the API`);
    const warnings = this.engine.get(name)?.warnings ?? [];
    for (const warning of warnings) this.logger.warn({ stream: name }, `stream ${name}: ${warning}`);
    return warnings;
  }

  describeStream(name: string): { configText: string; currentTime: number } {
    const info = this.engine.get(name);
    if (info === undefined) throw streamNotFound(name);
    return { configText: this.catalog.configText(name) ?? info.source, currentTime: info.index.currentTime };
  }

  /** DELETE: an API stream goes from SQLite (and its file); a file stream stays gone until its file changes. */
  removeStream(name: string): void {
    if (!this.engine.has(name)) throw streamNotFound(name);
    this.catalog.remove(name);
    if (!this.engine.has(name)) this.metrics.forget(name);
    this.logger.info({ stream: name }, `stream ${name} removed`);
  }

  /** Throws the not-found of a push to an unknown stream (`default` always exists: it may fan out to nothing). */
  requirePushTarget(name: string): void {
    if (name !== 'default' && !this.engine.has(name)) throw streamNotFound(name);
  }

  /** The first `limit` matching entries (streams.search-limit by default, at most streams.max-search-limit). */
  searchIndex(name: string, queryText: string, limit = this.settings.searchLimit): { events: Event[]; truncated: boolean } {
    if (!Number.isInteger(limit) || limit < 1 || limit > this.settings.maxSearchLimit) {
      throw new StreamError('invalid', `field limit is incorrect: expected an integer from 1 to ${this.settings.maxSearchLimit} (streams.max-search-limit)`);
    }
    const index = this.engine.index(name);
    if (index === undefined) throw streamNotFound(name);
    let condition;
    try {
      condition = compileCondition(parseEdn(queryText));
    } catch (error) {
      throw new StreamError('invalid', `Invalid query: ${(error as Error).message}`);
    }
    return index.search(condition, limit);
  }

  currentTime(name: string): number {
    const index = this.engine.index(name);
    if (index === undefined) throw streamNotFound(name);
    return index.currentTime;
  }
}

/** Whether a stream config has an `{:action :output! :params [:<output>]}` node. */
function sendsTo(config: EdnValue, output: string): boolean {
  if (Array.isArray(config)) return config.some((item) => sendsTo(item, output));
  if (!isEdnMap(config)) return false;
  const params = config.get(kw('params'));
  if (config.get(kw('action')) === kw('output!') && Array.isArray(params)) {
    const target = params[0];
    if ((isKeyword(target) ? target.name : target) === output) return true;
  }
  for (const child of config.values()) if (sendsTo(child, output)) return true;
  return false;
}
