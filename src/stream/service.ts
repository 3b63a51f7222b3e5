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
import { compileCondition, type Condition } from './condition.ts';
import { prettyEdn } from './edn-pretty.ts';
import { EdnError, type EdnValue, isEdnMap, isKeyword, kw, parseEdn } from './edn.ts';
import { STREAM_NAME, StreamEngine, type StreamInfo } from './engine.ts';
import { StreamError, streamNotFound } from './errors.ts';
import type { Event } from './event.ts';
import { IngestGateway, type IngestOutcome } from './ingest-gateway.ts';
import { FileJournal, type LogRecord } from './journal.ts';
import { DropReporter } from './limits.ts';
import type { NestingLimits } from './nesting.ts';
import { StreamMetrics } from './metrics.ts';
import { buildOutputs, type OutputRegistry } from './outputs/index.ts';
import type { StreamPublisher } from './pubsub/channels.ts';
import type { StreamRepository } from './repository.ts';
import type { StreamSettings } from './settings.ts';
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

/** What the inputs hand their events to: the ingest gateway, or a cluster node's event log publisher. */
export interface EventIngest {
  submit(target: string, events: Event[], input: string, record?: LogRecord): Promise<IngestOutcome> | 'full';
  readonly pending: number;
  maxPending: number;
}

export interface IndexStats {
  size: number;
  currentTime: number;
}

/**
 * A cluster node's streams (docs/cluster.md, "Streams"; src/cluster/streams.ts), loaded only with `cluster:`. The
 * engine of this service then holds the streams' definitions only: events go to the cluster's event log, the
 * owners of the partitions run them, and the index reads ask the owners.
 */
