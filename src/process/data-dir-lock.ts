/**
 * One process per data directory (docs/durability.md "One process per data directory"): two servers on one
 * directory would write the same journal segment and the same database, and lose acknowledged events.
 *
 * `<data-dir>/lock` is created exclusively (`wx`) and holds who made it: PID, host, boot id, PID namespace and the
 * process's start time (Linux `/proc`). A lock found there is judged:
 * - its holder is visible (same boot, same PID namespace): it is alive when a process of that PID started at that
 *   time still runs. A dead PID, or a PID given since to another process, leaves a stale lock, taken over at once;
 * - otherwise (another host, another container, no `/proc`, an unreadable lock): the holder refreshes the lock's
 *   modification time every HEARTBEAT_MS, so the lock is watched for QUIET_MS: refreshed means alive, quiet
 *   means stale.
 * A stale lock is removed under a short-lived guard file (`lock.takeover`, also created exclusively) and only if
 * it is still the very file that was judged, so that of two processes starting at once exactly one gets it.
 */
import {
  closeSync,
  ftruncateSync,
  openSync,
  readFileSync,
  readlinkSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { everyBeat, SLOW_BEAT_MS } from '../common/beat.ts';

/** How often the holder refreshes its lock's modification time: more than twice within QUIET_MS, on the slow grid
 *  of the service's idle work, so that an idle service wakes for it and them once (docs/performance.md, "An idle
 *  service"). */
const HEARTBEAT_MS = SLOW_BEAT_MS;
/** How long a lock whose holder cannot be checked must stay unrefreshed before it is taken over. */
const QUIET_MS = 25_000;
/** A takeover guard seen unchanged for longer than this was left by a process killed in the middle of its takeover. */
const GUARD_STALE_MS = 5_000;
const RETRY_MS = 100;

/** Another process holds the data directory. */
export class DataDirLockedError extends Error {}

export interface DataDirLock {
  readonly file: string;
  /** Removes the lock if it is still this process's. */
  release(): void;
}

interface Holder {
  pid?: unknown;
  host?: unknown;
  boot?: unknown;
  pidNamespace?: unknown;
  start?: unknown;
  since?: unknown;
}

/** What a lock file was when it was read: its text and inode, to tell whether it is still the same file. */
interface Seen {
  text: string;
  ino: number;
  mtimeMs: number;
}

const readOr = <T>(read: () => T, fallback: T): T => {
  try {
    return read();
  } catch {
    return fallback;
  }
};

/** The start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), or null. */
function startTimeOf(pid: number): number | null {
  return readOr(() => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[19]);
    return Number.isFinite(start) ? start : null;
  }, null);
}

function ownIdentity(): Holder {
  return {
    pid: process.pid,
    host: hostname(),
    boot: readOr(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(), null),
    pidNamespace: readOr(() => readlinkSync('/proc/self/ns/pid'), null),
    start: startTimeOf(process.pid),
    since: new Date().toISOString(),
  };
}

