/**
 * The stream service: the API's verbs (list, add, describe, remove, search, current time) and the part's
 * lifecycle, over the pieces that do the work:
 * - the catalog (src/stream/catalog/catalog.ts): who owns a stream name, API or file, and what the engine runs;
 * - the file sync (src/stream/catalog/file-sync.ts): the stream directories, scanned, diffed and watched;
 * - the placement (src/stream/partition/placement.ts): where events run and indexes live, chosen once when the part is
 * built:
 *   this process (src/stream/partition/local-placement.ts: the ingest gateway, the journal, one partition over SQLite)
 *   or a cluster's partitions (each one opened here, src/stream/partition/stream-partitions.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { AsyncQueueRunner } from './engine/async-queues.ts';
import { StreamCatalog } from './catalog/catalog.ts';
import { CheckpointMetrics } from './durability/checkpoint-metrics.ts';
import type { Static } from '@sinclair/typebox';
import { prettyEdn } from './lang/edn-pretty.ts';
import { type EdnValue, isEdnMap, isKeyword, kw, parseEdn } from './lang/edn.ts';
import { StreamEngine, type StreamInfo } from './engine/engine.ts';
import { admitApiStream, parseQuery } from './catalog/api-admission.ts';
import { StreamError, streamNotFound } from './errors.ts';
import { DropReporter } from './limits.ts';
import type { NestingLimits } from './lang/nesting.ts';
import { StreamMetrics } from './metrics.ts';
import { buildOutputs, type OutputRegistry } from './outputs/index.ts';
import type { StreamPublisher } from './pubsub/channels.ts';
import type { StreamRepository } from './durability/repository.ts';
import type { StreamSettings } from './settings.ts';
import { LocalPlacement } from './partition/local-placement.ts';
import type {
  EventIngest,
  PartitionHandle,
  PartitionPorts,
  PlacementFactory,
  SearchAnswer,
  StreamHost,
  StreamPlacement,
} from './partition/placement.ts';
import { StreamPartitions } from './partition/stream-partitions.ts';
import { IngestError } from './ingest/errors.ts';
import type { Condition } from './lang/condition.ts';
import type { StreamSummary as StreamSummaryWire } from './wire.ts';

/** A stream as the dashboard lists it (the wire type of `GET /api/v1/overview/streams`). */
type StreamSummary = Static<typeof StreamSummaryWire>;

export interface StreamServiceOptions {
  settings: StreamSettings;
  repository: StreamRepository;
  registry: Registry;
  logger: Logger;
  /** Websocket channels (`publish!`, index feeds); handed to the engine. */
  pubsub?: StreamPublisher;
  /** `async-queue!` queues; handed to the engine. */
  asyncQueues?: AsyncQueueRunner;
  /** Where the journal's segments are (`<data-dir>/journal`), for the local placement. */
  journalDirectory: string;
  /** Where events run and indexes live: this process unless given (a cluster's partitions, src/process/parts.ts). */
  placement?: PlacementFactory;
}

export class StreamService implements StreamHost {
  readonly metrics: StreamMetrics;
  private readonly placement: StreamPlacement;
  private readonly engine: StreamEngine;
  private readonly catalog: StreamCatalog;
  private readonly logger: Logger;
  private readonly outputs: OutputRegistry;
  private settings: StreamSettings;
  /** This service's `streams.max-edn-depth` and `max-event-depth` (src/stream/lang/nesting.ts): its engine, stream
   *  files and API read EDN with them, its inputs, journal replay and placement decode events with them; a reload
   *  changes them in place. */
  readonly nesting: NestingLimits;
  private readonly engineOptions: ConstructorParameters<typeof StreamEngine>[0] & object;
  /** The checkpoint rounds' and restores' metrics, shared by every partition here. */
  readonly checkpointMetrics: CheckpointMetrics;
  /** The partitions of single streams this node runs for a cluster. */
  private readonly partitions: StreamPartitions;

