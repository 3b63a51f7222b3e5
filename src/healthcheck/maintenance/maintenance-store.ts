/** How the API's maintenance windows are kept: runtime state (SQLite, and the same on every node of a cluster). */
import { formatDuration } from '../../common/duration.ts';
import type { LocalRows, StateKind } from '../../common/runtime-state.ts';
import type { Db } from '../../db/client.ts';
import type { MaintenanceWindow } from './maintenance.ts';

/**
 * An API window as kept: its input form as JSON text, read back by `parseWindow` when applied. What `parse` admits is
 * inert text: the window is validated when applied to the calendar, and one that no longer reads (or a bad one from
 * the bus) is skipped there, logged and counted, never applied, and can still be deleted.
 */
export interface StoredWindow {
  name: string;
  definition: string;
}

/** A window's definition is a few labels and names (`healthchecks.max-maintenance-window-checks` of them). */
const MAX_DEFINITION_BYTES = 1024 * 1024;

/** The kind of runtime state of the API's windows (the same on every node of a cluster), its rows in
 *  `maintenance_windows`. */
export function windowKind(db: Db): StateKind<StoredWindow> {
  return { name: 'maintenance-windows', parse: parseStoredWindow, rows: windowRows(db) };
}

function parseStoredWindow(value: unknown): StoredWindow {
  const { name, definition } = (value ?? {}) as Record<string, unknown>;
  if (typeof name !== 'string' || name === '' || name.length > 1024) throw new Error('name: not a window name');
  if (typeof definition !== 'string' || definition.length > MAX_DEFINITION_BYTES)
    throw new Error('definition: not the JSON text of a window');
  return { name, definition };
}

export function storedWindow(window: MaintenanceWindow): StoredWindow {
  return { name: window.name, definition: JSON.stringify(storedForm(window)) };
}

function windowRows(db: Db): LocalRows<StoredWindow> {
  const client = db.$client;
  const all = client.prepare<[], StoredWindow>('select name, definition from maintenance_windows');
  const save = client.prepare<[string, string, number]>(
    'insert into maintenance_windows (name, definition, created_at_s) values (?, ?, ?) ' +
      'on conflict (name) do update set definition = excluded.definition',
  );
  const remove = client.prepare<[string]>('delete from maintenance_windows where name = ?');
  const clear = client.prepare('delete from maintenance_windows');
  const write = (window: StoredWindow) => save.run(window.name, window.definition, Math.floor(Date.now() / 1000));
  return {
    load: () => all.all().map((row) => [row.name, row] as const),
    save: (_name, window) => write(window),
    remove: (name) => remove.run(name),
    replaceAll: client.transaction((entries: ReadonlyMap<string, StoredWindow>) => {
      clear.run();
      for (const window of entries.values()) write(window);
    }),
  };
}

/** The input form, so that `parseWindow` reads it back whatever the listing adds later. */
function storedForm(window: MaintenanceWindow): Record<string, unknown> {
  return {
    name: window.name,
    start: new Date(window.startMs).toISOString(),
    duration: formatDuration(window.durationMs * 1e6),
    ...(window.everyMs > 0 ? { every: formatDuration(window.everyMs * 1e6) } : {}),
    ...(Object.keys(window.labels).length > 0 ? { labels: window.labels } : {}),
    ...(window.checks.size > 0 ? { checks: [...window.checks] } : {}),
  };
}
