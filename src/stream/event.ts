/**
 * The event model of the stream engine. An event is a free-form JSON object; the conventional fields are
 * typed here. `time` is epoch nanoseconds in a JS number (values near today's epoch round to 256 ns, which
 * is accepted and documented), `ttl` is seconds.
 */
export interface Event {
  host?: string;
  service?: string;
  name?: string;
  state?: string;
  metric?: number | null;
  time?: number;
  ttl?: number;
  description?: string;
  tags?: string[];
  attributes?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What flows from an action to its children: one event, or a list of events (windows, `coll-*`), or
 *  nil (Mirabelle passes nil on, e.g. `coll-max` of a list without metrics). */
export type Emission = Event | Event[] | null;

/** One event rather than a list or nil: what the actions that take single events keep. */
export function isEvent(emission: Emission): emission is Event {
  return emission !== null && !Array.isArray(emission);
}

const DEFAULT_TTL_SECONDS = 120;
export const NS_PER_SECOND = 1e9;

/** Mirabelle's expiry rule with the unit bug fixed: `ttl` is seconds. */
export function isExpired(clockNs: number, event: Event): boolean {
  if (event.state === 'expired') return true;
  const time = event.time;
  if (typeof time !== 'number') return false;
  const ttl = typeof event.ttl === 'number' ? event.ttl : DEFAULT_TTL_SECONDS;
  return clockNs - time > ttl * NS_PER_SECOND;
}

/** Wall-clock now in epoch ns, used only at ingestion (actions never read the wall clock). */
export function nowNs(): number {
  return Date.now() * 1e6;
}

/**
 * The shape of an event wherever one is read back rather than decoded from an input (docs/architecture.md, "The
 * flow of an event"): an object holding only what JSON can hold (plain objects and arrays, strings, numbers,
 * booleans, null), nested at most `eventDepth` levels (`streams.max-event-depth`, the event included), its `ttl` a
 * number of seconds when present and, with `timed`, its `time` a number of epoch ns. Each input checks what it
 * decodes to this once, when it takes the events (src/stream/ingest/); what comes back from the cluster's event
 * log, a checkpoint, another node or the journal is checked against it again, as untrusted, and never decoded as
 * an input's body a second time. `fromJson`: the values come from JSON.parse, which cannot give anything else JSON
 * cannot hold, so that walk is skipped.
 */
export interface EventCheck {
  readonly eventDepth: number;
  readonly timed?: boolean;
  readonly fromJson?: boolean;
}

/** Why `values` are not events of that shape (the first problem, naming the event and field), or null. */
export function eventsProblem(values: unknown, check: EventCheck): string | null {
  if (!Array.isArray(values)) return 'events must be an array of objects';
  const { eventDepth, timed = false, fromJson = false } = check;
  for (let i = 0; i < values.length; i++) {
    const event: unknown = values[i];
    if (typeof event !== 'object' || event === null || Array.isArray(event))
      return `events[${i}] must be an object, got ${describeValue(event)}`;
    if (!fromJson && Object.getPrototypeOf(event) !== Object.prototype) return notJsonProblem(`events[${i}]`, event);
    const fields = event as Record<string, unknown>;
    for (const key in fields) {
      const value = fields[key];
      if (typeof value !== 'object' || value === null) continue;
      if (nestsDeeperThan(value, eventDepth - 1)) return tooDeep(i, key, eventDepth);
      if (!fromJson && !onlyJson(value)) return notJsonProblem(`events[${i}].${key}`, value);
    }
    const time = fields.time;
    if (typeof time === 'number' ? !Number.isFinite(time) : timed || (time !== undefined && time !== null))
      return `events[${i}].time must be a number of epoch nanoseconds, got ${describeValue(time)}`;
    const ttl = fields.ttl;
    if (ttl !== undefined && ttl !== null && typeof ttl !== 'number') return ttlProblem(i, ttl);
  }
  return null;
}

/** The problem of a field nesting past `streams.max-event-depth`. */
export function tooDeep(index: number, key: string, eventDepth: number): string {
  return `events[${index}].${key} nests objects and arrays deeper than the limit of ${eventDepth} levels (streams.max-event-depth)`;
}

/** The problem of a `ttl` that is not a number of seconds. */
export function ttlProblem(index: number, ttl: unknown): string {
  return `events[${index}].ttl must be a number of seconds, got ${describeValue(ttl)}`;
}

/**
 * True when `value` nests objects or arrays more than `limit` levels deep. Recursive, but never more than `limit`
 * calls deep (`streams.max-event-depth`, at most 100), whatever the value's depth. A queue of [value, depth] pairs
 * cost an allocation per nested value: 14 times the time of this on events with a `tags` array.
 */
export function nestsDeeperThan(value: object, limit: number): boolean {
  if (limit < 1) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child: unknown = value[i];
      if (typeof child === 'object' && child !== null && nestsDeeperThan(child, limit - 1)) return true;
    }
    return false;
  }
  for (const key in value) {
    const child: unknown = (value as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null && nestsDeeperThan(child, limit - 1)) return true;
  }
  return false;
}

/**
 * Whether `value` (an object or array) holds only what JSON can: plain objects and arrays, strings, numbers,
 * booleans and null, for values a decoder other than JSON.parse gave. MessagePack (the cluster's event log) can
 * also hold a date, a binary string or an extension's object. The walk is bounded as `nestsDeeperThan`'s, which
 * runs first. `undefined` passes: JSON drops such a field, and no code here tells the two apart.
 */
function onlyJson(value: object): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' && item !== null && !onlyJson(item)) return false;
    }
    return true;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key in value) {
    const item: unknown = (value as Record<string, unknown>)[key];
    if (typeof item === 'object' && item !== null && !onlyJson(item)) return false;
  }
  return true;
}

/** Where under `value` (at `path`) the first value JSON cannot hold is, and what that value is. */
function notJsonProblem(path: string, value: object): string {
  const items: [string, unknown][] = Array.isArray(value)
    ? value.map((item, i) => [`[${i}]`, item])
    : Object.getPrototypeOf(value) === Object.prototype
      ? Object.entries(value).map(([key, item]) => [`.${key}`, item])
      : [];
  for (const [step, item] of items) {
    if (typeof item === 'object' && item !== null && !onlyJson(item)) return notJsonProblem(`${path}${step}`, item);
  }
  return `${path} is a ${Object.prototype.toString.call(value).slice(8, -1)}, which JSON cannot hold`;
}

/** A value as an error message names it. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}
