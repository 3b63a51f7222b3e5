/**
 * A WAL checkpoint whose page copy runs on the event loop and whose two fsyncs run on libuv's thread pool
 * (docs/performance.md, "Checkpoints").
 *
 * The worker thread of src/db/checkpointer.ts is a second V8 isolate, about 6 MB of a small deployment's RSS, for a
 * checkpoint every 30 s that copies a few hundred pages. What held the loop in a checkpoint was the two fsyncs
 * SQLite makes inside it, not the copy (3 µs a page on the bench machine). So for a small WAL the copy runs on the
 * main connection with `synchronous = OFF`, which makes SQLite skip both fsyncs, and the same fsyncs are made around
 * it, in the same order, from the thread pool:
 *
 * 1. A second connection (the pin) opens a read transaction. While it is open, a PASSIVE checkpoint copies no frame
 *    written after it began, and no writer restarts the WAL from its beginning (which overwrites frames).
 * 2. fsync of the -wal file: every frame the copy may take is on disk.
 * 3. The copy, on the main connection, without fsync.
 * 4. fsync of the database file: the copied pages are on disk.
 * 5. The pin's transaction ends, and a writer may restart the WAL again.
 *
 * A power loss before step 4 finds every copied page still in the WAL (1), and opening the database replays it.
 * If the database file's fsync fails, the pin stays open: the next round makes that fsync again before anything else.
 */
import { open } from 'node:fs/promises';
import Database from 'better-sqlite3';

/** Makes a file's written pages durable (fsync); tests pass their own to see the order or to fail one. */
export type SyncFile = (path: string) => Promise<void>;

async function fsyncFile(path: string): Promise<void> {
  // On Linux, fsync on any descriptor of a file syncs all of the file's dirty pages, whoever wrote them.
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export class LoopCheckpoint {
  private pin: Database.Database | null = null;
  /** The database file holds copied pages not known to be on disk: the pin's transaction stays open until they are. */
  private unsynced = false;

  constructor(
    private readonly main: Database.Database,
    private readonly file: string,
    private readonly sync: SyncFile = fsyncFile,
  ) {}

  /** One round; true when the whole WAL is copied. Throws what failed, once the WAL is safe to restart or still
   *  pinned. */
  async run(): Promise<boolean> {
    let complete = false;
    if (!this.unsynced) {
      const pin = this.pinConnection();
      pin.exec('BEGIN');
      try {
        // Reading the header starts the read transaction: its snapshot is the WAL as it is now.
        pin.pragma('schema_version');
        await this.sync(`${this.file}-wal`);
        if (!this.canCopy()) {
          this.endPin();
          return false;
        }
        complete = this.copy();
      } catch (error) {
        // Nothing was copied: the WAL may restart.
        this.endPin();
        throw error;
      }
      this.unsynced = true;
    }
    await this.sync(this.file);
    this.unsynced = false;
    this.endPin();
    return complete;
  }

  /** Ends the pin (its last copy synced first when it can be); the main connection's close checkpoints the rest. */
  async close(): Promise<void> {
    const pin = this.pin;
    if (pin === null) return;
    this.pin = null;
    try {
      if (this.unsynced) await this.sync(this.file);
      this.unsynced = false;
    } finally {
      if (pin.inTransaction) pin.exec('ROLLBACK');
      pin.close();
    }
  }

  private pinConnection(): Database.Database {
    // timeout 0: a lock held elsewhere (a recovery) fails the round at once rather than waiting on the loop.
    this.pin ??= new Database(this.file, { fileMustExist: true, timeout: 0 });
    return this.pin;
  }

  /** The main connection may have closed during the fsync, or be inside a transaction someone left open. */
  private canCopy(): boolean {
    return this.main.open && !this.main.inTransaction;
  }

  private copy(): boolean {
    const synchronous = this.main.pragma('synchronous', { simple: true }) as number;
    this.main.pragma('synchronous = OFF');
    try {
      const [result] = this.main.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
      return result !== undefined && result.log === result.checkpointed;
    } finally {
      this.main.pragma(`synchronous = ${synchronous}`);
    }
  }

  private endPin(): void {
    if (this.pin?.inTransaction === true) this.pin.exec('ROLLBACK');
  }
}
