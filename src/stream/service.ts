/**
 * The stream service: the only place that changes which streams run. It wraps the engine with
 * - API streams, stored in SQLite before the API answers, and, with `:persist true`, also written to
 *   `<first directory>/<name>.edn` once they compiled (upstream bug 19 wrote broken files first);
 * - file streams, read from the stream directories, watched, and diffed on every change or SIGHUP so that only
 *   the streams whose config changed are recompiled (the others keep their state and index);
 * - index snapshots, written every `snapshot-interval` and at stop, restored at startup into unchanged streams;
 * - the ingestion backlog, which answers "overloaded" (503) instead of queueing without bound.
 *
 * Name clashes: an API stream shadows a file stream of the same name (Mirabelle: the API add replaces it); when
 * the API stream is deleted the file stream comes back. A persisted API stream's own file is its on-disk form:
 * editing that file updates the stream (and its row), deleting it deletes the stream.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { VigieConfig } from '../config/load.ts';
import { AppError } from '../server/errors.ts';
import { IngestBacklog } from './backlog.ts';
import { StreamConfigError } from './compiler.ts';
import { compileCondition } from './condition.ts';
import { EdnError, type EdnValue, isEdnMap, kw, parseEdn, printEdn } from './edn.ts';
import { type PushResult, STREAM_NAME, type StreamFailure, StreamEngine, StreamNotFoundError } from './engine.ts';
import type { Event } from './event.ts';
import {
  type FileStream,
  persistFilePath,
  removePersistFile,
  scanStreamDirectories,
  StreamDirectoryWatcher,
  writePersistFile,
} from './files.ts';
import { DropReporter } from './limits.ts';
import { StreamMetrics } from './metrics.ts';
import { buildOutputs, type OutputRegistry } from './outputs/index.ts';
import type { StoredIndexSnapshot, StoredStream, StreamRepository } from './repository.ts';

export type StreamSettings = VigieConfig['streams'];

export interface StreamServiceOptions {
  settings: StreamSettings;
  /** The config file, for the messages of invalid output settings. */
  configFile: string | null;
  repository: StreamRepository;
  registry: Registry;
  logger: Logger;
}

interface ApiStream extends StoredStream {
  /** The config printed back from its parsed value, to compare with what a file holds. */
  canonical: string;
}

const NO_DIRECTORY = 'The stream cannot be saved. No directory configured for streams';

export class StreamService {
  readonly metrics: StreamMetrics;
  private readonly engine: StreamEngine;
  private readonly backlog: IngestBacklog<PushResult>;
  private readonly repository: StreamRepository;
  private readonly logger: Logger;
  private readonly outputs: OutputRegistry;
  private settings: StreamSettings;
  private readonly apiStreams = new Map<string, ApiStream>();
  /** The file streams as last applied (a rejected file keeps its previous streams here). */
  private fileStreams = new Map<string, FileStream>();
  private watcher: StreamDirectoryWatcher | null = null;
  private snapshotTimer: NodeJS.Timeout | null = null;

  constructor(options: StreamServiceOptions) {
    this.settings = options.settings;
    this.repository = options.repository;
    this.logger = options.logger;
    this.backlog = new IngestBacklog((target, events) => this.pushNow(target, events), options.settings.maxPendingEvents);
    const metrics = new StreamMetrics(options.registry, () => this.backlog.pending);
    this.metrics = metrics;
    // Outputs are built once: like Mirabelle, a reload does not rebuild them (their queues would be lost).
    this.outputs = buildOutputs(
      options.settings.outputs,
      metrics.outputObserver(() => this.outputs.queueSizes()),
      options.configFile,
    );
    const drops = new DropReporter({
      count: (stream, reason) => metrics.droppedEvents.inc({ name: stream, reason }),
      warn: (stream, reason, dropped) =>
        options.logger.warn({ stream, reason, dropped }, `stream ${stream}: ${dropped} events dropped at a cardinality cap (${reason}); see streams.max-forks and streams.max-index-entries`),
    });
    this.engine = new StreamEngine({
      outputs: this.outputs,
      logger: options.logger,
      limits: options.settings.limits,
      observer: {
        pushed: (stream, events, seconds) => metrics.observePush(stream, events, seconds),
        error: (stream) => metrics.countError(stream),
        dropped: (stream, reason) => drops.drop(stream, reason),
      },
    });
  }

