import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Db, migrateDatabase, openDatabase } from '../../../src/db/client.ts';
import { ResultStore } from '../../../src/healthcheck/results/result-store.ts';

const MAX = 4;

describe('the result store keeps a check changes of state', () => {
  let dir: string;
  let db: Db | undefined;
  afterEach(() => {
    if (db !== undefined) closeDatabase(db);
    db = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const open = (): ResultStore => {
    dir = mkdtempSync(join(tmpdir(), 'vigie-events-'));
    db = openDatabase(join(dir, 'vigie.db'));
    migrateDatabase(db);
    return new ResultStore(db, { historySize: 10, maxEventsPerCheck: () => MAX });
  };
  const count = () =>
    (db?.$client.prepare(`select count(*) as n from healthcheck_events where name = 'a'`).get() as { n: number }).n;

  it('trims a change written alone (no result waiting) to max-events-per-check, oldest first', () => {
    const store = open();
    for (let i = 0; i < 10; i++)
      store.addEvent('a', {
        atMs: 1_000 + i,
        from: i % 2 ? 'up' : 'pending',
        to: i % 2 ? 'pending' : 'up',
        message: `#${i}`,
      });
    expect(count()).toBe(MAX);
    const kept = db?.$client.prepare(`select message from healthcheck_events where name = 'a' order by at_ms`).all();
    expect(kept).toEqual(['#6', '#7', '#8', '#9'].map((message) => ({ message })));
  });

  it('counts again after a change another path wrote, and still trims to the cap', () => {
    const store = open();
    for (let i = 0; i < MAX; i++) store.addEvent('a', { atMs: 1_000 + i, from: 'up', to: 'pending', message: `#${i}` });
    // What a pause writes, beside the store.
    db?.$client
      .prepare(
        `insert into healthcheck_events (name, at_ms, from_state, to_state, message) values ('a', 2000, 'up', 'paused', 'p')`,
      )
      .run();
    store.recountEvents('a');
    store.addEvent('a', { atMs: 3_000, from: 'paused', to: 'up', message: 'r' });
    expect(count()).toBe(MAX);
  });
});
