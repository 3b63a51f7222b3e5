/**
 * Stream files on disk: the one set of reading rules (used by `serve` and by `vigie test`), the `:persist`
 * files, and the sync of the stream directories (scan, diff with what was applied, watch).
 *
 * A stream file holds one EDN map `{:<stream-name> <config> ...}`; every regular file of a directory is read
 * whatever its extension (as Mirabelle does), except hidden files and editor backups (`~`), which also keeps
 * our own temporary files out. A name defined twice keeps its first definition (first path given, then file
 * name order).
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { FSWatcher } from 'chokidar';
import { type EdnValue, isEdnMap, isKeyword, parseEdn, printEdn } from '../lang/edn.ts';
import { STREAM_NAME } from '../engine/engine.ts';

export interface FileStream {
  name: string;
  /** The file that defines it. */
  path: string;
  /** The config map as read. */
  config: EdnValue;
  /** The config printed back as EDN: what GET returns, and what reloads compare. */
  text: string;
}

interface FileProblem {
  path: string;
  problem: string;
}

export interface DirectoryScan {
  streams: Map<string, FileStream>;
  /** Files that could not be used; the streams they defined before are carried over unchanged. */
  problems: FileProblem[];
}

/** A stream file that cannot be read or used; the message says what is wrong, `path` where. */
export class StreamFileError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

/** The stream files of these directories, by file name, with their text (a missing directory has none): what a
 *  cluster's nodes compare of their stream files (docs/cluster.md, "Config files"). */
export function streamFileTexts(directories: readonly string[]): [string, string][] {
  const texts: [string, string][] = [];
  for (const directory of directories) {
    let files: string[];
    try {
      files = streamFilesAt(directory);
    } catch {
      continue;
    }
    for (const file of files) {
      try {
        texts.push([basename(file), readFileSync(file, 'utf8')]);
      } catch {
        // Removed between the listing and the read.
      }
    }
  }
  return texts;
}

/** The files a path stands for: a directory's stream files in name order, a file itself. Throws ENOENT. */
export function streamFilesAt(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .filter(isStreamFileName)
    .sort()
    .map((name) => join(path, name))
    .filter((file) => {
      try {
        return statSync(file).isFile();
      } catch {
        return false; // removed between the listing and the stat
      }
    });
}

function isStreamFileName(name: string): boolean {
  return !name.startsWith('.') && !name.endsWith('~');
}

/** Parses one stream file; throws an error whose message says what is wrong (the caller adds the path). */
export function readStreamFile(path: string, maxEdnDepth?: number): FileStream[] {
  const value = parseEdn(readFileSync(path, 'utf8'), maxEdnDepth);
  if (!isEdnMap(value)) throw new Error('a stream file must hold one EDN map {:stream-name {:actions ...}}');
  const streams: FileStream[] = [];
  for (const [key, config] of value) {
    const name = isKeyword(key) ? key.name : typeof key === 'string' ? key : null;
    if (name === null) throw new Error(`stream names must be keywords, got ${printEdn(key)}`);
    if (!STREAM_NAME.test(name))
      throw new Error(`invalid stream name ${JSON.stringify(name)}: use 1-255 characters of A-Z a-z 0-9 . _ -`);
    if (!isEdnMap(config)) throw new Error(`stream :${name}: the config must be a map with :actions`);
    streams.push({ name, path, config, text: printEdn(config) });
  }
  return streams;
}

/**
 * Reads the streams of files and directories given on a command line (`vigie test --streams`), with the rules
 * of `serve`. Any problem is fatal there: throws a StreamFileError naming the file.
 */
export function readStreamPaths(paths: readonly string[]): Map<string, FileStream> {
  const streams = new Map<string, FileStream>();
  for (const path of paths) {
    let files: string[];
    try {
      files = streamFilesAt(path);
    } catch {
      throw new StreamFileError(path, 'no such file or directory');
    }
    for (const file of files) {
      let found: FileStream[];
      try {
        found = readStreamFile(file);
      } catch (error) {
        throw new StreamFileError(file, (error as Error).message);
      }
      for (const stream of found) if (!streams.has(stream.name)) streams.set(stream.name, stream);
    }
  }
  return streams;
}

/**
 * Reads every stream file of the directories (a missing directory holds none). A file that cannot be read or
 * parsed changes nothing: the streams `previous` had from it are kept as they were.
 */
export function scanStreamDirectories(
  directories: readonly string[],
  previous: ReadonlyMap<string, FileStream>,
  maxEdnDepth?: number,
): DirectoryScan {
  const streams = new Map<string, FileStream>();
  const problems: FileProblem[] = [];
  const broken = new Set<string>();
  for (const directory of directories) {
    for (const path of directoryFiles(directory)) {
      try {
        for (const stream of readStreamFile(path, maxEdnDepth)) {
          if (!streams.has(stream.name)) streams.set(stream.name, stream);
        }
      } catch (error) {
        problems.push({ path, problem: (error as Error).message });
        broken.add(path);
      }
    }
  }
  for (const stream of previous.values()) {
    if (broken.has(stream.path) && !streams.has(stream.name)) streams.set(stream.name, stream);
  }
  return { streams, problems };
}

