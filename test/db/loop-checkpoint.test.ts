import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Db, openDatabase } from '../../src/db/client.ts';
import { LoopCheckpoint, type SyncFile } from '../../src/db/loop-checkpoint.ts';
import { waitFor } from '../helpers/wait.ts';
import { canMountTmpfs, fillDisk, tmpfsDataDir, unmountAll } from '../helpers/tmpfs.ts';

const open: { db: Db; dir: string; loop: LoopCheckpoint }[] = [];
afterEach(async () => {
  for (const { db, dir, loop } of open.splice(0)) {
    await loop.close().catch(() => {});
    if (db.$client.open) closeDatabase(db);
    // A tmpfs data directory is a mount point: unmountAll() removes it after the tests.
    if (!mounted(dir)) rmSync(dir, { recursive: true, force: true });
  }
});

const mountPoints = new Set<string>();
const mounted = (dir: string) => mountPoints.has(dir);
function tmpfsDir(size: string): string {
  const dir = tmpfsDataDir(size);
  mountPoints.add(dir);
  return dir;
}

/** A sync that records each call with the database file's size at that moment, and waits while `gate` is set. */
function recordingSync(file: string) {
  const calls: { path: string; dbBytes: number }[] = [];
  const state: { gate: Promise<void> | null; fail: Error | null } = { gate: null, fail: null };
  const sync: SyncFile = async (path) => {
    calls.push({ path, dbBytes: statSync(file).size });
    if (state.gate !== null) await state.gate;
    if (state.fail !== null && path === file) throw state.fail;
  };
  return { sync, calls, state };
}

afterAll(() => {
  unmountAll();
  for (const dir of mountPoints) rmSync(dir, { recursive: true, force: true });
});

function setup(dir = mkdtempSync(join(tmpdir(), 'vigie-loop-checkpoint-'))) {
  const file = join(dir, 'vigie.db');
  const db = openDatabase(file);
  db.$client.pragma('wal_autocheckpoint = 0');
  // As in the service (src/db/checkpointer.ts): a restart truncates the -wal file, so its size counts the frames
  // written since.
  db.$client.pragma('journal_size_limit = 0');
  db.$client.exec('create table t (id integer primary key, payload blob)');
  const insert = db.$client.prepare('insert into t (payload) values (?)');
  const write = db.$client.transaction((rows: number) => {
    for (let i = 0; i < rows; i++) insert.run(Buffer.alloc(4000, i % 256));
  });
  const recorder = recordingSync(file);
  const loop = new LoopCheckpoint(db.$client, file, recorder.sync);
  open.push({ db, dir, loop });
  /** Frames in the -wal file: a 32-byte header, then 24 bytes of frame header and a 4 KiB page each. */
  const walFrames = () => (statSync(`${file}-wal`).size - 32) / (24 + 4096);
  /** The frames and how many are copied, from a PASSIVE checkpoint on the main connection: only while the round's
   *  pin is open, when it can copy nothing the round did not. */
  const checkpointWhilePinned = () =>
    (db.$client.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[])[0]!;
  return { db, file, write, loop, walFrames, checkpointWhilePinned, ...recorder };
}

describe('LoopCheckpoint', () => {
  it('syncs the WAL before it copies, and the database file after, from the thread pool', async () => {
    const { file, write, loop, calls } = setup();
    write(100);
    const before = statSync(file).size;
    expect(await loop.run()).toBe(true);
    expect(calls.map((call) => call.path)).toEqual([`${file}-wal`, file]);
    // When the WAL was synced nothing had been copied yet; when the database file was, everything had.
    expect(calls[0]!.dbBytes).toBe(before);
    expect(calls[1]!.dbBytes).toBeGreaterThan(before + 100 * 4000);
  });

  it('copies no frame written after the WAL was synced, and the WAL does not restart until the database file is synced', async () => {
    const { file, write, loop, state, calls, walFrames, checkpointWhilePinned } = setup();
    write(50);
    const framesAtPin = walFrames();
    let open!: () => void;
    state.gate = new Promise((resolve) => (open = resolve));
    const round = loop.run();
    // The round waits in the WAL's fsync: rows written now come after its snapshot.
    write(50);
    open();
    state.gate = new Promise((resolve) => (open = resolve));
    // Now it waits in the database file's fsync, having copied: only the frames from before the pin.
    await waitFor(() => calls.length === 2, { timeoutMs: 10_000, message: "the database file's fsync" });
    const during = checkpointWhilePinned();
    expect(during.checkpointed).toBe(framesAtPin);
    expect(during.log).toBeGreaterThan(framesAtPin);
    expect(during.log).toBe(walFrames());
    // A write while the copy is not durable appends to the WAL rather than restarting it over copied frames.
    write(1);
    expect(walFrames()).toBeGreaterThan(during.log);
    open();
    expect(await round).toBe(false);
    expect(statSync(file).size).toBeGreaterThan(0);
    // Once synced, the rest is copied and the next write restarts the WAL from its beginning.
    expect(await loop.run()).toBe(true);
    write(1);
    expect(walFrames()).toBeLessThan(5);
  });

  it('keeps the WAL pinned when the database file cannot be synced, and syncs it first next round', async () => {
    const { file, write, loop, state, calls, walFrames, checkpointWhilePinned } = setup();
    write(50);
    state.fail = new Error('EIO: i/o error, fsync');
    await expect(loop.run()).rejects.toThrow('EIO');
    const copied = checkpointWhilePinned();
    expect(copied.checkpointed).toBe(copied.log);
    // Copied but not durable: a write must not restart the WAL over those frames.
    write(1);
    expect(walFrames()).toBeGreaterThan(copied.log);
    state.fail = null;
    calls.length = 0;
    // The retried round syncs the database file and nothing else, so the row written since is not copied yet.
    expect(await loop.run()).toBe(false);
    expect(calls.map((call) => call.path)).toEqual([file]);
    expect(await loop.run()).toBe(true);
    write(1);
    expect(walFrames()).toBeLessThan(5);
  });

  it('copies nothing when the main connection closed during the WAL fsync', async () => {
    const { db, write, loop, state, calls } = setup();
    write(10);
    let open!: () => void;
    state.gate = new Promise((resolve) => (open = resolve));
    const round = loop.run();
    await loop.close().catch(() => {});
    closeDatabase(db);
    open();
    expect(await round).toBe(false);
    expect(calls).toHaveLength(1);
  });

  it.skipIf(!canMountTmpfs())(
    'on a full disk, fails the round without losing a row, and copies once there is room',
    async () => {
      // The database file grows by what the copy writes into it: on a full tmpfs that write fails.
      const { db, file, write, loop } = setup(tmpfsDir('8m'));
      write(200);
      fillDisk(join(file, '..'));
      await expect(loop.run()).rejects.toThrow(/full/i);
      // The main connection still reads every row, from the WAL, and the next round is not stuck behind a pin.
      expect(db.$client.prepare('select count(*) from t').pluck().get()).toBe(200);
      rmSync(join(file, '..', 'fill'));
      expect(await loop.run()).toBe(true);
      expect(statSync(file).size).toBeGreaterThan(200 * 4000);
      expect(db.$client.prepare('select count(*) from t').pluck().get()).toBe(200);
    },
  );
});
