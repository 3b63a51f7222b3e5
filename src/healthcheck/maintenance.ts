/**
 * Maintenance windows (docs/checks.md, "Maintenance windows"): planned periods during which checks still run but
 * their results are marked `"maintenance": true`, count in no uptime ratio, and are dropped by the notification
 * outputs. A window starts at `start` and lasts `duration` (or until `end`); with `every` it repeats. It covers the
 * checks having all of its `labels` and the checks it names in `checks`; with neither, every check.
 *
 * Windows come from the config file (`maintenance:`, re-read at reload) and from the API (kept in SQLite). The
 * config file owns its names, as it does for checks: an API window of the same name is hidden while it is there.
 */
import { Type } from '@sinclair/typebox';
import { eq } from 'drizzle-orm';
import { Duration, DurationError, formatDuration, parseDuration } from '../common/duration.ts';
import type { Db } from '../db/client.ts';
import { maintenanceWindows } from '../db/schema.ts';
import { nameField, validateShape } from './kinds/common.ts';
import { CheckValidationError } from './kinds/types.ts';

export const MaintenanceWindowSchema = Type.Object(
  {
    name: Type.String(),
    start: Type.String({ description: 'RFC 3339 date and time, e.g. 2026-12-01T22:00:00Z' }),
    duration: Type.Optional(Duration),
    end: Type.Optional(Type.String({ description: 'RFC 3339; instead of duration' })),
    every: Type.Optional(Duration),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    checks: Type.Optional(Type.Array(Type.String())),
    /** Listings show these; accepted back so that a listed window can be posted again. */
    source: Type.Optional(Type.String()),
    active: Type.Optional(Type.Boolean()),
    'next-start': Type.Optional(Type.String()),
    'next-end': Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export type WindowSource = 'configuration' | 'api';

export interface MaintenanceWindow {
  name: string;
  startMs: number;
  durationMs: number;
  /** Repeats every `everyMs` from `startMs`; 0: once. */
  everyMs: number;
  labels: Record<string, string>;
  checks: readonly string[];
}

/** A window as the API lists it, with whether it is on now and its current or next occurrence. */
export interface MaintenanceWindowJson {
  name: string;
  start: string;
  duration: string;
  every?: string;
  labels?: Record<string, string>;
  checks?: string[];
  source: WindowSource;
  active: boolean;
  'next-start'?: string;
  'next-end'?: string;
}

/** RFC 3339 (`2026-12-01T22:00:00Z`, `2026-12-01T23:00:00+01:00`, fractions allowed): a zone is required. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function timeField(field: string, text: string): number {
  const ms = RFC3339.test(text) ? Date.parse(text.replace(' ', 'T')) : Number.NaN;
  if (Number.isNaN(ms)) throw new CheckValidationError(field, `must be an RFC 3339 date and time with a zone (2026-12-01T22:00:00Z), got ${JSON.stringify(text)}`);
  return ms;
}

function durationMsField(field: string, text: string): number {
  let ns: number;
  try {
    ns = parseDuration(text);
  } catch (error) {
    if (error instanceof DurationError) throw new CheckValidationError(field, error.message);
    throw error;
  }
  if (ns <= 0) throw new CheckValidationError(field, `must be greater than 0, got ${JSON.stringify(text)}`);
  return Math.ceil(ns / 1e6);
}

/** Validates a window of the config file or of an API body; throws CheckValidationError naming the field. */
export function parseWindow(raw: unknown): MaintenanceWindow {
  const input = validateShape(MaintenanceWindowSchema, raw);
  const name = nameField(input.name);
  const startMs = timeField('start', input.start);
  if ((input.duration === undefined) === (input.end === undefined)) {
    throw new CheckValidationError(input.duration === undefined ? 'duration' : 'end', 'set exactly one of duration and end');
  }
  let durationMs: number;
  if (input.duration !== undefined) durationMs = durationMsField('duration', input.duration);
  else {
    durationMs = timeField('end', input.end as string) - startMs;
    if (durationMs <= 0) throw new CheckValidationError('end', `must be after start (${input.start}), got ${JSON.stringify(input.end)}`);
  }
  const everyMs = input.every === undefined ? 0 : durationMsField('every', input.every);
  if (everyMs !== 0 && everyMs <= durationMs) {
    throw new CheckValidationError('every', `must be longer than the window (${formatDuration(durationMs * 1e6)}), or the window never ends; got ${JSON.stringify(input.every)}`);
  }
  (input.checks ?? []).forEach((check, i) => {
    if (check === '') throw new CheckValidationError(`checks[${i}]`, 'must not be empty');
  });
  return { name, startMs, durationMs, everyMs, labels: { ...input.labels }, checks: [...new Set(input.checks ?? [])] };
}

/** The occurrence of `window` that is on at `nowMs`, else the next one; null when it is over for good. */
export function occurrence(window: MaintenanceWindow, nowMs: number): { startMs: number; endMs: number } | null {
  let startMs = window.startMs;
  if (window.everyMs > 0 && nowMs > startMs) startMs += Math.floor((nowMs - startMs) / window.everyMs) * window.everyMs;
  if (nowMs < startMs + window.durationMs) return { startMs, endMs: startMs + window.durationMs };
  if (window.everyMs === 0) return null;
  return { startMs: startMs + window.everyMs, endMs: startMs + window.everyMs + window.durationMs };
}

function isOn(window: MaintenanceWindow, nowMs: number): boolean {
  if (nowMs < window.startMs) return false;
  const into = window.everyMs > 0 ? (nowMs - window.startMs) % window.everyMs : nowMs - window.startMs;
  return into < window.durationMs;
}

function covers(window: MaintenanceWindow, name: string, labels: Readonly<Record<string, string>>): boolean {
  const byLabels = Object.keys(window.labels).length > 0;
  const byName = window.checks.length > 0;
  if (!byLabels && !byName) return true;
  if (byName && window.checks.includes(name)) return true;
  if (!byLabels) return false;
  for (const key in window.labels) if (labels[key] !== window.labels[key]) return false;
  return true;
}

export function windowToJson(window: MaintenanceWindow, source: WindowSource, nowMs: number): MaintenanceWindowJson {
  const json: MaintenanceWindowJson = { name: window.name, start: new Date(window.startMs).toISOString(), duration: formatDuration(window.durationMs * 1e6) } as MaintenanceWindowJson;
  if (window.everyMs > 0) json.every = formatDuration(window.everyMs * 1e6);
  if (Object.keys(window.labels).length > 0) json.labels = window.labels;
  if (window.checks.length > 0) json.checks = [...window.checks];
  json.source = source;
  json.active = isOn(window, nowMs);
  const next = occurrence(window, nowMs);
  if (next !== null) {
    json['next-start'] = new Date(next.startMs).toISOString();
    json['next-end'] = new Date(next.endMs).toISOString();
  }
  return json;
}

/** The windows in force: the config file's and the API's (minus those whose name the config file took). */
export class MaintenanceCalendar {
  private config: MaintenanceWindow[] = [];
  private readonly api = new Map<string, MaintenanceWindow>();
  /** Both lists in one array: `covers` runs for every result. */
  private all: MaintenanceWindow[] = [];

  constructor(private readonly now: () => number = Date.now) {}

  setConfig(windows: readonly MaintenanceWindow[]): void {
    this.config = [...windows];
    this.rebuild();
  }

  setApi(window: MaintenanceWindow): void {
    this.api.set(window.name, window);
    this.rebuild();
  }

  deleteApi(name: string): boolean {
    const deleted = this.api.delete(name);
    if (deleted) this.rebuild();
    return deleted;
  }

  isConfig(name: string): boolean {
    return this.config.some((window) => window.name === name);
  }

  /** Whether a result of the check finishing now falls in a window. */
  inMaintenance(name: string, labels: Readonly<Record<string, string>>): boolean {
    const windows = this.all;
    if (windows.length === 0) return false;
    const nowMs = this.now();
    for (let i = 0; i < windows.length; i++) {
      const window = windows[i] as MaintenanceWindow;
      if (isOn(window, nowMs) && covers(window, name, labels)) return true;
    }
    return false;
  }

  list(): MaintenanceWindowJson[] {
    const nowMs = this.now();
    const configNames = new Set(this.config.map((window) => window.name));
    return [
      ...this.config.map((window) => windowToJson(window, 'configuration', nowMs)),
      ...[...this.api.values()].filter((window) => !configNames.has(window.name)).map((window) => windowToJson(window, 'api', nowMs)),
    ].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(name: string): MaintenanceWindowJson | undefined {
    return this.list().find((window) => window.name === name);
  }

  private rebuild(): void {
    const configNames = new Set(this.config.map((window) => window.name));
    this.all = [...this.config, ...[...this.api.values()].filter((window) => !configNames.has(window.name))];
  }
}

/** The API's windows in SQLite, in the form the API lists them (re-parsed at startup). */
export class MaintenanceStore {
  constructor(private readonly db: Db) {}

  load(): unknown[] {
    return this.db
      .select({ definition: maintenanceWindows.definition })
      .from(maintenanceWindows)
      .all()
      .map((row) => row.definition);
  }

  save(window: MaintenanceWindow): void {
    const definition = storedForm(window);
    this.db
      .insert(maintenanceWindows)
      .values({ name: window.name, definition, createdAtS: Math.floor(Date.now() / 1000) })
      .onConflictDoUpdate({ target: maintenanceWindows.name, set: { definition } })
      .run();
  }

  delete(name: string): void {
    this.db.delete(maintenanceWindows).where(eq(maintenanceWindows.name, name)).run();
  }
}

/** The input form, so that `parseWindow` reads it back whatever the listing adds later. */
function storedForm(window: MaintenanceWindow): Record<string, unknown> {
  return {
    name: window.name,
    start: new Date(window.startMs).toISOString(),
    duration: formatDuration(window.durationMs * 1e6),
    ...(window.everyMs > 0 ? { every: formatDuration(window.everyMs * 1e6) } : {}),
    ...(Object.keys(window.labels).length > 0 ? { labels: window.labels } : {}),
    ...(window.checks.length > 0 ? { checks: [...window.checks] } : {}),
  };
}