function directoryFiles(directory: string): string[] {
  try {
    return streamFilesAt(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

export function persistFilePath(directory: string, name: string): string {
  return join(directory, `${name}.edn`);
}

/**
 * Writes `{:<name> <config text>}` atomically (temporary file + rename), so neither a crash nor the watcher
 * ever sees half a file. The newline before the closing brace keeps a trailing `;` comment from eating it.
 */
export function writePersistFile(directory: string, name: string, configText: string): string {
  mkdirSync(directory, { recursive: true });
  const path = persistFilePath(directory, name);
  const temporary = join(directory, `.${name}.edn.${process.pid}.tmp`);
  writeFileSync(temporary, `{:${name} ${configText}\n}\n`);
  renameSync(temporary, path);
  return path;
}

export function removePersistFile(directory: string, name: string): void {
  rmSync(persistFilePath(directory, name), { force: true });
}

/** What changed in the stream directories since the last sync, once the rejected files were set aside. */
export interface FileChanges {
  /** New streams, and streams whose config or file changed. */
  changed: FileStream[];
  removed: FileStream[];
}

export interface FileSyncTarget {
  /** Compiles the changed streams apart from the running ones: the files holding one that fails, and why. */
  rejectedFiles(changed: readonly FileStream[]): Map<string, string>;
  /** Applies what changed (the rejected files left out). */
  applyFileChanges(changes: FileChanges): void;
}

export interface FileSyncLogger {
  error(object: object, message: string): void;
}

/**
 * The sync of the stream directories: `sync()` reads them and hands the difference with the file streams last
 * applied to the target. A file that does not parse, or holds a stream that does not compile, is logged with
 * its path and changes nothing. `watch()` calls `sync()` on every change of the directories. The first
 * directory also holds the files of API streams added with `:persist true`.
 */
export class StreamFileSync {
  /** The file streams as last applied (a rejected file keeps its previous streams here). */
  private applied = new Map<string, FileStream>();
  private watcher: StreamDirectoryWatcher | null = null;

  constructor(
    private directories: readonly string[],
    private readonly target: FileSyncTarget,
    private readonly logger: FileSyncLogger,
    /** The owner's `streams.max-edn-depth`, read at each scan (it may change at reload). */
    private readonly nesting?: { readonly ednDepth: number },
  ) {}

  get streams(): ReadonlyMap<string, FileStream> {
    return this.applied;
  }

  /** Where `:persist` files go; undefined when no directory is configured. */
  get persistDirectory(): string | undefined {
    return this.directories[0];
  }

  isPersistFile(stream: FileStream): boolean {
    const directory = this.persistDirectory;
    return directory !== undefined && stream.path === persistFilePath(directory, stream.name);
  }

  /** New directories (SIGHUP): watched from now on when they differ; the caller syncs. */
  async setDirectories(directories: readonly string[]): Promise<void> {
    const changed = directories.join('\n') !== this.directories.join('\n');
    this.directories = directories;
    if (changed && this.watcher !== null) await this.watch();
  }

  sync(): void {
    const scan = scanStreamDirectories(this.directories, this.applied, this.nesting?.ednDepth);
    for (const { path, problem } of scan.problems) this.logRejected(path, problem);
    const previous = this.applied;
    const changed = [...scan.streams.values()].filter((stream) => {
      const before = previous.get(stream.name);
      return before === undefined || before.text !== stream.text || before.path !== stream.path;
    });
    const removed = [...previous.values()].filter((stream) => !scan.streams.has(stream.name));
    const rejected = changed.length === 0 ? new Map<string, string>() : this.target.rejectedFiles(changed);
    const next = new Map(scan.streams);
    for (const stream of changed) {
      if (!rejected.has(stream.path)) continue;
      const before = previous.get(stream.name);
      if (before === undefined) next.delete(stream.name);
      else next.set(stream.name, before);
    }
    for (const stream of removed) if (rejected.has(stream.path)) next.set(stream.name, stream);
    for (const [path, problem] of rejected) this.logRejected(path, problem);
    this.applied = next;
    this.target.applyFileChanges({
      changed: changed.filter((stream) => !rejected.has(stream.path)),
      removed: removed.filter((stream) => !rejected.has(stream.path)),
    });
  }

  /** (Re)starts watching the directories, then syncs: files changed before the watcher was ready count too. */
  async watch(): Promise<void> {
    await this.watcher?.close();
    const watcher = new StreamDirectoryWatcher(
      this.directories,
      () => this.sync(),
      (error) => this.logger.error({ err: error }, `watching the stream directories failed: ${error.message}`),
    );
    this.watcher = watcher;
    await watcher.start();
    this.sync();
  }

  async close(): Promise<void> {
    await this.watcher?.close();
    this.watcher = null;
  }

  private logRejected(path: string, problem: string): void {
    this.logger.error({ path, problem }, `stream file ${path} ignored, its streams are left as they were: ${problem}`);
  }
}

/**
 * Watches the stream directories and calls `onChange` once per burst of file events (editors write a file in
 * several steps; a rescan per step would apply half-written states).
 */
class StreamDirectoryWatcher {
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Closed while `start` imported the watcher: it must not start one after. */
  private closed = false;

  constructor(
    private readonly directories: readonly string[],
    private readonly onChange: () => void,
    private readonly onError: (error: Error) => void,
    private readonly settleMs = 50,
  ) {}

  async start(): Promise<void> {
    if (this.directories.length === 0) return;
    // A directory that does not exist yet cannot be watched; creating it lets files dropped there later count.
    for (const directory of this.directories) mkdirSync(directory, { recursive: true });
    // Imported here: a service without stream directories, most of them, never holds the watcher's code.
    const { watch } = await import('chokidar');
    if (this.closed) return;
    const watcher = watch([...this.directories], {
      ignoreInitial: true,
      depth: 0,
      ignored: (path: string) => {
        const base = path.slice(path.lastIndexOf('/') + 1);
        return !this.directories.includes(path) && !isStreamFileName(base);
      },
    });
    this.watcher = watcher;
    const schedule = () => {
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.timer = null;
        this.onChange();
      }, this.settleMs);
    };
    watcher.on('add', schedule).on('change', schedule).on('unlink', schedule);
    watcher.on('error', (error) => this.onError(error as Error));
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.watcher?.close();
    this.watcher = null;
  }
}
