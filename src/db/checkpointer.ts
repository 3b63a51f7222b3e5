/**
 * WAL checkpoints off the event loop, for bulk writers (the index snapshots, docs/hardening.md). SQLite's
 * automatic checkpoint runs inside the COMMIT that crosses 1,000 WAL pages, on the thread that commits: with
 * better-sqlite3 that is the event loop, and copying the pages into the database and syncing it held the loop
 * 30-50 ms every few slices of a snapshot (300 ms once the WAL had grown). While `hold()` is in effect the
 * main connection does not checkpoint; a worker thread with its own connection runs PASSIVE checkpoints
 * (they never wait for or block the writer) each time `request()` is called and none is under way. After
 * `release()` the main connection gets its automatic checkpoints back only once the worker has copied the
 * whole WAL, so that no COMMIT inherits a large checkpoint.
 *
 * The first `hold()` also raises the main connection's page cache to at least `BULK_CACHE_KIB`, for good (the
 * next round touches the same pages; SQLite allocates the cache as pages are used): with the default 2 MB,
 * upserts spread over a 500,000-row index read most of their pages back from the files, and a full snapshot
 * took 15 s with slices of 100-600 ms, against 5.6 s with few over 50 ms.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from './client.ts';

/** The main connection's page cache from the first `hold()` on (KiB). */
const BULK_CACHE_KIB = 65_536;

/** Checkpoints asked for after `release()` before automatic checkpoints come back regardless. */
const RELEASE_ATTEMPTS = 20;

/** Runs in the worker, as CommonJS (an `eval` worker needs no file beside the bundle). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
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

export class WalCheckpointer {
  private worker: Worker | null = null;
  private inFlight = false;
  private held = false;
  /** Checkpoints left to ask for before the main connection checkpoints again; 0 when not releasing. */
  private releasing = 0;
  private autocheckpoint = 1000;
  private cacheRaised = false;
  private readonly file: string;

  constructor(
    private readonly db: Db,
    private readonly onError: (message: string) => void,
  ) {
    // An in-memory database has no WAL to checkpoint.
    this.file = db.$client.memory ? '' : db.$client.name;
  }

  /** Stops the main connection's automatic checkpoints until `release()`. */
  hold(): void {
    this.releasing = 0;
    if (this.held || this.file === '') return;
    this.autocheckpoint = this.db.$client.pragma('wal_autocheckpoint', { simple: true }) as number;
    this.db.$client.pragma('wal_autocheckpoint = 0');
    if (!this.cacheRaised) {
      // A negative cache_size is in KiB, a positive one in pages (4 KiB by default): compare in KiB.
      const current = this.db.$client.pragma('cache_size', { simple: true }) as number;
      if ((current < 0 ? -current : current * 4) < BULK_CACHE_KIB) this.db.$client.pragma(`cache_size = -${BULK_CACHE_KIB}`);
      this.cacheRaised = true;
    }
    this.held = true;
  }

  /** Asks the worker for a checkpoint unless one is under way. */
  request(): void {
    if (this.file === '' || this.inFlight) return;
    this.inFlight = true;
    this.start().postMessage('checkpoint');
  }

  /** Gives automatic checkpoints back to the main connection once the worker has checkpointed the whole WAL. */
  release(): void {
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
    if (!this.held) return;
    this.held = false;
    // A worker's answer can arrive after the database was closed by someone who did not await `close()`.
    if (this.db.$client.open) this.db.$client.pragma(`wal_autocheckpoint = ${this.autocheckpoint}`);
  }

  /** Closes the worker's connection (before the main one closes, so that its last checkpoint can truncate). */
  async close(): Promise<void> {
    this.restore();
    const worker = this.worker;
    this.worker = null;
    if (worker === null) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage('close');
    await exited;
  }

  private start(): Worker {
    if (this.worker !== null) return this.worker;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, file: this.file } });
    worker.on('message', (outcome: { complete: boolean; error?: string }) => {
      this.inFlight = false;
      if (outcome.error !== undefined) this.onError(outcome.error);
      this.checkpointed(outcome.complete);
    });
    worker.on('error', (error) => {
      this.inFlight = false;
      this.worker = null;
      this.onError(error.message);
      this.restore();
    });
    // Never what keeps the process alive.
    worker.unref();
    this.worker = worker;
    return worker;
  }
}
