/**
 * Maintenance windows (docs/checks.md, "Maintenance windows"): planned periods during which checks still run but
 * their results are marked `"maintenance": true`, count in no uptime ratio, and are dropped by the notification
 * outputs. A window starts at `start` and lasts `duration` (or until `end`); with `every` it repeats. It covers the
 * checks having all of its `labels` and the checks it names in `checks`; with neither, every check.
 *
 * Windows come from the config file (`maintenance:`, re-read at reload) and from the API (runtime state: SQLite, and
 * the same on every node of a cluster, maintenance-store.ts). The
 * config file owns its names, as it does for checks: an API window of the same name is hidden while it is there.
 */
import { Type } from '@sinclair/typebox';
import { Duration, DurationError, formatDuration, parseDuration } from '../../common/duration.ts';
import { checkLabels, DEFAULT_LABEL_LIMITS, type LabelLimits, nameField } from '../kinds/common.ts';
import { Problems } from '../kinds/problems.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';

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
  /** A set: `covers` asks it for every result. */
  checks: ReadonlySet<string>;
}

/** The caps on one window (docs/hardening.md, "Maintenance windows"): the labels as a check's, and its names. */
interface WindowLimits {
  labels: LabelLimits;
  /** `healthchecks.max-maintenance-window-checks`. */
  maxChecks: number;
}

export interface MaintenanceLimits {
  /** `healthchecks.max-maintenance-windows`: the windows in force, the file's and the API's. */
  maxWindows: number;
  window: WindowLimits;
}

export const DEFAULT_MAINTENANCE_LIMITS: MaintenanceLimits = {
  maxWindows: 10_000,
  window: { labels: DEFAULT_LABEL_LIMITS, maxChecks: 1000 },
};

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
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
/** The last instant RFC 3339's four-digit years can write in UTC, which is how windows are listed and stored. */
const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const LAST = new Date(LAST_MS).toISOString();
const FIRST_MS = new Date(0).setUTCFullYear(0, 0, 1);
/** Whole milliseconds of Go's largest duration, so that a stored duration reads back within Go's bound. */
const MAX_DURATION_MS = 9_223_372_036_854;

export function timeField(field: string, text: string): number {
  const match = RFC3339.exec(text);
  if (match === null)
    throw new CheckValidationError(
      field,
      `must be an RFC 3339 date and time with a zone (2026-12-01T22:00:00Z), got ${JSON.stringify(text)}`,
    );
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const [, , , , , , , fraction, sign, offsetHours, offsetMinutes] = match;
  // The fields must come back out of the date they make: Date.parse takes 2026-02-30 for March 2.
  const notADate = (problem: string) =>
    new CheckValidationError(field, `${JSON.stringify(text)} is not a date and time: ${problem}`);
  if (month < 1 || month > 12) throw notADate(`no month ${month}`);
  if (hour > 23) throw notADate(`hour ${hour} is past 23`);
  if (minute > 59) throw notADate(`minute ${minute} is past 59`);
  if (second > 59) throw notADate(`second ${second} is past 59`);
  const wall = new Date(0);
  wall.setUTCFullYear(year, month - 1, day);
  wall.setUTCHours(hour, minute, second);
  if (wall.getUTCDate() !== day || wall.getUTCMonth() !== month - 1)
    throw notADate(`no day ${day} in ${match[1]}-${match[2]}`);
  if (Number(offsetHours ?? 0) > 23 || Number(offsetMinutes ?? 0) > 59)
    throw notADate(`no zone offset ${sign}${offsetHours}:${offsetMinutes}`);
  const offsetMs =
    sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  const ms = wall.getTime() + Math.floor(Number(`0${fraction ?? ''}`) * 1000) - offsetMs;
  if (ms < FIRST_MS || ms > LAST_MS)
    throw new CheckValidationError(
      field,
      `must be between 0000-01-01T00:00:00Z and ${LAST} in UTC, got ${JSON.stringify(text)}`,
    );
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
  return Math.min(Math.ceil(ns / 1e6), MAX_DURATION_MS);
}

