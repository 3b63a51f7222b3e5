import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WalCheckpointer, walCheckpointer } from '../../src/db/checkpointer.ts';
import { closeDatabase, type Db, openDatabase } from '../../src/db/client.ts';
import { quietFor } from '../helpers/wait.ts';

const open: { db: Db; dir: string }[] = [];
afterEach(() => {
  for (const { db, dir } of open.splice(0)) {
    if (db.$client.open) closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'vigie-checkpoint-'));
  const file = join(dir, 'vigie.db');
  const db = openDatabase(file);
  open.push({ db, dir });
  db.$client.exec('create table t (id integer primary key, payload blob)');
  const insert = db.$client.prepare('insert into t (payload) values (?)');
  // 3,000 rows of 4 KiB: about 3,000 WAL pages, three times SQLite's automatic checkpoint threshold.
  const write = db.$client.transaction(() => {
    for (let i = 0; i < 3_000; i++) insert.run(Buffer.alloc(4096, i % 256));
  });
  const errors: string[] = [];
  const checkpointer = walCheckpointer(db, (message) => errors.push(message));
  /** One row of `bytes` bytes, each `fill`: a small write. */
  const insertRow = (fill: number, bytes = 4096) => insert.run(Buffer.alloc(bytes, fill));
  return {
    db,
    file,
    write,
    insertRow,
    checkpointer,
    errors,
    autocheckpoint: () => db.$client.pragma('wal_autocheckpoint', { simple: true }),
  };
}