/** The lock as it is now; null when there is none (any other failure to read it is thrown). */
function read(file: string): Seen | null {
  try {
    const text = readFileSync(file, 'utf8');
    const { ino, mtimeMs } = statSync(file);
    return { text, ino, mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function parse(text: string): Holder {
  return readOr(() => {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Holder) : {};
  }, {});
}

const same = (a: Seen | null, b: Seen | null) => a !== null && b !== null && a.ino === b.ino && a.text === b.text;
const describe = (holder: Holder) =>
  `PID ${typeof holder.pid === 'number' ? holder.pid : '?'}${typeof holder.host === 'string' ? ` on ${holder.host}` : ''}` +
  `${typeof holder.since === 'string' ? `, since ${holder.since}` : ''}`;

/** Errors of a write that found no room: the file exists, its holder could not be written into it. */
const NO_ROOM = new Set(['ENOSPC', 'EDQUOT']);

/**
 * Creates `file` exclusively and writes `text` into it; null when it exists already. Returns what the file holds:
 * `text`, or '' on a full disk. An empty lock is still this process's (it created it), and is judged by others
 * through its refresh, as a holder that cannot be checked: a full disk must not keep a restart from reading its
 * journal (docs/durability.md "One process per data directory").
 */
function createExclusive(file: string, text: string, warn: (message: string) => void): string | null {
  let fd: number;
  try {
    fd = openSync(file, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw error;
  }
  try {
    writeSync(fd, text);
    return text;
  } catch (error) {
    if (!NO_ROOM.has((error as NodeJS.ErrnoException).code ?? '')) {
      readOr(() => unlinkSync(file), undefined);
      throw error;
    }
    ftruncateSync(fd, 0);
    warn(
      `${file} is held without naming its holder: ${(error as Error).message}; other processes judge it by its refresh`,
    );
    return '';
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether the process that wrote the lock runs: a lock refreshed or replaced while it is watched has a live
 * holder; `gone` when it was removed meanwhile (its holder stopped).
 */
async function judge(file: string, seen: Seen, me: Holder): Promise<'alive' | 'stale' | 'gone'> {
  const holder = parse(seen.text);
  const visible =
    me.boot !== null && me.pidNamespace !== null && holder.boot === me.boot && holder.pidNamespace === me.pidNamespace;
  if (visible && typeof holder.pid === 'number' && typeof holder.start === 'number') {
    return startTimeOf(holder.pid) === holder.start ? 'alive' : 'stale';
  }
  const deadline = performance.now() + QUIET_MS;
  while (performance.now() < deadline) {
    await sleep(RETRY_MS * 5);
    const now = read(file);
    if (now === null) return 'gone';
    if (!same(now, seen) || now.mtimeMs !== seen.mtimeMs) return 'alive';
  }
  return 'stale';
}

/**
 * Takes `<dataDir>/lock`, waiting at most QUIET_MS for a lock whose holder cannot be checked; throws
 * DataDirLockedError naming the lock file and the holder's PID when another process holds it.
 */
export async function lockDataDir(dataDir: string, warn: (message: string) => void): Promise<DataDirLock> {
  const file = join(dataDir, 'lock');
  try {
    return await takeLock(dataDir, file, warn);
  } catch (error) {
    if (error instanceof DataDirLockedError) throw error;
    // A lock path that cannot be created or read (a directory in its place, no permission): named, not a stack.
    throw new DataDirLockedError(
      `cannot use ${file}: ${(error as Error).message}. It must be a file this process can create, read and remove ` +
        '(docs/durability.md "One process per data directory")',
    );
  }
}

async function takeLock(dataDir: string, file: string, warn: (message: string) => void): Promise<DataDirLock> {
  const guard = `${file}.takeover`;
  const me = ownIdentity();
  const text = `${JSON.stringify(me)}\n`;
  // A guard seen unchanged for GUARD_STALE_MS was left by a process killed in its takeover.
  let guardSeen: { seen: Seen; since: number } | null = null;
  for (;;) {
    const written = createExclusive(file, text, warn);
    if (written !== null) return holding(file, written, warn);
    const seen = read(file);
    if (seen === null) continue; // removed meanwhile: try again
    const holder = parse(seen.text);
    const verdict = await judge(file, seen, me);
    if (verdict === 'gone') continue;
    if (verdict === 'alive') {
      const latest = parse(read(file)?.text ?? seen.text);
      throw new DataDirLockedError(
        `the data directory ${dataDir} is in use: ${file} is held by ${describe(latest)}. ` +
          'Stop that process, or give this one another data-dir (docs/durability.md "One process per data directory")',
      );
    }
    if (createExclusive(guard, text, warn) === null) {
      const current = read(guard);
      if (guardSeen === null || !same(current, guardSeen.seen))
        guardSeen = current && { seen: current, since: performance.now() };
      else if (performance.now() - guardSeen.since > GUARD_STALE_MS) {
        readOr(() => unlinkSync(guard), undefined);
        guardSeen = null;
      }
      await sleep(RETRY_MS);
      continue;
    }
    guardSeen = null;
    try {
      // Only the very file judged stale is removed: another process may have taken it over and made its own.
      if (same(read(file), seen)) {
        readOr(() => unlinkSync(file), undefined);
        warn(`took over ${file}, left by ${describe(holder)}, which no longer runs`);
      }
    } finally {
      readOr(() => unlinkSync(guard), undefined);
    }
  }
}

function holding(file: string, text: string, warn: (message: string) => void): DataDirLock {
  let failing = false;
  const heartbeat = everyBeat(HEARTBEAT_MS, () => {
    const now = new Date();
    // One metadata write, done here rather than in libuv's thread pool, whose answer would wake the loop a second
    // time (docs/performance.md, "An idle service"); SQLite writes on the same disk synchronously anyway.
    try {
      utimesSync(file, now, now);
      failing = false;
    } catch (error) {
      // Once per streak of failures: a holder elsewhere that cannot see this process relies on the refresh.
      if (!failing) warn(`cannot refresh ${file}: ${(error as Error).message}`);
      failing = true;
    }
  });
  return {
    file,
    release() {
      heartbeat.cancel();
      if (read(file)?.text === text) readOr(() => unlinkSync(file), undefined);
    },
  };
}