function checksField(checks: readonly string[], maxChecks: number): Set<string> {
  if (checks.length > maxChecks) {
    throw new CheckValidationError(
      'checks',
      `has ${checks.length} check names, more than the limit of ${maxChecks} (healthchecks.max-maintenance-window-checks)`,
    );
  }
  checks.forEach((check, i) => {
    try {
      nameField(check);
    } catch (error) {
      if (error instanceof CheckValidationError) throw new CheckValidationError(`checks[${i}]`, error.problem);
      throw error;
    }
  });
  return new Set(checks);
}

/** Validates a window of the config file or of an API body; throws a CheckValidationError naming every problem. */
export function parseWindow(raw: unknown, limits: WindowLimits): MaintenanceWindow {
  const { input, problems } = Problems.shape(MaintenanceWindowSchema, raw);
  const name = problems.check(() => nameField(input.name), '');
  const startMs = problems.check(() => timeField('start', input.start), undefined);
  let durationMs: number | undefined;
  if ((input.duration === undefined) === (input.end === undefined)) {
    problems.add(input.duration === undefined ? 'duration' : 'end', 'set exactly one of duration and end');
  } else if (input.duration !== undefined) {
    durationMs = problems.check(() => durationMsField('duration', input.duration as string), undefined);
    if (startMs !== undefined && durationMs !== undefined && startMs + durationMs > LAST_MS)
      problems.add('duration', `the window would end after ${LAST}`);
  } else {
    const endMs = problems.check(() => timeField('end', input.end as string), undefined);
    if (startMs !== undefined && endMs !== undefined) {
      durationMs = endMs - startMs;
      if (durationMs <= 0)
        problems.add('end', `must be after start (${input.start}), got ${JSON.stringify(input.end)}`);
    }
  }
  const everyMs =
    input.every === undefined ? 0 : problems.check(() => durationMsField('every', input.every as string), 0);
  if (everyMs !== 0 && durationMs !== undefined && everyMs <= durationMs) {
    problems.add(
      'every',
      `must be longer than the window (${formatDuration(durationMs * 1e6)}), or the window never ends; got ${JSON.stringify(input.every)}`,
    );
  }
  const labels = { ...input.labels };
  problems.check(() => checkLabels(labels, limits.labels), undefined);
  const checks = problems.check(() => checksField(input.checks ?? [], limits.maxChecks), new Set<string>());
  problems.throwIfAny();
  return { name, startMs: startMs as number, durationMs: durationMs as number, everyMs, labels, checks };
}

/** The occurrence of `window` that is on at `nowMs`, else the next one; null when it is over for good (or would
 *  end after the last date RFC 3339 writes). */
export function occurrence(window: MaintenanceWindow, nowMs: number): { startMs: number; endMs: number } | null {
  let startMs = window.startMs;
  if (window.everyMs > 0 && nowMs > startMs) startMs += Math.floor((nowMs - startMs) / window.everyMs) * window.everyMs;
  if (nowMs >= startMs + window.durationMs) {
    if (window.everyMs === 0) return null;
    startMs += window.everyMs;
  }
  const endMs = startMs + window.durationMs;
  return endMs > LAST_MS ? null : { startMs, endMs };
}

function isOn(window: MaintenanceWindow, nowMs: number): boolean {
  if (nowMs < window.startMs) return false;
  const into = window.everyMs > 0 ? (nowMs - window.startMs) % window.everyMs : nowMs - window.startMs;
  return into < window.durationMs;
}

export function covers(window: MaintenanceWindow, name: string, labels: Readonly<Record<string, string>>): boolean {
  const byLabels = Object.keys(window.labels).length > 0;
  const byName = window.checks.size > 0;
  if (!byLabels && !byName) return true;
  if (byName && window.checks.has(name)) return true;
  if (!byLabels) return false;
  for (const key in window.labels) if (labels[key] !== window.labels[key]) return false;
  return true;
}

