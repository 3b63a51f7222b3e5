/**
 * WAL checkpoints off the event loop (docs/hardening.md, docs/performance.md "Checkpoints"). SQLite's automatic
 * checkpoint runs inside the COMMIT that crosses 1,000 WAL pages, on the thread that commits: with
 * better-sqlite3 that is the event loop, and copying the pages into the database and syncing both files held
 * the loop 30-50 ms (300 ms once the WAL had grown). While the main connection's automatic checkpoints are off,
 * PASSIVE checkpoints (they never wait for or block the writer) run each time `request()` is called and none is
 * under way. A trickle (a WAL under 1,000 pages, slow writes) is copied on the loop with its fsyncs on the thread
 * pool (src/db/loop-checkpoint.ts), since a worker thread is 6 MB of a small deployment's RSS. A flood (a larger WAL,
 * fast writes (src/db/write-rate.ts), a bulk writer's slices) is copied by a worker thread with its own connection,
 * kept for WORKER_KEPT_MS after the last flood.
 *
 * Two ways to turn them off:
 * - `background(ms)`, for the running service: for good, with a checkpoint asked for every `ms` if the
 *   connection changed rows since the last one (12,000 checks write 300 to 1,000 pages a second: at SQLite's
 *   own rhythm a COMMIT checkpointed every few seconds and the runs due meanwhile started late);
 * - `hold()` and `release()`, around bulk writes (the index snapshots): after `release()` the main connection
 *   gets its automatic checkpoints back only once the worker has copied the whole WAL, so that no COMMIT
 *   inherits a large checkpoint. Under `background()` they only ask for checkpoints.
 *
 * The first `hold()` also raises the main connection's page cache to at least `BULK_CACHE_KIB`, for good (the
 * next round touches the same pages; SQLite allocates the cache as pages are used): with a 2 MB cache,
 * upserts spread over a 500,000-row index read most of their pages back from the files, and a full snapshot
 * took 15 s with slices of 100-600 ms, against 5.6 s with few over 50 ms (better-sqlite3's default is 16 MB).
 *
 * There is one checkpointer per connection (`walCheckpointer(db)`): the automatic checkpoint is the
 * connection's setting, and one worker is enough for any number of writers.
 */
import { createRequire } from 'node:module';
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Db } from './client.ts';
import { LoopCheckpoint, type SyncFile } from './loop-checkpoint.ts';
import { WriteRate } from './write-rate.ts';
import { type BeatTimer, onBeat, SLOW_BEAT_MS } from '../common/beat.ts';

/** The main connection's page cache from the first `hold()` on (KiB). */
const BULK_CACHE_KIB = 65_536;

/** The WAL size from which a checkpoint is the worker's: SQLite's own checkpoint size (1,000 pages of 4 KiB). A
 *  smaller WAL is copied on the loop (src/db/loop-checkpoint.ts), 3.5 ms at most on the bench machine. */
const WAL_CHECKPOINT_BYTES = 1_000 * 4096;
/** The WAL size at which the background mode asks for a checkpoint before WAL_MAX_AGE_MS: half the worker's, so
 *  that a WAL growing by a few hundred KB a second (1,200 checks) is copied on the loop and never reaches the
 *  worker's size (it did, and kept the worker for good: bench/JOURNAL.md, "A small deployment's checkpoints"). */
const WAL_ASK_BYTES = 512 * 4096;
/** Times a round on the loop that could not copy the whole WAL is run again at once, before the next look. */
const LOOP_RETRIES = 3;
/** How long the worker is kept after the last flood: starting one costs 28 ms of CPU, keeping one 6 MB of RSS. */
const WORKER_KEPT_MS = 5 * 60_000;
/** The longest changes wait in the WAL in the background mode before a checkpoint is asked for anyway. */
const WAL_MAX_AGE_MS = 30_000;