describe('WalCheckpointer', () => {
  it('in the background, checkpoints in its worker what the main connection no longer does, until closed', async () => {
    const { db, file, write, checkpointer, errors, autocheckpoint } = setup();
    expect(walCheckpointer(db, () => {})).toBe(checkpointer);
    checkpointer.background(20);
    expect(autocheckpoint()).toBe(0);
    const before = statSync(file).size;
    write();
    // The COMMIT did not checkpoint: the rows are in the WAL only.
    expect(statSync(file).size).toBe(before);
    // The worker copies them into the database file.
    await expect.poll(() => statSync(file).size, { timeout: 5_000 }).toBeGreaterThan(3_000 * 4096);
    expect(errors).toEqual([]);
    // 12 MB of WAL is more than the loop copies (src/db/loop-checkpoint.ts).
    await expect.poll(() => checkpointer.rounds.worker, { timeout: 5_000 }).toBeGreaterThan(0);
    expect(checkpointer.rounds.loop).toBe(0);

    // A bulk writer's hold and release leave the background mode as it is.
    checkpointer.hold();
    checkpointer.release();
    expect(autocheckpoint()).toBe(0);

    await checkpointer.close();
    expect(autocheckpoint()).toBe(1000);
  });

  it('in the background, leaves a trickle of small writes in the WAL rather than checkpointing every interval', async () => {
    const { file, insertRow, checkpointer } = setup();
    checkpointer.background(10);
    const before = statSync(file).size;
    // 20 intervals, each with a small write: the WAL stays far below SQLite's checkpoint size.
    for (let i = 0; i < 20; i++) {
      insertRow(i, 100);
      await quietFor(10, 'spaces the writes one look apart: proves a trickle is not checkpointed at each look');
    }
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(0);
    expect(statSync(file).size).toBe(before);
    expect(checkpointer.rounds).toEqual({ loop: 0, worker: 0 });
    await checkpointer.close();
  });

  it('copies a small WAL on the event loop, and starts no worker thread', async () => {
    const { db, file, insertRow, checkpointer, errors } = setup();
    checkpointer.background(60_000);
    db.$client.transaction(() => {
      for (let i = 0; i < 200; i++) insertRow(i);
    })();
    const before = statSync(file).size;
    checkpointer.request();
    await expect.poll(() => checkpointer.rounds.loop, { timeout: 5_000 }).toBe(1);
    expect(statSync(file).size).toBeGreaterThan(before + 200 * 4096);
    expect(checkpointer.rounds.worker).toBe(0);
    expect(errors).toEqual([]);
    await checkpointer.close();
  });

  /**
   * 600 pages (2.4 MB: under the 1,000 pages at which a checkpoint goes to the worker) written at once in the
   * background mode, much faster than WAL_MAX_AGE_MS: only the size asks for a checkpoint. `way` is where it must run.
   */
  async function sixHundredPages(floodChangesPerSecond: number, way: 'loop' | 'worker') {
    const { db, file, insertRow, errors } = setup();
    const checkpointer = new WalCheckpointer(db, { floodChangesPerSecond });
    checkpointer.onError((message) => errors.push(message));
    checkpointer.background(10);
    db.$client.transaction(() => {
      for (let i = 0; i < 600; i++) insertRow(i);
    })();
    const before = statSync(file).size;
    await expect.poll(() => checkpointer.rounds[way], { timeout: 5_000 }).toBe(1);
    expect(statSync(file).size).toBeGreaterThan(before + 500 * 4096);
    expect(checkpointer.rounds[way === 'loop' ? 'worker' : 'loop']).toBe(0);
    expect(errors).toEqual([]);
    await checkpointer.close();
  }

  it('in the background, copies a slow WAL on the loop once it is 2 MB, before it reaches the size that needs the worker', async () => {
    // No rate of writes is a flood here: what is tested is where a WAL of this size is copied.
    await sixHundredPages(Number.POSITIVE_INFINITY, 'loop');
  });

  it('in the background, gives the checkpoints of fast writes to the worker, however small the WAL', async () => {
    // 600 rows right after the start: over the 5 s the rate is measured on, 120 rows a second, a flood here.
    await sixHundredPages(50, 'worker');
  });

  it('runs a round on the loop again at once when a write during its fsync kept it from copying the whole WAL', async () => {
    const { db, file, insertRow, errors } = setup();
    let writeDuringSync = true;
    // No fsync is needed to see where the rounds run (test/db/loop-checkpoint.test.ts does the same).
    const sync = async (path: string) => {
      // A result write lands while the first round waits for the WAL's fsync: its frames are after the pin.
      if (writeDuringSync && path.endsWith('-wal')) {
        writeDuringSync = false;
        insertRow(7);
      }
    };
    const checkpointer = new WalCheckpointer(db, { sync });
    checkpointer.onError((message) => errors.push(message));
    checkpointer.background(60_000);
    db.$client.transaction(() => {
      for (let i = 0; i < 100; i++) insertRow(i);
    })();
    checkpointer.request();
    await expect.poll(() => checkpointer.rounds.loop, { timeout: 5_000 }).toBe(2);
    // The second round copied the row the first could not: the next write starts the WAL again, and the
    // restart truncates it to that write's frames.
    insertRow(8);
    expect(statSync(`${file}-wal`).size).toBeLessThan(10 * 4096);
    expect(checkpointer.rounds.worker).toBe(0);
    expect(errors).toEqual([]);
    await checkpointer.close();
  });

  it('once a bulk writer has held checkpoints, gives every checkpoint to the worker, however small the WAL', async () => {
    const { file, insertRow, checkpointer, errors } = setup();
    checkpointer.background(60_000);
    checkpointer.hold();
    insertRow(1);
    const before = statSync(file).size;
    checkpointer.release();
    await expect.poll(() => checkpointer.rounds.worker, { timeout: 5_000 }).toBe(1);
    expect(statSync(file).size).toBeGreaterThan(before);
    expect(checkpointer.rounds.loop).toBe(0);
    expect(errors).toEqual([]);
    await checkpointer.close();
  });

  it('stops the worker once no flood has needed it for a while, and copies the next trickle on the loop', async () => {
    const { db, file, write, insertRow, errors } = setup();
    // Kept 2 s after the flood: long enough for a slow machine to run two worker checkpoints meanwhile.
    const checkpointer = new WalCheckpointer(db, { workerKeptMs: 2_000 });
    checkpointer.onError((message) => errors.push(message));
    checkpointer.background(60_000);
    write();
    const floodAt = performance.now();
    checkpointer.request();
    await expect.poll(() => checkpointer.rounds.worker, { timeout: 5_000 }).toBe(1);
    // Within the time the worker is kept, a trickle still goes to it.
    insertRow(1);
    checkpointer.request();
    await expect.poll(() => checkpointer.rounds.worker, { timeout: 5_000 }).toBe(2);
    await quietFor(floodAt + 2_050 - performance.now(), 'lets the 2 s the worker is kept pass with no flood');
    insertRow(2);
    const before = statSync(file).size;
    checkpointer.request();
    await expect.poll(() => checkpointer.rounds.loop, { timeout: 5_000 }).toBe(1);
    expect(statSync(file).size).toBeGreaterThan(before);
    expect(checkpointer.rounds.worker).toBe(2);
    expect(errors).toEqual([]);
    await checkpointer.close();
  });

  it('without the background mode, a COMMIT checkpoints as SQLite does by default', () => {
    const { file, write, autocheckpoint } = setup();
    expect(autocheckpoint()).toBe(1000);
    const before = statSync(file).size;
    write();
    expect(statSync(file).size).toBeGreaterThan(before);
  });
});
