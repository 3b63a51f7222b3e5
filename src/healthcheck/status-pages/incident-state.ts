/**
 * Incidents as runtime state (src/common/runtime-state.ts, docs/cluster.md "Runtime state"): each incident whole,
 * its timeline included, under its id; the same on every node of a cluster. On a node its rows stay in the
 * `incidents` and `incident_updates` tables, as they always were.
 *
 * What comes from the bus or the disk is untrusted: `parseIncident` checks every field's type and bounds (the API's
 * caps are enforced when an incident is created or updated; these are the ones no caps setting goes past).
 */
import type { LocalRows, StateKind } from '../../common/runtime-state.ts';
import type { Db } from '../../db/client.ts';
import { IMPACTS, type Impact } from './components.ts';
import { INCIDENT_STATUSES, type Incident, type IncidentStatus } from './incidents.ts';

/** Past any `max-status-*-bytes` and `max-incident-updates` a configuration may set, so a real incident always
 *  reads. */
const MAX_TEXT_CHARS = 1024 * 1024;
const MAX_NAMES = 10_000;
const MAX_UPDATES = 100_000;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isTime = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

function text(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_TEXT_CHARS) throw new Error(`${field}: not a text`);
  return value;
}

function time(field: string, value: unknown): number {
  if (!isTime(value)) throw new Error(`${field}: not a time in milliseconds`);
  return value;
}

function status(field: string, value: unknown): IncidentStatus {
  if (!(INCIDENT_STATUSES as readonly unknown[]).includes(value)) throw new Error(`${field}: not a status`);
  return value as IncidentStatus;
}

function names(field: string, value: unknown): string[] {
  if (!Array.isArray(value) || value.length > MAX_NAMES) throw new Error(`${field}: not a list of names`);
  return value.map((name, i) => {
    if (typeof name !== 'string' || name === '' || name.length > 1024) throw new Error(`${field}[${i}]: not a name`);
    return name;
  });
}

/** A whole incident, checked field by field; throws naming the first field that is not one. */
function parseIncident(value: unknown): Incident {
  if (!isObject(value)) throw new Error('not an incident object');
  const { id, impact, updates } = value;
  if (!Number.isSafeInteger(id) || (id as number) < 1) throw new Error('id: not a positive integer');
  if (impact !== null && !(IMPACTS as readonly unknown[]).includes(impact)) throw new Error('impact: not an impact');
  if (!Array.isArray(updates) || updates.length === 0 || updates.length > MAX_UPDATES)
    throw new Error('updates: not a timeline');
  const resolvedAtMs = value.resolvedAtMs === null ? null : time('resolvedAtMs', value.resolvedAtMs);
  return {
    id: id as number,
    title: text('title', value.title),
    status: status('status', value.status),
    pages: names('pages', value.pages),
    checks: names('checks', value.checks),
    createdAtMs: time('createdAtMs', value.createdAtMs),
    updatedAtMs: time('updatedAtMs', value.updatedAtMs),
    resolvedAtMs,
    impact: impact as Impact | null,
    updates: updates.map((update: unknown, i) => {
      if (!isObject(update)) throw new Error(`updates[${i}]: not an update`);
      return {
        status: status(`updates[${i}].status`, update.status),
        message: text(`updates[${i}].message`, update.message),
        atMs: time(`updates[${i}].atMs`, update.atMs),
      };
    }),
  };
}

/** The kind of runtime state of incidents, keyed by their id in decimal, rows in `incidents` and `incident_updates`. */
export function incidentKind(db: Db): StateKind<Incident> {
  return { name: 'incidents', parse: parseIncident, rows: incidentRows(db) };
}

interface IncidentRow {
  id: number;
  title: string;
  status: string;
  pages: string;
  checks: string;
  created_at_ms: number;
  updated_at_ms: number;
  resolved_at_ms: number | null;
  impact: string | null;
}

function incidentRows(db: Db): LocalRows<Incident> {
  const client = db.$client;
  const rows = client.prepare<[], IncidentRow>('select * from incidents');
  const timeline = client.prepare<[], { incident_id: number; status: string; message: string; at_ms: number }>(
    'select incident_id, status, message, at_ms from incident_updates order by id',
  );
  const upsert = client.prepare(
    'insert into incidents (id, title, status, pages, checks, created_at_ms, updated_at_ms, resolved_at_ms, impact) ' +
      'values (@id, @title, @status, @pages, @checks, @createdAtMs, @updatedAtMs, @resolvedAtMs, @impact) ' +
      'on conflict (id) do update set title = excluded.title, status = excluded.status, pages = excluded.pages, ' +
      'checks = excluded.checks, created_at_ms = excluded.created_at_ms, updated_at_ms = excluded.updated_at_ms, ' +
      'resolved_at_ms = excluded.resolved_at_ms, impact = excluded.impact',
  );
  const addUpdate = client.prepare<[number, string, string, number]>(
    'insert into incident_updates (incident_id, status, message, at_ms) values (?, ?, ?, ?)',
  );
  const clearUpdates = client.prepare<[number]>('delete from incident_updates where incident_id = ?');
  const remove = client.prepare<[number]>('delete from incidents where id = ?');
  const clear = client.prepare('delete from incidents');
  const write = (incident: Incident) => {
    const { updates, ...fields } = incident;
    upsert.run({ ...fields, pages: JSON.stringify(fields.pages), checks: JSON.stringify(fields.checks) });
    clearUpdates.run(incident.id);
    for (const update of updates) addUpdate.run(incident.id, update.status, update.message, update.atMs);
  };
  return {
    *load() {
      const byId = new Map<number, { status: string; message: string; atMs: number }[]>();
      for (const update of timeline.iterate()) {
        const list = byId.get(update.incident_id) ?? [];
        list.push({ status: update.status, message: update.message, atMs: update.at_ms });
        byId.set(update.incident_id, list);
      }
      for (const row of rows.iterate()) {
        let pages: unknown;
        let checks: unknown;
        try {
          pages = JSON.parse(row.pages);
          checks = JSON.parse(row.checks);
        } catch {
          // `parseIncident` refuses it: only this row is lost.
        }
        const incident = {
          id: row.id,
          title: row.title,
          status: row.status,
          pages,
          checks,
          createdAtMs: row.created_at_ms,
          updatedAtMs: row.updated_at_ms,
          resolvedAtMs: row.resolved_at_ms,
          impact: row.impact,
          updates: byId.get(row.id) ?? [],
        };
        yield [String(row.id), incident] as const;
      }
    },
    save: client.transaction((_key: string, incident: Incident) => write(incident)),
    // The timeline goes with it (on delete cascade).
    remove: (key) => remove.run(Number(key)),
    replaceAll: client.transaction((entries: ReadonlyMap<string, Incident>) => {
      clear.run();
      for (const incident of entries.values()) write(incident);
    }),
  };
}
