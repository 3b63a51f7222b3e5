/**
 * Paused checks (docs/checks.md, "Pause"): runtime state of API and config-file checks alike, kept in SQLite
 * (`healthcheck_pauses`) so that a pause survives a restart and a kill -9 (each change is committed before it is
 * applied). The store is narrow on purpose, loaded once, then put, delete and a change callback, so that it can move
 * behind a store of replicated runtime state; today a pause holds on the node it was made on (docs/cluster.md).
 */
import { getTableName } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { healthcheckPauses } from '../../db/schema.ts';

export interface Pause {
  name: string;
  /** Who paused it, as the audit log names principals (`token:ci`, `basic:ops`, `anonymous`). */
  by: string;
  /** '' when none was given. */
  reason: string;
  atMs: number;
  /** Resumed by itself then; absent: until resumed. */
  untilMs?: number;
}

/** A check paused (`pause`) or resumed (undefined); `note` says why it was resumed, when the resumer said. */
export type PauseChange = (name: string, pause: Pause | undefined, note: string) => void;

export class PauseStore {
  private readonly pauses = new Map<string, Pause>();
  private readonly listeners: PauseChange[] = [];
  private readonly statements;

  constructor(db: Db) {
    const table = getTableName(healthcheckPauses);
    const client = db.$client;
    this.statements = {
      all: client.prepare<[], [string, string, string, number, number | null]>(
        `select name, paused_by, reason, at_ms, until_ms from ${table}`,
      ),
      put: client.prepare<[string, string, string, number, number | null]>(
        `insert or replace into ${table} (name, paused_by, reason, at_ms, until_ms) values (?, ?, ?, ?, ?)`,
      ),
      delete: client.prepare<[string]>(`delete from ${table} where name = ?`),
    };
  }

  /** Reads the stored pauses (at startup, before anything listens). */
  load(): void {
    this.pauses.clear();
    for (const [name, by, reason, atMs, untilMs] of this.statements.all.raw().all())
      this.pauses.set(name, { name, by, reason, atMs, ...(untilMs !== null ? { untilMs } : {}) });
  }

  get(name: string): Pause | undefined {
    return this.pauses.get(name);
  }

  all(): IterableIterator<Pause> {
    return this.pauses.values();
  }

  /** Pauses a check (or changes its pause): committed, then told to the listeners. */
  put(pause: Pause): void {
    this.statements.put.run(pause.name, pause.by, pause.reason, pause.atMs, pause.untilMs ?? null);
    this.pauses.set(pause.name, pause);
    for (const listener of this.listeners) listener(pause.name, pause, '');
  }

  /** Resumes a check, `note` saying why; false when it was not paused. */
  delete(name: string, note = ''): boolean {
    if (!this.pauses.has(name)) return false;
    this.statements.delete.run(name);
    this.pauses.delete(name);
    for (const listener of this.listeners) listener(name, undefined, note);
    return true;
  }

  onChange(listener: PauseChange): void {
    this.listeners.push(listener);
  }
}
