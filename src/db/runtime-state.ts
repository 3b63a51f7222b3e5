/**
 * Runtime state on a single node (src/common/runtime-state.ts): each collection in memory and in SQLite, a change
 * applied once its row is committed (one autocommitted statement: these are operators' changes, a handful a minute).
 * The kinds without a table of their own keep their rows in `runtime_state`.
 */
import type { LocalRows, RuntimeState, StateCollection, StateKind } from '../common/runtime-state.ts';
import { type LocalMirrors, MirroredCollection, type MirrorReports, StateMirror } from '../common/state-mirror.ts';
import type { Db } from './client.ts';

const KIND_NAME = /^[a-z][a-z0-9-]*$/;

/** The rows of one kind in the `runtime_state` table, values as JSON text. */
function runtimeStateRows<T>(db: Db, kind: string): LocalRows<T> {
  const client = db.$client;
  const load = client.prepare<[string], { key: string; value: string }>(
    'select key, value from runtime_state where kind = ?',
  );
  const save = client.prepare<[string, string, string, number]>(
    'insert into runtime_state (kind, key, value, updated_at_ms) values (?, ?, ?, ?) ' +
      'on conflict (kind, key) do update set value = excluded.value, updated_at_ms = excluded.updated_at_ms',
  );
  const remove = client.prepare<[string, string]>('delete from runtime_state where kind = ? and key = ?');
  const clear = client.prepare<[string]>('delete from runtime_state where kind = ?');
  return {
    *load() {
      for (const row of load.iterate(kind)) {
        let value: unknown;
        try {
          value = JSON.parse(row.value);
        } catch {
          // Not JSON any more: the kind's parse refuses it, and only this row is lost.
          value = undefined;
        }
        yield [row.key, value] as const;
      }
    },
    save: (key, value) => save.run(kind, key, JSON.stringify(value), Date.now()),
    remove: (key) => remove.run(kind, key),
    replaceAll: client.transaction((entries: ReadonlyMap<string, T>) => {
      clear.run(kind);
      const now = Date.now();
      for (const [key, value] of entries) save.run(kind, key, JSON.stringify(value), now);
    }),
  };
}

/** Applies a change to SQLite and memory at once: nothing to wait for but the commit. */
class LocalCollection<T> extends MirroredCollection<T> {
  async put(key: string, value: T): Promise<void> {
    this.mirror.apply(key, value, 'local');
  }

  async delete(key: string): Promise<boolean> {
    const had = this.mirror.get(key) !== undefined;
    this.mirror.apply(key, undefined, 'local');
    return had;
  }
}

export class SqliteRuntimeState implements RuntimeState, LocalMirrors {
  private readonly taken = new Set<string>();

  constructor(
    private readonly db: Db,
    readonly reports: MirrorReports,
  ) {}

  collection<T>(kind: StateKind<T>): StateCollection<T> {
    return new LocalCollection(this.mirror(kind));
  }

  mirror<T>(kind: StateKind<T>): StateMirror<T> {
    if (!KIND_NAME.test(kind.name)) throw new Error(`runtime state: invalid kind name ${JSON.stringify(kind.name)}`);
    if (this.taken.has(kind.name)) throw new Error(`runtime state: kind ${kind.name} is already taken`);
    this.taken.add(kind.name);
    return new StateMirror(kind, kind.rows ?? runtimeStateRows<T>(this.db, kind.name), this.reports);
  }

  unwritable(): string | null {
    return null;
  }
}
