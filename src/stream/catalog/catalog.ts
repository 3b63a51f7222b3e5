/**
 * Who owns a stream name, and so what the engine runs under it:
 * - an API stream, stored in SQLite before the API answers, and, with `:persist true`, also written to
 *   `<first directory>/<name>.edn` once it compiled (upstream bug 19 wrote broken files first);
 * - a file stream, read from the stream directories (src/stream/catalog/file-sync.ts).
 *
 * Name clashes: an API stream shadows a file stream of the same name (Mirabelle: the API add replaces it); when
 * the API stream is deleted the file stream comes back. A persisted API stream's own file is its on-disk form:
 * editing that file updates the stream (and its row), deleting it deletes the stream.
 */
import type { AsyncQueueRunner } from '../engine/async-queues.ts';
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import { StreamConfigError } from '../engine/compiler.ts';
import { type EdnValue, printEdn } from '../lang/edn.ts';
import { StreamEngine } from '../engine/engine.ts';
import type { OutputSink } from '../engine/engine-options.ts';
import { StreamError } from '../errors.ts';
import {
  type FileChanges,
  type FileStream,
  type FileSyncTarget,
  persistFilePath,
  removePersistFile,
  StreamFileSync,
  writePersistFile,
} from './file-sync.ts';
import type { StoredStream, StreamRepository } from '../durability/repository.ts';

interface ApiStream extends StoredStream {
  /** The config printed back from its parsed value, to compare with what a file holds. */
  canonical: string;
}

export interface StreamCatalogOptions {
  engine: StreamEngine;
  repository: StreamRepository;
  /** What `output!` reaches, to compile changed files apart from the running streams. */
  outputs: OutputSink;
  /** `async-queue!` queues, so that a changed file is checked against the declared queue names. */
  asyncQueues?: AsyncQueueRunner | undefined;
  /** The stream directories (the first one also holds the files of persisted API streams). */
  directories: readonly string[];
  logger: Logger;
  /** `streams.max-edn-depth` for the stream files, as the service holds it. */
  nesting?: { readonly ednDepth: number };
}

const NO_DIRECTORY = 'The stream cannot be saved. No directory configured for streams';

export class StreamCatalog implements FileSyncTarget {
  private readonly apiStreams = new Map<string, ApiStream>();
  private readonly engine: StreamEngine;
  private readonly repository: StreamRepository;
  private readonly logger: Logger;
  private readonly outputs: OutputSink;
  private readonly asyncQueues: AsyncQueueRunner | undefined;
  /** The file streams: the catalog is the target of their sync, and the service drives it (watch, reload). */
  readonly files: StreamFileSync;

  constructor(options: StreamCatalogOptions) {
    this.engine = options.engine;
    this.repository = options.repository;
    this.outputs = options.outputs;
    this.asyncQueues = options.asyncQueues;
    this.logger = options.logger;
    this.files = new StreamFileSync(options.directories, this, options.logger, options.nesting);
  }

  /** Who owns a running stream: the API (its own file too when persisted), or a stream file. */
  ownerOf(name: string): 'api' | 'persisted' | 'file' {
    const api = this.apiStreams.get(name);
    return api === undefined ? 'file' : api.persist ? 'persisted' : 'api';
  }

  get apiStreamCount(): number {
    return this.apiStreams.size;
  }

  /** Startup: runs the API streams stored in SQLite and gives persisted ones whose file is gone their file back. */
  loadApiStreams(): void {
    for (const row of this.repository.listStreams()) {
      try {
        this.engine.add(row.name, row.configEdn);
        this.apiStreams.set(row.name, { ...row, canonical: this.canonicalOf(row.name) });
      } catch (error) {
        this.logger.error(
          { stream: row.name, err: error },
          `API stream ${row.name} no longer compiles, it is not running: ${(error as Error).message}`,
        );
      }
    }
    this.rewriteMissingPersistFiles();
  }

  /** The config text of a running stream: as the API gave it, or as its file holds it. */
  /** The API streams as stored: name, EDN text, persist flag (what a cluster's stream store holds). */
  apiStreamTexts(): { name: string; text: string; persist: boolean }[] {
    return [...this.apiStreams.values()].map((api) => ({ name: api.name, text: api.configEdn, persist: api.persist }));
  }

  /** An API stream as stored; undefined for any other name. */
  apiStreamText(name: string): { name: string; text: string; persist: boolean } | undefined {
    const api = this.apiStreams.get(name);
    return api === undefined ? undefined : { name, text: api.configEdn, persist: api.persist };
  }

  configText(name: string): string | undefined {
    return this.apiStreams.get(name)?.configEdn ?? this.engine.get(name)?.source;
  }

  /** An API add: compiled first; stored (and written to its file) only once it compiled. */
  putApiStream(name: string, text: string, config: EdnValue, persist: boolean): void {
    const directory = this.files.persistDirectory;
    this.refuseFileStream(name);
    if (persist && directory === undefined) throw new StreamError('invalid', NO_DIRECTORY);
    try {
      this.engine.add(name, config, { keepStateIfUnchanged: true });
    } catch (error) {
      if (error instanceof StreamConfigError) throw new StreamError('invalid', error.message);
      throw error;
    }
    const previous = this.apiStreams.get(name);
    const info = this.engine.get(name);
    const stored: ApiStream = {
      name,
      configEdn: text,
      isDefault: info?.isDefault ?? false,
      persist,
      canonical: this.canonicalOf(name),
    };
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
  }