  /** Startup: API streams from SQLite, then the stream files, then the index snapshots of unchanged streams. */
  load(): void {
    for (const row of this.repository.listStreams()) {
      try {
        this.engine.add(row.name, row.configEdn);
        this.apiStreams.set(row.name, { ...row, canonical: this.canonicalOf(row.name) });
      } catch (error) {
        this.logger.error({ stream: row.name, err: error }, `API stream ${row.name} no longer compiles, it is not running: ${(error as Error).message}`);
      }
    }
    this.rewriteMissingPersistFiles();
    this.applyStreamFiles();
    this.restoreIndexes(this.repository.loadIndexSnapshots());
    this.logger.info({ streams: this.engine.names().length, api: this.apiStreams.size, files: this.fileStreams.size }, 'streams loaded');
  }

  async start(): Promise<void> {
    await this.startWatcher();
    this.startSnapshotTimer();
  }

  /** SIGHUP: new settings, and the stream files read again (only changed streams are recompiled). */
  async reload(config: VigieConfig): Promise<void> {
    const next = config.streams;
    const previous = this.settings;
    this.settings = next;
    this.backlog.maxPending = next.maxPendingEvents;
    if (JSON.stringify(next.outputs) !== JSON.stringify(previous.outputs)) {
      this.logger.warn('changes to streams.outputs take effect at the next restart');
    }
    if (next.snapshotIntervalMs !== previous.snapshotIntervalMs) this.startSnapshotTimer();
    if (next.directories.join('\n') !== previous.directories.join('\n')) await this.startWatcher();
    this.applyStreamFiles();
  }

  async stop(): Promise<void> {
    if (this.snapshotTimer) clearInterval(this.snapshotTimer);
    this.snapshotTimer = null;
    await this.watcher?.close();
    this.watcher = null;
    this.writeSnapshots();
    await this.outputs.close();
  }

  streamNames(): string[] {
    return this.engine.names();
  }

  /** POST /api/v1/stream/<name>: compiled first; stored (and written to its file) only once it compiled. */
  addStream(name: string, text: string): void {
    if (!STREAM_NAME.test(name)) throw new AppError(400, `Invalid stream name ${JSON.stringify(name)}: use 1 to 255 characters of A-Z a-z 0-9 . _ -`);
    let parsed: EdnValue;
    try {
      parsed = parseEdn(text);
    } catch (error) {
      if (error instanceof EdnError) throw new AppError(400, `Invalid stream config: ${error.message}`);
      throw error;
    }
    const persist = isEdnMap(parsed) && parsed.get(kw('persist')) === true;
    const directory = this.settings.directories[0];
    if (persist && directory === undefined) throw new AppError(400, NO_DIRECTORY);
    try {
      this.engine.add(name, parsed, { keepStateIfUnchanged: true });
    } catch (error) {
      if (error instanceof StreamConfigError) throw new AppError(400, error.message);
      throw error;
    }
    const previous = this.apiStreams.get(name);
    const info = this.engine.get(name);
    const stored: ApiStream = { name, configEdn: text, isDefault: info?.isDefault ?? false, persist, canonical: this.canonicalOf(name) };
    try {
      this.repository.transaction(() => {
        this.repository.saveStream(stored, nowSeconds());
        if (persist && directory !== undefined) writePersistFile(directory, name, text);
        else if (previous?.persist && directory !== undefined) removePersistFile(directory, name);
      });
    } catch (error) {
      this.reinstate(name, previous);
      throw error;
    }
    this.apiStreams.set(name, stored);
    this.logger.info({ stream: name, persist }, `stream ${name} added through the API`);
  }

