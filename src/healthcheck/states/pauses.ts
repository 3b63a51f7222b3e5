/**
 * Paused checks (docs/checks.md, "Pause"): runtime state of API and config-file checks alike, kept through the port
 * of runtime state (src/common/runtime-state.ts) so that a pause survives a restart and a kill -9 (a change is
 * durable before it is applied) and, once a cluster replicates runtime state, holds on every node. On a single node
 * its rows are the `healthcheck_pauses` table, for people who query the database.
 */
import { getTableName } from 'drizzle-orm';
import type { LocalRows, StateCollection, StateKind } from '../../common/runtime-state.ts';
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

/** A pause's reason is shown in listings and events: a sentence, not a document. */
export const MAX_REASON_BYTES = 1024;

/** A check paused (`pause`) or resumed (undefined); `note` says why it was resumed, when the resumer said. */
export type PauseChange = (name: string, pause: Pause | undefined, note: string) => void;

/** The kind of runtime state of pauses, its rows in `healthcheck_pauses`. */
export function pauseKind(db: Db): StateKind<Pause> {
  return { name: 'healthcheck-pauses', parse: parsePause, rows: pauseRows(db) };
}

/** A stored or replicated pause, checked as the API checks one (what comes from the disk or the bus is untrusted). */
function parsePause(value: unknown): Pause {
  if (typeof value !== 'object' || value === null) throw new Error('a pause must be an object');
  const { name, by, reason, atMs, untilMs } = value as Record<string, unknown>;
  if (typeof name !== 'string' || name === '' || name.length > 255) throw new Error('name: not a check name');
  if (typeof by !== 'string' || by.length > 1024) throw new Error('by: not a principal');
  if (typeof reason !== 'string' || Buffer.byteLength(reason) > MAX_REASON_BYTES || hasControlCharacter(reason))
    throw new Error(`reason: not text of at most ${MAX_REASON_BYTES} bytes`);
  if (!Number.isSafeInteger(atMs)) throw new Error('atMs: not a time');
  if (untilMs !== undefined && !Number.isSafeInteger(untilMs)) throw new Error('untilMs: not a time');
  const pause: Pause = { name, by, reason, atMs: atMs as number };
  if (untilMs !== undefined) pause.untilMs = untilMs as number;
  return pause;
}

/** C0, DEL and C1: a reason is shown in logs, terminals and the dashboard. */
export function hasControlCharacter(text: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u001f\u007f-\u009f]/.test(text);
}

function pauseRows(db: Db): LocalRows<Pause> {
  const table = getTableName(healthcheckPauses);
  const client = db.$client;
  const all = client.prepare<[], [string, string, string, number, number | null]>(
    `select name, paused_by, reason, at_ms, until_ms from ${table}`,
  );
  const save = client.prepare<[string, string, string, number, number | null]>(
    `insert or replace into ${table} (name, paused_by, reason, at_ms, until_ms) values (?, ?, ?, ?, ?)`,
  );
  const remove = client.prepare<[string]>(`delete from ${table} where name = ?`);
  const clear = client.prepare(`delete from ${table}`);
  const write = (pause: Pause) => save.run(pause.name, pause.by, pause.reason, pause.atMs, pause.untilMs ?? null);
  return {
    *load() {
      for (const [name, by, reason, atMs, untilMs] of all.raw().iterate())
        yield [name, { name, by, reason, atMs, ...(untilMs !== null ? { untilMs } : {}) }] as const;
    },
    save: (_name, pause) => write(pause),
    remove: (name) => remove.run(name),
    replaceAll: client.transaction((entries: ReadonlyMap<string, Pause>) => {
      clear.run();
      for (const pause of entries.values()) write(pause);
    }),
  };
}

/** The pauses, over their collection: reads from memory, changes durable before they resolve. */
export class PauseStore {
  /** Why a check is being resumed, for the listeners of that change. */
  private readonly notes = new Map<string, string>();

  constructor(private readonly collection: StateCollection<Pause>) {}

  get(name: string): Pause | undefined {
    return this.collection.get(name);
  }

  *all(): IterableIterator<Pause> {
    for (const [, pause] of this.collection.entries()) yield pause;
  }

  /** Pauses a check (or changes its pause): resolves once durable and told to the listeners. */
  put(pause: Pause): Promise<void> {
    return this.collection.put(pause.name, pause);
  }

  /** Resumes a check, `note` saying why; false when it was not paused. */
  async delete(name: string, note = ''): Promise<boolean> {
    if (this.collection.get(name) === undefined) return false;
    this.notes.set(name, note);
    try {
      return await this.collection.delete(name);
    } finally {
      this.notes.delete(name);
    }
  }

  onChange(listener: PauseChange): void {
    this.collection.onChange((name, pause) =>
      listener(name, pause, pause === undefined ? (this.notes.get(name) ?? '') : ''),
    );
  }
}