  constructor(options: StreamServiceOptions) {
    this.settings = options.settings;
    this.nesting = { ...options.settings.nesting };
    this.logger = options.logger;
    const metrics = new StreamMetrics(options.registry, () => this.ingest.pending);
    this.metrics = metrics;
    // A reload rebuilds only the outputs whose settings changed, so the others keep their queues.
    this.outputs = buildOutputs(
      options.settings.outputs,
      metrics.outputObserver(() => this.outputs.queueSizes()),
    );
    const drops = new DropReporter({
      count: (stream, reason) => metrics.droppedEvents.inc({ name: stream, reason }),
      warn: (stream, reason, dropped) =>
        options.logger.warn(
          { stream, reason, dropped },
          `stream ${stream}: ${dropped} events dropped at a cardinality cap (${reason}); see streams.max-forks and streams.max-index-entries`,
        ),
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
    this.checkpointMetrics = new CheckpointMetrics(options.registry, options.logger);
    this.partitions = new StreamPartitions({
      engineOptions: this.engineOptions,
      streamInfo: (name) => this.engine.get(name),
      metrics: this.checkpointMetrics,
      logger: options.logger,
      intervalMs: () => this.settings.snapshotIntervalMs,
    });
    this.catalog = new StreamCatalog({
      engine: this.engine,
      repository: options.repository,
      outputs: this.outputs,
      asyncQueues: options.asyncQueues,
      directories: options.settings.directories,
      logger: options.logger,
      nesting: this.nesting,
    });
    this.placement =
      options.placement?.(this) ??
      new LocalPlacement({
        engine: this.engine,
        repository: options.repository,
        registry: options.registry,
        logger: options.logger,
        metrics: this.checkpointMetrics,
        settings: options.settings,
        journalDirectory: options.journalDirectory,
        rejected: (input) => this.countRejected(input),
      });
  }

  get maxPendingEvents(): number {
    return this.settings.maxPendingEvents;
  }

  get maxSearchLimit(): number {
    return this.settings.maxSearchLimit;
  }

  /** Where the inputs hand their events. */
  get ingest(): EventIngest {
    return this.placement.ingest;
  }

  countRejected(input: string): void {
    this.metrics.rejected.inc({ route: input });
  }

  /** A partition of one stream in a cluster (src/stream/partition/stream-partitions.ts): the same outputs, queues, caps
   * and
   *  metrics as this service's, fed and checkpointed through the ports its owner hands it. */
  openPartition(stream: string, ports: PartitionPorts): PartitionHandle {
    return this.partitions.partition(stream, ports);
  }

  parseQuery(queryText: string): Condition {
    return parseQuery(queryText, this.nesting.ednDepth);
  }

  unknownStream(name: string): Error {
    return streamNotFound(name);
  }

  invalidBatch(message: string): Error {
    return new IngestError(message);
  }

  /** A running stream's definition (its compiled config, `:partition-by`, `:default`). */
  streamInfo(name: string): StreamInfo | undefined {
    return this.engine.get(name);
  }

  apiStreamTexts(): { name: string; text: string; persist: boolean }[] {
    return this.catalog.apiStreamTexts();
  }

  /**
   * The cluster's stream store changed: the API streams become exactly `desired`
   * (src/cluster/streams/stream-replica.ts). Whoever can write to NATS wrote them, so each goes through what the API
   * admits (`admitApiStream`, then the compiler) and its `persist` must be what its text says; what the API would
   * refuse is handed to `refused` and neither runs nor is listed here (a stream already running under that name keeps
   * running, as after a refused POST). A stream that cannot run here for another reason (a stream file holds the name)
   * is logged and left out.
   */
  applyReplicatedStreams(
    desired: ReadonlyMap<string, { text: string; persist: boolean }>,
    refused: (name: string, why: string) => void,
  ): void {
    const current = new Map(this.catalog.apiStreamTexts().map((api) => [api.name, api]));
    for (const [name, wanted] of desired) {
      const have = current.get(name);
      if (have !== undefined && have.text === wanted.text && have.persist === wanted.persist) continue;
      try {
        const { parsed, persist } = admitApiStream(name, wanted.text, this.nesting.ednDepth);
        if (persist !== wanted.persist)
          throw new StreamError(
            'invalid',
            `Invalid stream config: persist is ${wanted.persist} but the config says ${persist ? '' : 'no '}:persist true`,
          );
        this.catalog.putApiStream(name, wanted.text, parsed, persist);
        this.logger.info({ stream: name }, `stream ${name} set by the cluster`);
      } catch (error) {
        if (error instanceof StreamError && error.reason === 'invalid')
          refused(name, `stream ${name}: ${error.message}`);
        else
          this.logger.error(
            { stream: name, err: error },
            `stream ${name} from the cluster cannot run here: ${(error as Error).message}`,
          );
      }
    }
    for (const name of current.keys()) {
      if (desired.has(name)) continue;
      this.catalog.remove(name);
      if (!this.engine.has(name)) this.metrics.forget(name);
      this.logger.info({ stream: name }, `stream ${name} removed by the cluster`);
    }
    this.placement.catalogChanged();
  }

  /**
   * Startup: API streams from SQLite, then the stream files, then the action states of the last checkpoint and
   * the index snapshots of unchanged streams, then the journal since that checkpoint (docs/durability.md).
   */
  async load(): Promise<void> {
    this.catalog.loadApiStreams();
    this.catalog.files.sync();
    await this.placement.load();
    this.logger.info(
      { streams: this.engine.names().length, api: this.catalog.apiStreamCount, files: this.catalog.files.streams.size },
      'streams loaded',
    );
  }

  async start(): Promise<void> {
    await this.catalog.files.watch();
    this.placement.start();
  }

  /** SIGHUP: new settings, and the stream files read again (only changed streams are recompiled). */
  async reload(next: StreamSettings): Promise<void> {
    const previous = this.settings;
    this.settings = next;
    Object.assign(this.nesting, next.nesting);
    this.placement.reload(next, previous);
    if (next.snapshotIntervalMs !== previous.snapshotIntervalMs) this.partitions.restartRounds(next.snapshotIntervalMs);
    // Before the files are read again: a changed stream file may use an output this reload adds.
    if (!isDeepStrictEqual(next.outputs, previous.outputs)) await this.reconfigureOutputs(next);
    await this.catalog.files.setDirectories(next.directories);
    this.catalog.files.sync();
    this.placement.catalogChanged();
  }

  private async reconfigureOutputs(next: StreamSettings): Promise<void> {
    const changes = await this.outputs.reconfigure(next.outputs);
    this.logger.info(changes, 'streams.outputs reloaded');
    for (const name of changes.removed) {
      const users = this.engine.names().filter((stream) => sendsTo(this.engine.get(stream)?.config ?? null, name));
      if (users.length > 0) {
        this.logger.warn(
          { output: name, streams: users },
          `output ${name} was removed but streams still send to it (${users.join(', ')}); those events are dropped and counted (reason removed)`,
        );
      }
    }
  }

  async stop(): Promise<void> {
    await this.catalog.files.close();
    // What was acknowledged reaches the outputs and is kept for a restart (or the partitions' next owners) first.
    await this.placement.stop();
    await this.outputs.close();
  }

  streamNames(): string[] {
    return this.engine.names();
  }

  /** Every running stream as the dashboard lists it: where it comes from, its config, index and counters. In a
   *  cluster the index figures are the whole cluster's and the counters this node's. */
  async summaries(): Promise<StreamSummary[]> {
    const stats = await this.placement.indexStats();
    return this.engine.names().map((name) => {
      const info = this.engine.get(name) as StreamInfo;
      const index = stats.get(name) ?? { size: 0, currentTime: 0 };
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
    try {
      await this.placement.putApiStream(name, text, persist);
    } catch (error) {
      // Not in the cluster's store, so not here either: the API answers 503 and the client retries.
      if (previous !== undefined)
        this.catalog.putApiStream(
          name,
          previous.text,
          parseEdn(previous.text, this.nesting.ednDepth),
          previous.persist,
        );
      else this.catalog.remove(name);
      throw error;
    }
    this.placement.catalogChanged();
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
    if (api !== undefined) await this.placement.deleteApiStream(name);
    this.catalog.remove(name);
    this.placement.catalogChanged();
    if (!this.engine.has(name)) this.metrics.forget(name);
    this.logger.info({ stream: name }, `stream ${name} removed`);
  }

  /** Throws the not-found of a push to an unknown stream (`default` always exists: it may fan out to nothing). */
  requirePushTarget(name: string): void {
    if (name !== 'default' && !this.engine.has(name)) throw streamNotFound(name);
  }

  /** The first `limit` matching entries (streams.search-limit by default, at most streams.max-search-limit). */
  async searchIndex(name: string, queryText: string, limit = this.settings.searchLimit): Promise<SearchAnswer> {
    if (!Number.isInteger(limit) || limit < 1 || limit > this.settings.maxSearchLimit) {
      throw new StreamError(
        'invalid',
        `field limit is incorrect: expected an integer from 1 to ${this.settings.maxSearchLimit} (streams.max-search-limit)`,
      );
    }
    if (this.engine.index(name) === undefined) throw streamNotFound(name);
    // Checked here first, so that a bad query is a 400 without asking anyone (a cluster's owners).
    const condition = parseQuery(queryText, this.nesting.ednDepth);
    return this.placement.search(name, condition, queryText, limit);
  }

  async currentTime(name: string): Promise<number> {
    if (this.engine.index(name) === undefined) throw streamNotFound(name);
    return this.placement.currentTime(name);
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