  describeStream(name: string): { configText: string; currentTime: number } {
    const info = this.engine.get(name);
    if (info === undefined) throw notFound(name);
    return { configText: this.apiStreams.get(name)?.configEdn ?? info.source, currentTime: info.index.currentTime };
  }

  /** DELETE: an API stream goes from SQLite (and its file); a file stream stays gone until its file changes. */
  removeStream(name: string): void {
    if (!this.engine.has(name)) throw notFound(name);
    const api = this.apiStreams.get(name);
    const directory = this.settings.directories[0];
    if (api !== undefined) {
      this.repository.transaction(() => {
        this.repository.deleteStream(name);
        if (api.persist && directory !== undefined) removePersistFile(directory, name);
      });
      this.apiStreams.delete(name);
    }
    this.engine.remove(name);
    const shadowed = this.fileStreams.get(name);
    if (api !== undefined && shadowed !== undefined && !this.isPersistFile(shadowed)) this.runFileStream(shadowed);
    if (!this.engine.has(name)) this.metrics.forget(name);
    this.logger.info({ stream: name }, `stream ${name} removed`);
  }

  /** Throws the 404 of a push to an unknown stream (`default` always exists: it may fan out to nothing). */
  requirePushTarget(name: string): void {
    if (name !== 'default' && !this.engine.has(name)) throw notFound(name);
  }

  /**
   * Pushes ingested events through the backlog. False when the backlog is full (the caller answers 503);
   * throws a 500 naming the stream and the error when actions failed (the other events were still pushed).
   */
  async ingest(route: string, name: string, events: Event[]): Promise<boolean> {
    const pending = this.backlog.submit(name, events);
    if (pending === null) {
      this.metrics.rejected.inc({ route });
      return false;
    }
    const results = await pending;
    let count = 0;
    let first: StreamFailure | undefined;
    for (const result of results) {
      count += result.errorCount;
      first ??= result.errors[0];
    }
    if (count > 0) {
      const detail = first ? `Stream ${first.stream}: ${first.error.message}` : `Stream ${name}: an action failed`;
      throw new AppError(500, count > 1 ? `${detail} (${count} errors in this batch)` : detail);
    }
    return true;
  }

  /** The backlog size limit, for the 503 message. */
  get maxPendingEvents(): number {
    return this.backlog.maxPending;
  }

  /** The first `limit` matching entries (streams.search-limit by default, at most streams.max-search-limit). */
  searchIndex(name: string, queryText: string, limit = this.settings.searchLimit): { events: Event[]; truncated: boolean } {
    if (!Number.isInteger(limit) || limit < 1 || limit > this.settings.maxSearchLimit) {
      throw new AppError(400, `field limit is incorrect: expected an integer from 1 to ${this.settings.maxSearchLimit} (streams.max-search-limit)`);
    }
    const index = this.engine.index(name);
    if (index === undefined) throw notFound(name);
    let condition;
    try {
      condition = compileCondition(parseEdn(queryText));
    } catch (error) {
      throw new AppError(400, `Invalid query: ${(error as Error).message}`);
    }
    return index.search(condition, limit);
  }

  currentTime(name: string): number {
    const index = this.engine.index(name);
    if (index === undefined) throw notFound(name);
    return index.currentTime;
  }

  /** Writes the snapshot of every non-empty index, all in one transaction. */
  writeSnapshots(): void {
    const snapshots: StoredIndexSnapshot[] = [];
    for (const name of this.engine.names()) {
      const info = this.engine.get(name);
      if (info === undefined || (info.index.size === 0 && info.index.currentTime === 0)) continue;
      const { currentTime, entries } = info.index.snapshot();
      snapshots.push({ stream: name, currentTimeNs: currentTime, configHash: configHash(info.config), entries });
    }
    this.repository.replaceIndexSnapshots(snapshots, nowSeconds());
  }