export function windowToJson(window: MaintenanceWindow, source: WindowSource, nowMs: number): MaintenanceWindowJson {
  const json: MaintenanceWindowJson = {
    name: window.name,
    start: new Date(window.startMs).toISOString(),
    duration: formatDuration(window.durationMs * 1e6),
  } as MaintenanceWindowJson;
  if (window.everyMs > 0) json.every = formatDuration(window.everyMs * 1e6);
  if (Object.keys(window.labels).length > 0) json.labels = window.labels;
  if (window.checks.size > 0) json.checks = [...window.checks];
  json.source = source;
  json.active = isOn(window, nowMs);
  const next = occurrence(window, nowMs);
  if (next !== null) {
    json['next-start'] = new Date(next.startMs).toISOString();
    json['next-end'] = new Date(next.endMs).toISOString();
  }
  return json;
}

/**
 * The windows in force: the config file's and the API's (minus those whose name the config file took). Each is
 * found by name in a map; those in force are also in one array (`inMaintenance` runs for every result) that a
 * change updates in place, so that adding or deleting a window costs the same at 10 windows as at 10,000.
 */
export class MaintenanceCalendar {
  private config = new Map<string, MaintenanceWindow>();
  private readonly api = new Map<string, MaintenanceWindow>();
  private inForce: MaintenanceWindow[] = [];
  /** Where each window of `inForce` is, by name. */
  private readonly position = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  setConfig(windows: readonly MaintenanceWindow[]): void {
    this.config = new Map(windows.map((window) => [window.name, window]));
    this.inForce = [];
    this.position.clear();
    for (const window of this.config.values()) this.put(window);
    for (const window of this.api.values()) if (!this.config.has(window.name)) this.put(window);
  }

  setApi(window: MaintenanceWindow): void {
    this.api.set(window.name, window);
    if (!this.config.has(window.name)) this.put(window);
  }

  deleteApi(name: string): boolean {
    if (!this.api.delete(name)) return false;
    if (this.config.has(name)) return true;
    const at = this.position.get(name) as number;
    const last = this.inForce.pop() as MaintenanceWindow;
    this.position.delete(name);
    if (last.name !== name) {
      this.inForce[at] = last;
      this.position.set(last.name, at);
    }
    return true;
  }

  isConfig(name: string): boolean {
    return this.config.has(name);
  }

  /** Whether a window of that name is in force (from the file or the API). */
  has(name: string): boolean {
    return this.position.has(name);
  }

  /** How many windows are in force: what `healthchecks.max-maintenance-windows` caps. */
  get size(): number {
    return this.inForce.length;
  }

  /** Whether a result of the check finishing now falls in a window. */
  inMaintenance(name: string, labels: Readonly<Record<string, string>>): boolean {
    const windows = this.inForce;
    if (windows.length === 0) return false;
    const nowMs = this.now();
    for (let i = 0; i < windows.length; i++) {
      const window = windows[i] as MaintenanceWindow;
      if (isOn(window, nowMs) && covers(window, name, labels)) return true;
    }
    return false;
  }

  /** The windows in force, for status pages that mark the days they covered. */
  windows(): readonly MaintenanceWindow[] {
    return this.inForce;
  }

  list(): MaintenanceWindowJson[] {
    const nowMs = this.now();
    return this.inForce
      .map((window) => windowToJson(window, this.config.has(window.name) ? 'configuration' : 'api', nowMs))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(name: string): MaintenanceWindowJson | undefined {
    const at = this.position.get(name);
    if (at === undefined) return undefined;
    return windowToJson(
      this.inForce[at] as MaintenanceWindow,
      this.config.has(name) ? 'configuration' : 'api',
      this.now(),
    );
  }

  private put(window: MaintenanceWindow): void {
    const at = this.position.get(window.name);
    if (at !== undefined) {
      this.inForce[at] = window;
      return;
    }
    this.position.set(window.name, this.inForce.length);
    this.inForce.push(window);
  }
}
