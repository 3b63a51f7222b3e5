/**
 * Bodies of `PUT /api/v1/stream/:name`: `{"events": [...]}`. The events are the parsed body's own objects,
 * checked and stamped in place (no copy): `time` missing, null or false becomes now (one reading of the clock
 * per request, so a batch shares one time), an RFC 3339 string becomes epoch ns, a decimal string becomes a
 * number; `ttl`, when present, must be a number. Accepted values that are likely mistakes are reported through
 * `PushWarnings`.
 */
import { describeValue as describe, type Event, nestsDeeperThan, nowNs, tooDeep, ttlProblem } from '../event.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../lang/nesting.ts';
import { IngestError } from './errors.ts';
import type { PushWarnings } from './push-warnings.ts';

/** The default of `streams.max-event-depth`: values inside an event nest at most this deep (objects and arrays,
 *  the event included), so that nothing that walks an event recurses without bound (src/stream/lang/nesting.ts). */
export const MAX_EVENT_DEPTH = DEFAULT_MAX_EVENT_DEPTH;
/** The input name of a JSON push (`PUT /api/v1/stream/:name`): its events are JSON values, checked here. */
export const JSON_PUSH_INPUT = 'stream';

/** `eventDepth`: `streams.max-event-depth` of the service that decodes (src/stream/lang/nesting.ts). `warnings`, when
 *  given, collects the likely mistakes that are accepted (epoch seconds as `time`, a numeric string as `metric`).
 *  `now` stamps the events without a time (read from the clock once when not given; a journal replay gives the
 *  time of the first push). The events are JSON.parse's: they hold nothing JSON cannot (src/stream/event.ts
 *  `eventsProblem` is the check of events read back, which never stamps or converts them). */
export function eventsFromJsonBody(body: unknown, eventDepth: number, warnings?: PushWarnings, now = -1): Event[] {
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
    const fields = event as Event;
    for (const key in fields) {
      const value: unknown = fields[key];
      if (typeof value === 'object' && value !== null) {
        if (nestsDeeperThan(value, eventDepth - 1)) throw new IngestError(tooDeep(i, key, eventDepth));
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
      throw new IngestError(ttlProblem(i, ttl));
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