  private pushNow(target: string, events: Event[]): PushResult {
    try {
      return this.engine.push(target, events);
    } catch (error) {
      // The stream was removed while its events waited in the backlog.
      if (error instanceof StreamNotFoundError) return { errors: [{ stream: target, error }], errorCount: 1 };
      throw error;
    }
  }

  private restoreIndexes(snapshots: readonly StoredIndexSnapshot[]): void {
    let restored = 0;
    for (const snapshot of snapshots) {
      const info = this.engine.get(snapshot.stream);
      if (info === undefined || configHash(info.config) !== snapshot.configHash) continue;
      info.index.restore({ currentTime: snapshot.currentTimeNs, entries: snapshot.entries as { key: string; event: Event }[] });
      restored++;
    }
    if (snapshots.length > 0) this.logger.info({ restored, stored: snapshots.length }, 'index snapshots restored into unchanged streams');
  }

  private startSnapshotTimer(): void {
    if (this.snapshotTimer) clearInterval(this.snapshotTimer);
    this.snapshotTimer = setInterval(() => {
      try {
        this.writeSnapshots();
      } catch (error) {
        this.logger.error({ err: error }, `index snapshot failed: ${(error as Error).message}`);
      }
    }, this.settings.snapshotIntervalMs);
    this.snapshotTimer.unref();
  }

  private async startWatcher(): Promise<void> {
    await this.watcher?.close();
    const watcher = new StreamDirectoryWatcher(
      this.settings.directories,
      () => this.applyStreamFiles(),
      (error) => this.logger.error({ err: error }, `watching the stream directories failed: ${error.message}`),
    );
    this.watcher = watcher;
    await watcher.start();
    // Files changed between the startup scan and the watcher being ready would otherwise go unnoticed.
    this.applyStreamFiles();
  }

  /**
   * Reads the stream directories and applies the difference with the file streams last applied. A file that
   * does not parse, or holds a stream that does not compile, is logged with its path and changes nothing.
   */
  private applyStreamFiles(): void {
    const scan = scanStreamDirectories(this.settings.directories, this.fileStreams);
    for (const { path, problem } of scan.problems) {
      this.logger.error({ path, problem }, `stream file ${path} ignored, its streams are left as they were: ${problem}`);
    }
    const previous = this.fileStreams;
    const changed = [...scan.streams.values()].filter((stream) => {
      const before = previous.get(stream.name);
      return before === undefined || before.text !== stream.text || before.path !== stream.path;
    });
    const removed = [...previous.values()].filter((stream) => !scan.streams.has(stream.name));
    const rejected = this.rejectedFiles(changed);
    const next = new Map(scan.streams);
    for (const stream of changed) {
      if (!rejected.has(stream.path)) continue;
      const before = previous.get(stream.name);
      if (before === undefined) next.delete(stream.name);
      else next.set(stream.name, before);
    }
    for (const stream of removed) if (rejected.has(stream.path)) next.set(stream.name, stream);
    for (const [path, problem] of rejected) {
      this.logger.error({ path, problem }, `stream file ${path} ignored, its streams are left as they were: ${problem}`);
    }
    this.fileStreams = next;
    for (const stream of changed) if (!rejected.has(stream.path)) this.applyFileStream(stream);
    for (const stream of removed) if (!rejected.has(stream.path)) this.unapplyFileStream(stream);
  }

  /** Compiles the changed streams apart from the running ones: the files holding one that fails, and why. */
  private rejectedFiles(changed: readonly FileStream[]): Map<string, string> {
    const rejected = new Map<string, string>();
    if (changed.length === 0) return rejected;
    const scratch = new StreamEngine({ outputs: this.outputs });
    for (const stream of changed) {
      if (rejected.has(stream.path)) continue;
      try {
        scratch.add(stream.name, stream.config);
      } catch (error) {
        rejected.set(stream.path, `stream ${stream.name}: ${(error as Error).message}`);
      }
    }
    return rejected;
  }

