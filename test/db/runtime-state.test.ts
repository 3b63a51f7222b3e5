import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SkippedValue, StateKind } from '../../src/common/runtime-state.ts';
import { closeDatabase, type Db, migrateDatabase, openDatabase } from '../../src/db/client.ts';
import { SqliteRuntimeState } from '../../src/db/runtime-state.ts';

interface Pause {
  reason: string;
  untilMs: number | null;
}

const pauses: StateKind<Pause> = {
  name: 'pauses',
  parse: (value) => {
    const v = value as Partial<Pause> | null;
    if (typeof v !== 'object' || v === null || typeof v.reason !== 'string') throw new Error('reason: not a string');
    return { reason: v.reason, untilMs: typeof v.untilMs === 'number' ? v.untilMs : null };
  },
};

function open(file: string): Db {
  const db = openDatabase(file);
  migrateDatabase(db);
  return db;
}

function stateOf(db: Db, skipped: SkippedValue[] = [], failed: unknown[] = []) {
  return new SqliteRuntimeState(db, {
    skipped: (skip) => skipped.push(skip),
    listenerFailed: (_k, e) => failed.push(e),
  });
}

describe('runtime state on a single node', () => {
  it('keeps what was put across a reopen of the database, and forgets what was deleted', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'vigie-state-')), 'vigie.db');
    const db = open(file);
    const collection = stateOf(db).collection(pauses);
    await collection.put('web', { reason: 'deploy', untilMs: 1_000 });
    await collection.put('db', { reason: 'migration', untilMs: null });
    expect(await collection.delete('db')).toBe(true);
    expect(await collection.delete('db')).toBe(false);
    closeDatabase(db);

    const again = stateOf(open(file)).collection(pauses);
    expect(again.size).toBe(1);
    expect(again.get('web')).toEqual({ reason: 'deploy', untilMs: 1_000 });
    expect([...again.entries()]).toEqual([['web', { reason: 'deploy', untilMs: 1_000 }]]);
  });

  it('tells its listeners each change in order, and one that throws neither stops the others nor the change', async () => {
    const failed: unknown[] = [];
    const collection = stateOf(open(':memory:'), [], failed).collection(pauses);
    const seen: string[] = [];
    collection.onChange(() => {
      throw new Error('broken listener');
    });
    const stop = collection.onChange((key, value, origin) => seen.push(`${origin} ${key} ${value?.reason ?? '-'}`));
    await collection.put('web', { reason: 'a', untilMs: null });
    await collection.put('web', { reason: 'b', untilMs: null });
    await collection.delete('web');
    await collection.delete('web');
    stop();
    await collection.put('api', { reason: 'c', untilMs: null });
    expect(seen).toEqual(['local web a', 'local web b', 'local web -']);
    expect(failed).toHaveLength(4);
    expect(collection.get('api')?.reason).toBe('c');
  });

  it('skips a stored value that no longer reads, reporting it, and loads the others', async () => {
    const db = open(':memory:');
    await stateOf(db).collection(pauses).put('web', { reason: 'ok', untilMs: null });
    const insert = db.$client.prepare(
      'insert into runtime_state (kind, key, value, updated_at_ms) values (?, ?, ?, 0)',
    );
    insert.run('pauses', 'not-json', '{"reason":');
    insert.run('pauses', 'wrong-shape', '{"reason":42}');
    const skipped: SkippedValue[] = [];
    const collection = stateOf(db, skipped).collection(pauses);
    expect([...collection.entries()].map(([key]) => key)).toEqual(['web']);
    expect(skipped.map(({ key }) => key).sort()).toEqual(['not-json', 'wrong-shape']);
    expect(skipped.every(({ kind, reason }) => kind === 'pauses' && reason.includes('reason'))).toBe(true);
  });

  it('refuses a kind name taken twice or not of [a-z][a-z0-9-]*, and is always writable', () => {
    const state = stateOf(open(':memory:'));
    state.collection(pauses);
    expect(() => state.collection(pauses)).toThrow(/already taken/);
    expect(() => state.collection({ ...pauses, name: 'Bad Name' })).toThrow(/invalid kind name/);
    expect(state.unwritable()).toBeNull();
  });
});
