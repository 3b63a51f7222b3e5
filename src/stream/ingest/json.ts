/**
 * Bodies of `PUT /api/v1/stream/:name`: `{"events": [...]}`. The events are the parsed body's own objects,
 * checked and stamped in place (no copy): `time` missing, null or false becomes now (one reading of the clock
 * per request, so a batch shares one time), an RFC 3339 string becomes epoch ns, a decimal string becomes a
 * number; `ttl`, when present, must be a number. Accepted values that are likely mistakes are reported through
 * `PushWarnings`.
 */
import { type Event, nowNs } from '../event.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../nesting.ts';
import { IngestError } from './errors.ts';
import type { PushWarnings } from './push-warnings.ts';

/** The default of `streams.max-event-depth`: values inside an event nest at most this deep (objects and arrays,
 *  the event included), so that nothing that walks an event recurses without bound (src/stream/nesting.ts). */
export const MAX_EVENT_DEPTH = DEFAULT_MAX_EVENT_DEPTH;
/** The input name of a JSON push (`PUT /api/v1/stream/:name`): its events are JSON values, checked here. */
export const JSON_PUSH_INPUT = 'stream';

/**
 * True when `value` nests objects or arrays more than `limit` levels deep. Recursive, but never more than `limit`
 * calls deep (`streams.max-event-depth`, at most 100), whatever the value's depth. A queue of [value, depth] pairs
 * cost an allocation per nested value: 14 times the time of this on events with a `tags` array.
 */
function nestsDeeperThan(value: object, limit: number): boolean {
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
 * booleans and null, for events a decoder other than JSON.parse gave. MessagePack (the cluster's event log) can
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

/** The problem with `value` at `path`, which `onlyJson` refused: where under it the first value JSON cannot hold
 *  is, and what that value is. */
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

/** `eventDepth`: `streams.max-event-depth` of the service that decodes (src/stream/nesting.ts). `warnings`, when
 *  given, collects the likely mistakes that are accepted (epoch seconds as `time`, a numeric string as `metric`).
 *  `now` stamps the events without a time (read from the clock once when not given; a journal replay gives the
 *  time of the first push). `jsonOnly`: the events come from another decoder than JSON.parse, and what JSON cannot
 *  hold is refused too (`onlyJson`). */
export function eventsFromJsonBody(
  body: unknown,
  eventDepth: number,
  warnings?: PushWarnings,
  now = -1,
  jsonOnly = false,
): Event[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new IngestError('the body must be a JSON object with an "events" field');
  }
  const events = (body as { events?: unknown }).events;
  if (!Array.isArray(events)) throw new IngestError('events must be an array of objects');
  for (let i = 0; i < events.length; i++) {
    const event: unknown = events[i];
    if (typeof event !== 'object' || event === null || Array.isArray(event)) {
      throw new IngestError(`events[${i}] must be an object, got ${describe(event)}`);
    }
    if (jsonOnly && Object.getPrototypeOf(event) !== Object.prototype)
      throw new IngestError(notJsonProblem(`events[${i}]`, event));
    const fields = event as Event;
    for (const key in fields) {
      const value: unknown = fields[key];
      if (typeof value === 'object' && value !== null) {
        if (nestsDeeperThan(value, eventDepth - 1)) {
          throw new IngestError(
            `events[${i}].${key} nests objects and arrays deeper than the limit of ${eventDepth} levels (streams.max-event-depth)`,
          );
        }
        if (jsonOnly && !onlyJson(value)) throw new IngestError(notJsonProblem(`events[${i}].${key}`, value));
      }
    }
    const time: unknown = fields.time;
    if (typeof time !== 'number') {
      if (time === undefined || time === null || time === false) {
        if (now < 0) now = nowNs();
        fields.time = now;
      } else {
        fields.time = timeFromValue(time, i);
      }
    }
    if (warnings !== undefined) {
      warnings.checkTime(i, fields.time as number);
      if (typeof fields.metric === 'string') warnings.checkMetric(i, fields.metric);
    }
    const ttl: unknown = fields.ttl;
    if (ttl !== undefined && ttl !== null && typeof ttl !== 'number') {
      throw new IngestError(`events[${i}].ttl must be a number of seconds, got ${describe(ttl)}`);
    }
  }
  return events as Event[];
}

function timeFromValue(time: unknown, index: number): number {
  if (typeof time === 'string') {
    const ns = /^-?\d+(\.\d+)?$/.test(time) ? Number(time) : rfc3339ToNs(time);
    if (ns !== null) return ns;
  }
  throw new IngestError(
    `events[${index}].time must be epoch nanoseconds or an RFC 3339 date such as "2024-12-24T13:44:32.5Z", got ${describe(time)}`,
  );
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9})\d*)?([Zz]|[+-]\d{2}:\d{2})$/;

/** RFC 3339 to epoch ns with the fraction kept to the nanosecond (Date alone stops at the millisecond). */
export function rfc3339ToNs(text: string): number | null {
  const match = RFC3339.exec(text);
  if (!match) return null;
  const [, date, clock, fraction = '', offset = 'Z'] = match;
  const [month, day, hour, minute, second] = [
    date?.slice(5, 7),
    date?.slice(8, 10),
    clock?.slice(0, 2),
    clock?.slice(3, 5),
    clock?.slice(6, 8),
  ].map(Number);
  if (
    !inRange(month, 1, 12) ||
    !inRange(day, 1, 31) ||
    !inRange(hour, 0, 23) ||
    !inRange(minute, 0, 59) ||
    !inRange(second, 0, 60)
  ) {
    return null;
  }
  const ms = Date.parse(`${date}T${clock}${offset.toUpperCase()}`);
  if (Number.isNaN(ms)) return null;
  return ms * 1e6 + Number(fraction.padEnd(9, '0'));
}

function inRange(value: number | undefined, min: number, max: number): boolean {
  return value !== undefined && value >= min && value <= max;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}