  private applyFileStream(stream: FileStream): void {
    const api = this.apiStreams.get(stream.name);
    if (api === undefined) {
      this.runFileStream(stream);
      return;
    }
    if (!api.persist || !this.isPersistFile(stream)) {
      this.logger.warn({ stream: stream.name, path: stream.path }, `stream ${stream.name} of ${stream.path} is not run: an API stream has that name`);
      return;
    }
    if (api.canonical === stream.text) return;
    // Someone edited the persisted stream's file: the file is that stream's on-disk form, so it wins.
    this.engine.add(stream.name, stream.config, { keepStateIfUnchanged: true });
    const info = this.engine.get(stream.name);
    const stored: ApiStream = {
      name: stream.name,
      configEdn: stream.text,
      isDefault: info?.isDefault ?? false,
      persist: info?.persist ?? false,
      canonical: stream.text,
    };
    this.repository.saveStream(stored, nowSeconds());
    this.apiStreams.set(stream.name, stored);
    this.logger.info({ stream: stream.name, path: stream.path }, `persisted stream ${stream.name} updated from its file`);
  }

  private unapplyFileStream(stream: FileStream): void {
    const api = this.apiStreams.get(stream.name);
    if (api === undefined) {
      if (this.engine.remove(stream.name)) this.logger.info({ stream: stream.name, path: stream.path }, `stream ${stream.name} removed with its file`);
      return;
    }
    if (api.persist && this.isPersistFile(stream)) {
      this.repository.deleteStream(stream.name);
      this.apiStreams.delete(stream.name);
      this.engine.remove(stream.name);
      this.logger.info({ stream: stream.name, path: stream.path }, `persisted stream ${stream.name} removed: its file was deleted`);
    }
  }

  private runFileStream(stream: FileStream): void {
    try {
      const outcome = this.engine.add(stream.name, stream.config, { keepStateIfUnchanged: true });
      if (outcome !== 'unchanged') this.logger.info({ stream: stream.name, path: stream.path }, `stream ${stream.name} ${outcome} from ${stream.path}`);
    } catch (error) {
      this.logger.error({ stream: stream.name, path: stream.path, err: error }, `stream ${stream.name} of ${stream.path} not run: ${(error as Error).message}`);
    }
  }

  /** A persisted API stream whose file is gone (deleted while stopped, or a new first directory) gets it back:
   *  the database holds what the API acknowledged. */
  private rewriteMissingPersistFiles(): void {
    const directory = this.settings.directories[0];
    if (directory === undefined) return;
    for (const api of this.apiStreams.values()) {
      if (!api.persist) continue;
      try {
        if (!existsSync(persistFilePath(directory, api.name))) writePersistFile(directory, api.name, api.configEdn);
      } catch (error) {
        this.logger.error({ stream: api.name, err: error }, `cannot write the file of persisted stream ${api.name}: ${(error as Error).message}`);
      }
    }
  }

  private isPersistFile(stream: FileStream): boolean {
    const directory = this.settings.directories[0];
    return directory !== undefined && stream.path === persistFilePath(directory, stream.name);
  }

  /** Puts back what ran before a failed API write (its state is lost, but what runs matches what is stored). */
  private reinstate(name: string, previous: ApiStream | undefined): void {
    const file = this.fileStreams.get(name);
    if (previous !== undefined) this.engine.add(name, previous.configEdn);
    else if (file !== undefined) this.runFileStream(file);
    else this.engine.remove(name);
  }

  private canonicalOf(name: string): string {
    const info = this.engine.get(name);
    return info === undefined ? '' : printEdn(info.config);
  }

}

function notFound(name: string): AppError {
  return new AppError(404, `Stream ${name} not found`);
}

function configHash(config: EdnValue): string {
  return createHash('sha256').update(printEdn(config)).digest('hex');
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
