import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { walCheckpointer } from '../../src/db/checkpointer.ts';
import { closeDatabase, type Db, openDatabase } from '../../src/db/client.ts';

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
  return { db, file, write, checkpointer, errors, autocheckpoint: () => db.$client.pragma('wal_autocheckpoint', { simple: true }) };
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

    // A bulk writer's hold and release leave the background mode as it is.
    checkpointer.hold();
    checkpointer.release();
    expect(autocheckpoint()).toBe(0);

    await checkpointer.close();
    expect(autocheckpoint()).toBe(1000);
  });

  it('in the background, leaves a trickle of small writes in the WAL rather than checkpointing every interval', async () => {
    const { db, file, checkpointer } = setup();
    checkpointer.background(10);
    const before = statSync(file).size;
    const insert = db.$client.prepare('insert into t (payload) values (?)');
    // 20 intervals, each with a small write: the WAL stays far below SQLite's checkpoint size.
    for (let i = 0; i < 20; i++) {
      insert.run(Buffer.alloc(100, i));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(0);
    expect(statSync(file).size).toBe(before);
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
