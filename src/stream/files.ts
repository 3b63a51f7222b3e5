/**
 * Stream files on disk: reading the stream directories, writing and removing `:persist` files, and watching the
 * directories with chokidar. A stream file holds one EDN map `{:<stream-name> <config> ...}`; every regular file
 * is read whatever its extension (as Mirabelle does), except hidden files and editor backups (`~`), which also
 * keeps our own temporary files out.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import { type EdnValue, isEdnMap, isKeyword, parseEdn, printEdn } from './edn.ts';
import { STREAM_NAME } from './engine.ts';

export interface FileStream {
  name: string;
  /** The file that defines it. */
  path: string;
  /** The config map as read. */
  config: EdnValue;
  /** The config printed back as EDN: what GET returns, and what reloads compare. */
  text: string;
}

export interface FileProblem {
  path: string;
  problem: string;
}

export interface DirectoryScan {
  streams: Map<string, FileStream>;
  /** Files that could not be used; the streams they defined before are carried over unchanged. */
  problems: FileProblem[];
}

/**
 * Reads every stream file of the directories. For a name defined twice the first directory wins (then the
 * first file name in sort order). A file that cannot be read or parsed changes nothing: the streams `previous`
 * had from it are kept as they were.
 */
export function scanStreamDirectories(directories: readonly string[], previous: ReadonlyMap<string, FileStream>): DirectoryScan {
  const streams = new Map<string, FileStream>();
  const problems: FileProblem[] = [];
  const broken = new Set<string>();
  for (const directory of directories) {
    for (const path of listStreamFiles(directory)) {
      try {
        for (const stream of readStreamFile(path)) {
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

function listStreamFiles(directory: string): string[] {
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .filter(isStreamFileName)
    .sort()
    .map((name) => join(directory, name))
    .filter((path) => {
      try {
        return statSync(path).isFile();
      } catch {
        return false; // removed between the listing and the stat
      }
    });
}

function isStreamFileName(name: string): boolean {
  return !name.startsWith('.') && !name.endsWith('~');
}

/** Parses one stream file; throws an error whose message says what is wrong (the caller adds the path). */
export function readStreamFile(path: string): FileStream[] {
  const value = parseEdn(readFileSync(path, 'utf8'));
  if (!isEdnMap(value)) throw new Error('a stream file must hold one EDN map {:stream-name {:actions ...}}');
  const streams: FileStream[] = [];
  for (const [key, config] of value) {
    const name = isKeyword(key) ? key.name : typeof key === 'string' ? key : null;
    if (name === null) throw new Error(`stream names must be keywords, got ${printEdn(key)}`);
    if (!STREAM_NAME.test(name)) throw new Error(`invalid stream name ${JSON.stringify(name)}: use 1-255 characters of A-Z a-z 0-9 . _ -`);
    if (!isEdnMap(config)) throw new Error(`stream :${name}: the config must be a map with :actions`);
    streams.push({ name, path, config, text: printEdn(config) });
  }
  return streams;
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

/**
 * Watches the stream directories and calls `onChange` once per burst of file events (editors write a file in
 * several steps; a rescan per step would apply half-written states).
 */
export class StreamDirectoryWatcher {
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;

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
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.watcher?.close();
    this.watcher = null;
  }
}