export interface StreamClusterSeam {
  readonly ingest: EventIngest;
  /** Written to the cluster's stream store after the local change (an error there undoes it: 503). */
  putApiStream(name: string, text: string, persist: boolean): Promise<void>;
  deleteApiStream(name: string): Promise<void>;
  search(name: string, queryText: string, limit: number): Promise<{ events: Event[]; truncated: boolean }>;
  /** Index size and current time of each stream, over every partition in the cluster. */
  indexStats(): Promise<Map<string, IndexStats>>;
  /** The streams changed here (API, files, a reload): the partitions this node runs follow. */
  catalogChanged(): void;
}

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
  /** This service's `streams.max-edn-depth` and `max-event-depth` (src/stream/nesting.ts): its engine, stream
   *  files and API read EDN with them; a reload changes them in place. */
  readonly nesting: NestingLimits;
  private cluster: StreamClusterSeam | null = null;
  private readonly engineOptions: ConstructorParameters<typeof StreamEngine>[0] & object;

  constructor(options: StreamServiceOptions) {
    this.settings = options.settings;
    this.nesting = { ...options.settings.nesting };
    this.logger = options.logger;
    const metrics = new StreamMetrics(options.registry, () => this.ingest.pending);
    this.metrics = metrics;
    // A reload rebuilds only the outputs whose settings changed, so the others keep their queues.
    this.outputs = buildOutputs(options.settings.outputs, metrics.outputObserver(() => this.outputs.queueSizes()));
    const drops = new DropReporter({
      count: (stream, reason) => metrics.droppedEvents.inc({ name: stream, reason }),
      warn: (stream, reason, dropped) =>
        options.logger.warn({ stream, reason, dropped }, `stream ${stream}: ${dropped} events dropped at a cardinality cap (${reason}); see streams.max-forks and streams.max-index-entries`),
    });
    this.engineOptions = {
      outputs: this.outputs,
      pubsub: options.pubsub,
      asyncQueues: options.asyncQueues,
      logger: options.logger,
      limits: options.settings.limits,
      nesting: this.nesting,
      observer: {
        pushed: (stream, events, seconds) => metrics.observePush(stream, events, seconds),
        error: (stream) => metrics.countError(stream),
        dropped: (stream, reason) => drops.drop(stream, reason),
      },
    };
    this.engine = new StreamEngine(this.engineOptions);
    this.journal = new FileJournal(options.journalDirectory, options.registry, options.logger, options.settings.journalDamagedSegments);
    const log = options.settings.journal ? this.journal : null;
    this.gateway = new IngestGateway(this.engine, options.settings.maxPendingEvents, (input) => metrics.rejected.inc({ route: input }), log);
    this.catalog = new StreamCatalog({
      engine: this.engine,
      repository: options.repository,
      outputs: this.outputs,
      asyncQueues: options.asyncQueues,
      directories: options.settings.directories,
      logger: options.logger,
      nesting: this.nesting,
    });
    this.snapshotter = new StreamSnapshotter(this.engine, options.repository, options.logger, options.registry, {
      position: () => this.gateway.applied,
      // Truncated by every committed round even while the journal is off, so nothing covered stays behind.
      log: this.journal,
    });
  }

  get maxPendingEvents(): number {
    return this.settings.maxPendingEvents;
  }

  get snapshotIntervalMs(): number {
    return this.settings.snapshotIntervalMs;
  }

  /** Cluster mode (before `load`): events, API changes and index reads go through the cluster. */
  useCluster(cluster: StreamClusterSeam): void {
    this.cluster = cluster;
  }

  /** Where the inputs hand their events. */
  get ingest(): EventIngest {
    return this.cluster?.ingest ?? this.gateway;
  }

  /**
   * An engine for one partition of a stream in a cluster (src/cluster/partition-runner.ts): the same outputs,
   * queues, caps and metrics as this service's; `forward` takes what it reinjects into other streams, `pubsub` (the
   * cluster's channels) what it publishes.
   */
  partitionEngine(forward: (destination: string, event: Event) => void, pubsub?: StreamPublisher): StreamEngine {
    return new StreamEngine({ ...this.engineOptions, forward, ...(pubsub ? { pubsub } : {}) });
  }

  /** A running stream's definition (its compiled config, `:partition-by`, `:default`). */
  streamInfo(name: string): StreamInfo | undefined {
    return this.engine.get(name);
  }

  apiStreamTexts(): { name: string; text: string; persist: boolean }[] {
    return this.catalog.apiStreamTexts();
  }

  /**
   * The cluster's stream store changed: the API streams become exactly `desired` (src/cluster/stream-replica.ts).
   * Whoever can write to NATS wrote them, so each goes through what the API admits (`admitApiStream`, then the
   * compiler) and its `persist` must be what its text says; what the API would refuse is handed to `refused` and
   * neither runs nor is listed here (a stream already running under that name keeps running, as after a refused
   * POST). A stream that cannot run here for another reason (a stream file holds the name) is logged and left out.
   */
  applyReplicatedStreams(desired: ReadonlyMap<string, { text: string; persist: boolean }>, refused: (name: string, why: string) => void): void {
    const current = new Map(this.catalog.apiStreamTexts().map((api) => [api.name, api]));
    for (const [name, wanted] of desired) {
      const have = current.get(name);
      if (have !== undefined && have.text === wanted.text && have.persist === wanted.persist) continue;
      try {
        const { parsed, persist } = admitApiStream(name, wanted.text, this.nesting.ednDepth);
        if (persist !== wanted.persist) throw new StreamError('invalid', `Invalid stream config: persist is ${wanted.persist} but the config says ${persist ? '' : 'no '}:persist true`);
        this.catalog.putApiStream(name, wanted.text, parsed, persist);
        this.logger.info({ stream: name }, `stream ${name} set by the cluster`);
      } catch (error) {
        if (error instanceof StreamError && error.reason === 'invalid') refused(name, `stream ${name}: ${error.message}`);
        else this.logger.error({ stream: name, err: error }, `stream ${name} from the cluster cannot run here: ${(error as Error).message}`);
      }
    }
    for (const name of current.keys()) {
      if (desired.has(name)) continue;
      this.catalog.remove(name);
      if (!this.engine.has(name)) this.metrics.forget(name);
      this.logger.info({ stream: name }, `stream ${name} removed by the cluster`);
    }
    this.cluster?.catalogChanged();
  }

  /**
   * Startup: API streams from SQLite, then the stream files, then the action states of the last checkpoint and
   * the index snapshots of unchanged streams, then the journal since that checkpoint (docs/durability.md).
   */
  load(): void {
    this.catalog.loadApiStreams();
    this.catalog.files.sync();
    // In a cluster the partitions' owners keep the state and the event log is JetStream's (src/cluster/streams.ts).
    if (this.cluster !== null) return;
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
    if (this.cluster === null) this.snapshotter.start(this.settings.snapshotIntervalMs);
  }

  /** SIGHUP: new settings, and the stream files read again (only changed streams are recompiled). */
  async reload(config: VigieConfig): Promise<void> {
    const next = config.streams;
    const previous = this.settings;
    this.settings = next;
    Object.assign(this.nesting, next.nesting);
    this.gateway.maxPending = next.maxPendingEvents;
    if (this.cluster !== null) this.cluster.ingest.maxPending = next.maxPendingEvents;
    if (next.journal !== previous.journal) {
      const log = next.journal ? this.journal : null;
      this.gateway.useLog(log, this.gateway.applied);
      this.logger.info(`streams.journal is now ${next.journal ? 'on' : 'off'}`);
    }
    // Before the files are read again: a changed stream file may use an output this reload adds.
    if (!isDeepStrictEqual(next.outputs, previous.outputs)) await this.reconfigureOutputs(next);
    if (next.snapshotIntervalMs !== previous.snapshotIntervalMs && this.cluster === null) this.snapshotter.start(next.snapshotIntervalMs);
    await this.catalog.files.setDirectories(next.directories);
    this.catalog.files.sync();
    this.cluster?.catalogChanged();
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
    await this.gateway.idle();
    if (this.cluster === null) this.snapshotter.write();
    await this.snapshotter.close();
    await this.outputs.close();
  }

  streamNames(): string[] {
    return this.engine.names();
  }

  /** Every running stream as the dashboard lists it: where it comes from, its config, index and counters. In a
   *  cluster the index figures are the whole cluster's and the counters this node's. */
  async summaries(): Promise<StreamSummary[]> {
    const stats = this.cluster === null ? null : await this.cluster.indexStats();
    return this.engine.names().map((name) => {
      const info = this.engine.get(name) as StreamInfo;
      const index = stats === null ? { size: info.index.size, currentTime: info.index.currentTime } : (stats.get(name) ?? { size: 0, currentTime: 0 });
      return {
        name,
        source: this.catalog.ownerOf(name),
        config: prettyEdn(info.config),
        description: info.description,
        default: info.isDefault,
        'index-size': index.size,
        'current-time': index.currentTime,
        ...this.metrics.counts(name),
      };
    });
  }

  /**
   * POST /api/v1/stream/<name>: compiled first; stored (and written to its file) only once it compiled. Returns
   * the compiler's warnings (likely mistakes that still compile), also logged.
   */
  async addStream(name: string, text: string): Promise<readonly string[]> {
    const { parsed, persist } = admitApiStream(name, text, this.nesting.ednDepth);
    const previous = this.catalog.apiStreamText(name);
    this.catalog.putApiStream(name, text, parsed, persist);
    if (this.cluster !== null) {
      try {
        await this.cluster.putApiStream(name, text, persist);
      } catch (error) {
        // Not in the cluster's store, so not here either: the API answers 503 and the client retries.
        if (previous !== undefined) this.catalog.putApiStream(name, previous.text, parseEdn(previous.text, this.nesting.ednDepth), previous.persist);
        else this.catalog.remove(name);
        throw error;
      }
      this.cluster.catalogChanged();
    }
    this.logger.info({ stream: name, persist }, `stream ${name} added through the API`);
    const warnings = this.engine.get(name)?.warnings ?? [];
    for (const warning of warnings) this.logger.warn({ stream: name }, `stream ${name}: ${warning}`);
    return warnings;
  }

  async describeStream(name: string): Promise<{ configText: string; currentTime: number }> {
    const info = this.engine.get(name);
    if (info === undefined) throw streamNotFound(name);
    return { configText: this.catalog.configText(name) ?? info.source, currentTime: await this.currentTime(name) };
  }

  /** DELETE: an API stream goes from SQLite (and its file); a file stream stays gone until its file changes. */
  async removeStream(name: string): Promise<void> {
    if (!this.engine.has(name)) throw streamNotFound(name);
    const api = this.catalog.apiStreamText(name);
    if (this.cluster !== null && api !== undefined) await this.cluster.deleteApiStream(name);
    this.catalog.remove(name);
    this.cluster?.catalogChanged();
    if (!this.engine.has(name)) this.metrics.forget(name);
    this.logger.info({ stream: name }, `stream ${name} removed`);
  }

  /** Throws the not-found of a push to an unknown stream (`default` always exists: it may fan out to nothing). */
  requirePushTarget(name: string): void {
    if (name !== 'default' && !this.engine.has(name)) throw streamNotFound(name);
  }

  /** The first `limit` matching entries (streams.search-limit by default, at most streams.max-search-limit). */
  async searchIndex(name: string, queryText: string, limit = this.settings.searchLimit): Promise<{ events: Event[]; truncated: boolean }> {
    if (!Number.isInteger(limit) || limit < 1 || limit > this.settings.maxSearchLimit) {
      throw new StreamError('invalid', `field limit is incorrect: expected an integer from 1 to ${this.settings.maxSearchLimit} (streams.max-search-limit)`);
    }
    const index = this.engine.index(name);
    if (index === undefined) throw streamNotFound(name);
    const condition = parseQuery(queryText, this.nesting.ednDepth);
    // In a cluster the query is checked here first, so that a bad one is a 400 without asking anyone.
    if (this.cluster !== null) return this.cluster.search(name, queryText, limit);
    return index.search(condition, limit);
  }

  async currentTime(name: string): Promise<number> {
    const index = this.engine.index(name);
    if (index === undefined) throw streamNotFound(name);
    if (this.cluster !== null) return (await this.cluster.indexStats()).get(name)?.currentTime ?? 0;
    return index.currentTime;
  }
}

/**
 * A stream as every API path admits it, before the compiler: a POST, and a stream replicated from the cluster's store
 * (docs/cluster.md, "What a node does with what it reads"). Its name, its EDN, and whether it persists (`:persist`).
 */
function admitApiStream(name: string, text: string, maxEdnDepth: number): { parsed: EdnValue; persist: boolean } {
  if (!STREAM_NAME.test(name)) {
    throw new StreamError('invalid', `Invalid stream name ${JSON.stringify(name)}: use 1 to 255 characters of A-Z a-z 0-9 . _ -`);
  }
  let parsed: EdnValue;
  try {
    parsed = parseEdn(text, maxEdnDepth);
  } catch (error) {
    if (error instanceof EdnError) throw new StreamError('invalid', `Invalid stream config: ${error.message}`);
    throw error;
  }
  return { parsed, persist: isEdnMap(parsed) && parsed.get(kw('persist')) === true };
}

/** A where-query, compiled; a 400 naming the problem when it does not compile. */
export function parseQuery(queryText: string, maxEdnDepth?: number): Condition {
  try {
    return compileCondition(parseEdn(queryText, maxEdnDepth));
  } catch (error) {
    throw new StreamError('invalid', `Invalid query: ${(error as Error).message}`);
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