  /** An API delete: an API stream goes from SQLite (and its file), and a file stream it shadowed comes back;
   *  a file stream stays gone until its file changes. */
  remove(name: string): void {
    const api = this.apiStreams.get(name);
    const directory = this.files.persistDirectory;
    if (api === undefined) this.refuseFileStream(name);
    if (api !== undefined) {
      this.repository.transaction(() => {
        this.repository.deleteStream(name);
        if (api.persist && directory !== undefined) removePersistFile(directory, name);
      });
      this.apiStreams.delete(name);
    }
    this.engine.remove(name);
    const shadowed = this.files.streams.get(name);
    if (api !== undefined && shadowed !== undefined && !this.files.isPersistFile(shadowed))
      this.runFileStream(shadowed);
  }

  rejectedFiles(changed: readonly FileStream[]): Map<string, string> {
    const rejected = new Map<string, string>();
    const scratch = new StreamEngine({ outputs: this.outputs, asyncQueues: this.asyncQueues });
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

  applyFileChanges({ changed, removed }: FileChanges): void {
    for (const stream of changed) this.applyFileStream(stream);
    for (const stream of removed) this.unapplyFileStream(stream);
  }

  private applyFileStream(stream: FileStream): void {
    const api = this.apiStreams.get(stream.name);
    if (api === undefined) {
      this.runFileStream(stream);
      return;
    }
    if (!api.persist || !this.files.isPersistFile(stream)) {
      this.logger.warn(
        { stream: stream.name, path: stream.path },
        `stream ${stream.name} of ${stream.path} is not run: an API stream has that name`,
      );
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
    this.logger.info(
      { stream: stream.name, path: stream.path },
      `persisted stream ${stream.name} updated from its file`,
    );
  }

  private unapplyFileStream(stream: FileStream): void {
    const api = this.apiStreams.get(stream.name);
    if (api === undefined) {
      if (this.engine.remove(stream.name))
        this.logger.info({ stream: stream.name, path: stream.path }, `stream ${stream.name} removed with its file`);
      return;
    }
    if (api.persist && this.files.isPersistFile(stream)) {
      this.repository.deleteStream(stream.name);
      this.apiStreams.delete(stream.name);
      this.engine.remove(stream.name);
      this.logger.info(
        { stream: stream.name, path: stream.path },
        `persisted stream ${stream.name} removed: its file was deleted`,
      );
    }
  }

  private runFileStream(stream: FileStream): void {
    try {
      const outcome = this.engine.add(stream.name, stream.config, { keepStateIfUnchanged: true });
      if (outcome === 'unchanged') return;
      this.logger.info(
        { stream: stream.name, path: stream.path },
        `stream ${stream.name} ${outcome} from ${stream.path}`,
      );
      for (const warning of this.engine.get(stream.name)?.warnings ?? []) {
        this.logger.warn(
          { stream: stream.name, path: stream.path },
          `${stream.path}: stream ${stream.name}: ${warning}`,
        );
      }
    } catch (error) {
      this.logger.error(
        { stream: stream.name, path: stream.path, err: error },
        `stream ${stream.name} of ${stream.path} not run: ${(error as Error).message}`,
      );
    }
  }

  /** A persisted API stream whose file is gone (deleted while stopped, or a new first directory) gets it back:
   *  the database holds what the API acknowledged. */
  private rewriteMissingPersistFiles(): void {
    const directory = this.files.persistDirectory;
    if (directory === undefined) return;
    for (const api of this.apiStreams.values()) {
      if (!api.persist) continue;
      try {
        if (!existsSync(persistFilePath(directory, api.name))) writePersistFile(directory, api.name, api.configEdn);
      } catch (error) {
        this.logger.error(
          { stream: api.name, err: error },
          `cannot write the file of persisted stream ${api.name}: ${(error as Error).message}`,
        );
      }
    }
  }

  /**
   * The API changes only its own streams: a stream of a stream file would come back when the file is read again
   * (docs/http-api.md, ownership). The file an API stream persists itself to stays the API's.
   */
  private refuseFileStream(name: string): void {
    const file = this.files.streams.get(name);
    if (file === undefined || (this.apiStreams.has(name) && this.files.isPersistFile(file))) return;
    throw new StreamError('owned', `stream ${name} comes from the file ${file.path}; change it there`);
  }

  /** Puts back what ran before a failed API write (its state is lost, but what runs matches what is stored). */
  private reinstate(name: string, previous: ApiStream | undefined): void {
    const file = this.files.streams.get(name);
    if (previous !== undefined) this.engine.add(name, previous.configEdn);
    else if (file !== undefined) this.runFileStream(file);
    else this.engine.remove(name);
  }

  private canonicalOf(name: string): string {
    const info = this.engine.get(name);
    return info === undefined ? '' : printEdn(info.config);
  }
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