/** The WAL file's size (0 when it cannot be read: then only the age asks for checkpoints). */
function walBytes(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** How much longer than its interval the look for changes may wait while nothing changes (background). */
const IDLE_BACKOFF = 8;

/** Checkpoints asked for after `release()` before automatic checkpoints come back regardless. */
const RELEASE_ATTEMPTS = 20;

/** Runs in the worker, as CommonJS (an `eval` worker needs no file beside the bundle). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
// A checkpoint copies WAL frames to the database file; it needs no page cache of its own.
db.pragma('cache_size = -512');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ complete: result.log === result.checkpointed });
  } catch (error) {
    parentPort.postMessage({ complete: false, error: error.message });
  }
});
`;

/** The checkpointer of each open connection. */
const byConnection = new WeakMap<object, WalCheckpointer>();

/** The connection's checkpointer; `onError` hears of failed checkpoints (a message each). */
export function walCheckpointer(db: Db, onError: (message: string) => void): WalCheckpointer {
  let checkpointer = byConnection.get(db.$client);
  if (checkpointer === undefined) {
    checkpointer = new WalCheckpointer(db);
    byConnection.set(db.$client, checkpointer);
  }
  checkpointer.onError(onError);
  return checkpointer;
}

export class WalCheckpointer {
  /** Checkpoints done each way, for tests and docs/performance.md's figures. */
  readonly rounds = { loop: 0, worker: 0 };
  private worker: Worker | null = null;
  private loop: LoopCheckpoint | null = null;
  private loopRound: Promise<void> | null = null;
  private inFlight = false;
  private held = false;
  /** Under `background()`: the automatic checkpoints stay off until `close()`. */
  private permanent = false;
  private timer: BeatTimer | null = null;
  /** `total_changes()` when the last periodic checkpoint was asked for. */
  private changesAtRequest = -1;
  /** Checkpoints left to ask for before the main connection checkpoints again; 0 when not releasing. */
  private releasing = 0;
  private autocheckpoint = 1000;
  private cacheRaised = false;
  /** When a checkpoint last needed the worker (performance.now()). */
  private floodAtMs = Number.NEGATIVE_INFINITY;
  /** Rounds on the loop run again at once since the last one that copied the whole WAL. */
  private loopRetries = 0;
  /** After `close()` nothing is started again: the connection is about to close. */
  private closed = false;
  private readonly file: string;
  private readonly errorListeners: ((message: string) => void)[] = [];
  private readonly workerKeptMs: number;
  /** How fast the connection writes, sampled at each look of the background mode. */
  private readonly writeRate: WriteRate;
  private readonly sync: SyncFile | undefined;

  /** @internal Use `walCheckpointer(db)`: one per connection. The options are for tests. */
  constructor(
    private readonly db: Db,
    options: { workerKeptMs?: number; floodChangesPerSecond?: number; sync?: SyncFile } = {},
  ) {
    // An in-memory database has no WAL to checkpoint.
    this.file = db.$client.memory ? '' : db.$client.name;
    this.workerKeptMs = options.workerKeptMs ?? WORKER_KEPT_MS;
    this.writeRate = new WriteRate(options.floodChangesPerSecond);
    this.sync = options.sync;
  }

  /** @internal */
  onError(listener: (message: string) => void): void {
    if (!this.errorListeners.includes(listener)) this.errorListeners.push(listener);
  }

  /**
   * Turns the main connection's automatic checkpoints off until `close()`, and every `intervalMs` looks whether
   * rows changed since it last asked for a checkpoint: it asks again once the WAL holds WAL_ASK_BYTES, or once the
   * changes are WAL_MAX_AGE_MS old, so that a small deployment's trickle of results is not copied into the database
   * file (and synced) every second. While nothing changes the look backs off up to IDLE_BACKOFF times `intervalMs`,
   * onto the slow grid of the service's other idle work, which wakes it (docs/performance.md, "An idle service").
   */
  background(intervalMs: number): void {
    if (this.file === '' || this.permanent) return;
    this.permanent = true;
    this.stopAutocheckpoints();
    // The WAL's size must tell how much waits in it. A writer restarts the WAL from its beginning once a
    // checkpoint has copied all of it, but the file keeps the size it reached: past WAL_CHECKPOINT_BYTES once,
    // every look with a change asked for a checkpoint (a small deployment checkpointed and synced every 4 s, not
    // every 30 s). With this limit the restart truncates the file, so its size is what was written since.
    this.db.$client.pragma('journal_size_limit = 0');
    const changes = this.db.$client.prepare('select total_changes()').pluck();
    const wal = `${this.file}-wal`;
    this.changesAtRequest = changes.get() as number;
    this.writeRate.sample(this.changesAtRequest);
    let requestedAtMs = performance.now();
    let delayMs = intervalMs;
    const arm = () => (this.timer = onBeat(delayMs, look, delayMs >= SLOW_BEAT_MS ? SLOW_BEAT_MS : intervalMs));
    const look = () => {
      const now = changes.get() as number;
      const flood = this.writeRate.sample(now);
      if (now === this.changesAtRequest) delayMs = Math.min(delayMs * 2, intervalMs * IDLE_BACKOFF);
      else {
        delayMs = intervalMs;
        // While the worker is kept, at its size as before: asking at half of it only doubles a flood's fsyncs.
        const askBytes = performance.now() - this.floodAtMs < this.workerKeptMs ? WAL_CHECKPOINT_BYTES : WAL_ASK_BYTES;
        if (walBytes(wal) >= askBytes || performance.now() - requestedAtMs >= WAL_MAX_AGE_MS) {
          this.changesAtRequest = now;
          requestedAtMs = performance.now();
          this.request(flood);
        }
      }
      arm();
    };
    arm();
  }

  /** Stops the main connection's automatic checkpoints until `release()`, and raises its page cache. */
  hold(): void {
    this.releasing = 0;
    if (this.file === '') return;
    // Bulk writes ask for a checkpoint after each slice: copies on the loop would add to the slices' time.
    this.floodAtMs = performance.now();
    if (!this.cacheRaised) {
      // A negative cache_size is in KiB, a positive one in pages (4 KiB by default): compare in KiB.
      const current = this.db.$client.pragma('cache_size', { simple: true }) as number;
      if ((current < 0 ? -current : current * 4) < BULK_CACHE_KIB)
        this.db.$client.pragma(`cache_size = -${BULK_CACHE_KIB}`);
      this.cacheRaised = true;
    }
    this.stopAutocheckpoints();
  }

  private stopAutocheckpoints(): void {
    if (this.held) return;
    this.autocheckpoint = this.db.$client.pragma('wal_autocheckpoint', { simple: true }) as number;
    this.db.$client.pragma('wal_autocheckpoint = 0');
    this.held = true;
  }

  /** Asks for a checkpoint unless one is under way: by the worker in a flood (`flood`, or a WAL of
   *  WAL_CHECKPOINT_BYTES) and for WORKER_KEPT_MS after, on the loop otherwise. */
  request(flood = false): void {
    if (this.file === '' || this.inFlight || this.closed) return;
    this.inFlight = true;
    const now = performance.now();
    if (flood || walBytes(`${this.file}-wal`) >= WAL_CHECKPOINT_BYTES) this.floodAtMs = now;
    if (now - this.floodAtMs < this.workerKeptMs) {
      this.start().postMessage('checkpoint');
      return;
    }
    this.stopWorker();
    this.checkpointOnLoop();
  }

  private checkpointOnLoop(): void {
    this.loop ??= new LoopCheckpoint(this.db.$client, this.file, this.sync);
    this.loopRound = this.loop.run().then(
      (complete) => {
        this.inFlight = false;
        this.rounds.loop++;
        this.checkpointed(complete);
        // Frames written during the round's first fsync stay in the WAL, and the next write appends after them
        // instead of starting the WAL again: the WAL grew until the worker took it (the looks and the result
        // writes, both on the service's beat, can fall in step). Run again while no write is likely under way.
        if (complete) this.loopRetries = 0;
        else if (this.permanent && this.loopRetries < LOOP_RETRIES) {
          this.loopRetries++;
          this.request();
        }
      },
      (error: Error) => {
        this.inFlight = false;
        this.reportError(error.message);
        this.checkpointed(false);
      },
    );
  }

  /**
   * Gives automatic checkpoints back to the main connection once the worker has checkpointed the whole WAL
   * (under `background()`, only asks for a checkpoint).
   */
  release(): void {
    if (this.permanent) {
      this.request();
      return;
    }
    if (!this.held || this.releasing > 0) return;
    this.releasing = RELEASE_ATTEMPTS;
    if (!this.inFlight) this.request();
  }

  private checkpointed(complete: boolean): void {
    if (this.releasing === 0) return;
    this.releasing--;
    if (complete || this.releasing === 0 || this.worker === null) this.restore();
    else this.request();
  }

  private restore(): void {
    this.releasing = 0;
    if (!this.held || this.permanent) return;
    this.held = false;
    // A worker's answer can arrive after the database was closed by someone who did not await `close()`.
    if (this.db.$client.open) this.db.$client.pragma(`wal_autocheckpoint = ${this.autocheckpoint}`);
  }

  /** Ends the loop's round and pin and the worker's connection (before the main one closes, so that its last
   *  checkpoint can truncate). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopBackground();
    await this.loopRound;
    this.restore();
    try {
      await this.loop?.close();
    } catch (error) {
      this.reportError((error as Error).message);
    }
    this.loop = null;
    const worker = this.worker;
    this.worker = null;
    if (worker === null) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    // An unref'd worker does not keep the loop alive: at shutdown, with the server closed, the process would
    // exit while waiting here, before the database is closed.
    worker.ref();
    worker.postMessage('close');
    await exited;
  }

  /** Lets the worker close its connection and end, between checkpoints (none is under way when it is called). */
  private stopWorker(): void {
    const worker = this.worker;
    if (worker === null) return;
    this.worker = null;
    worker.postMessage('close');
  }

  private start(): Worker {
    if (this.worker !== null) return this.worker;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, file: this.file } });
    worker.on('message', (outcome: { complete: boolean; error?: string }) => {
      this.inFlight = false;
      this.rounds.worker++;
      if (outcome.error !== undefined) this.reportError(outcome.error);
      this.checkpointed(outcome.complete);
    });
    worker.on('error', (error) => {
      this.reportError(error.message);
      // A worker stopped by stopWorker() had no checkpoint under way: the error is all there is to tell.
      if (this.worker !== worker) return;
      this.inFlight = false;
      this.worker = null;
      // Without a worker, the main connection checkpoints again.
      this.stopBackground();
      this.restore();
    });
    // Never what keeps the process alive.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private stopBackground(): void {
    this.timer?.cancel();
    this.timer = null;
    this.permanent = false;
  }

  private reportError(message: string): void {
    for (const listener of this.errorListeners) listener(message);
  }
}
