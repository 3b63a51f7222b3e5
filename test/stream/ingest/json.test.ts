import { describe, expect, it } from 'vitest';
import { IngestError } from '../../../src/stream/ingest/errors.ts';
import { streamErrors } from '../../../src/stream/http/routes.ts';
import { eventsFromJsonBody, MAX_EVENT_DEPTH, rfc3339ToNs } from '../../../src/stream/ingest/json.ts';
import { MAX_EVENT_DEPTH_LIMIT } from '../../../src/stream/lang/nesting.ts';

/** The HTTP status the stream routes answer for a decoder's error. */
const statusOf = (error: unknown): number | undefined => streamErrors.fromDomainError(error)?.statusCode;

function rejection(body: unknown): string {
  try {
    eventsFromJsonBody(body, MAX_EVENT_DEPTH);
  } catch (error) {
    expect(error).toBeInstanceOf(IngestError);
    expect(statusOf(error)).toBe(400);
    return (error as Error).message;
  }
  throw new Error('the body was accepted');
}

describe('eventsFromJsonBody', () => {
  it('stamps events without time (missing, null or false) with one current time, and keeps 0 and numbers', () => {
    const before = Date.now() * 1e6;
    const events = eventsFromJsonBody(
      {
        events: [
          { service: 'a' },
          { time: null },
          { time: false },
          { time: 0 },
          { time: 1_735_047_872_000_000_000, metric: 1 },
        ],
      },
      MAX_EVENT_DEPTH,
    );
    const after = Date.now() * 1e6;
    const stamped = events[0]?.time as number;
    expect(stamped).toBeGreaterThanOrEqual(before);
    expect(stamped).toBeLessThanOrEqual(after);
    expect(events.map((event) => event.time)).toEqual([stamped, stamped, stamped, 0, 1_735_047_872_000_000_000]);
    expect(events[4]).toEqual({ time: 1_735_047_872_000_000_000, metric: 1 });
  });

  it('returns the body objects themselves, without copying', () => {
    const event = { host: 'h', time: 5 };
    expect(eventsFromJsonBody({ events: [event] }, MAX_EVENT_DEPTH)[0]).toBe(event);
  });

  it('converts RFC 3339 times to ns, with the fraction to the nanosecond and offsets applied', () => {
    const [utc, offset, nanos, spaced] = eventsFromJsonBody(
      {
        events: [
          { time: '2024-12-24T13:44:32Z' },
          { time: '2024-12-24T15:44:32.5+02:00' },
          { time: '1970-01-01T00:00:01.000000123Z' },
          { time: '1970-01-01 00:00:00.25z' },
        ],
      },
      MAX_EVENT_DEPTH,
    );
    expect(utc?.time).toBe(Date.UTC(2024, 11, 24, 13, 44, 32) * 1e6);
    expect(offset?.time).toBe(Date.UTC(2024, 11, 24, 13, 44, 32, 500) * 1e6);
    expect(nanos?.time).toBe(1_000_000_123);
    expect(spaced?.time).toBe(250_000_000);
    expect(eventsFromJsonBody({ events: [{ time: '1735047872000000000' }] }, MAX_EVENT_DEPTH)[0]?.time).toBe(
      1_735_047_872_000_000_000,
    );
  });

  it('rejects times that are neither numbers nor RFC 3339, naming the index and the field', () => {
    expect(rejection({ events: [{}, { time: 'yesterday' }] })).toMatch(
      /^events\[1\]\.time must be epoch nanoseconds or an RFC 3339 date .*got "yesterday"$/,
    );
    expect(rejection({ events: [{ time: true }] })).toMatch(/^events\[0\]\.time .* got true$/);
    expect(rejection({ events: [{ time: { at: 1 } }] })).toMatch(/got an object$/);
    expect(rejection({ events: [{ time: '2024-13-01T00:00:00Z' }] })).toMatch(/^events\[0\]\.time/);
    expect(rejection({ events: [{ time: '2024-12-24T13:44:32' }] })).toMatch(/^events\[0\]\.time/);
  });

  it('rejects a ttl that is not a number', () => {
    expect(rejection({ events: [{ ttl: 60 }, { ttl: '60' }] })).toBe(
      'events[1].ttl must be a number of seconds, got "60"',
    );
    expect(eventsFromJsonBody({ events: [{ ttl: null, time: 1 }] }, MAX_EVENT_DEPTH)).toEqual([{ ttl: null, time: 1 }]);
  });

  it('rejects a body whose events are not an array of objects', () => {
    expect(rejection({})).toBe('events must be an array of objects');
    expect(rejection({ events: { a: 1 } })).toBe('events must be an array of objects');
    expect(rejection([])).toMatch(/"events"/);
    expect(rejection(null)).toMatch(/"events"/);
    expect(rejection({ events: [{}, {}, 3] })).toBe('events[2] must be an object, got 3');
    expect(rejection({ events: [[1]] })).toBe('events[0] must be an object, got an array');
    expect(rejection({ events: [null] })).toBe('events[0] must be an object, got null');
  });

  it('accepts an empty list', () => {
    expect(eventsFromJsonBody({ events: [] }, MAX_EVENT_DEPTH)).toEqual([]);
  });
});

describe('rfc3339ToNs', () => {
  it('returns null for malformed dates', () => {
    expect(rfc3339ToNs('2024-12-24')).toBeNull();
    expect(rfc3339ToNs('2024-12-24T25:00:00Z')).toBeNull();
    expect(rfc3339ToNs('not a date')).toBeNull();
  });
});

describe('event nesting limit', () => {
  const nested = (depth: number): unknown => {
    let value: unknown = 1;
    for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { a: value } : [value];
    return value;
  };

  it('accepts events nested up to MAX_EVENT_DEPTH (the event included) and refuses deeper ones naming the field and the limit', () => {
    expect(
      eventsFromJsonBody({ events: [{ host: 'a', attributes: nested(MAX_EVENT_DEPTH - 1) }] }, MAX_EVENT_DEPTH),
    ).toHaveLength(1);
    expect(() =>
      eventsFromJsonBody(
        { events: [{ host: 'a' }, { host: 'b', attributes: nested(MAX_EVENT_DEPTH) }] },
        MAX_EVENT_DEPTH,
      ),
    ).toThrow(
      new IngestError(
        `events[1].attributes nests objects and arrays deeper than the limit of ${MAX_EVENT_DEPTH} levels (streams.max-event-depth)`,
      ),
    );
  });

  it('refuses a value 100,000 levels deep at the highest limit the config allows, without going 100,000 calls deep', () => {
    const bomb = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(() => eventsFromJsonBody({ events: [{ host: 'a', tags: bomb }] }, MAX_EVENT_DEPTH_LIMIT)).toThrow(
      new IngestError(
        `events[0].tags nests objects and arrays deeper than the limit of ${MAX_EVENT_DEPTH_LIMIT} levels (streams.max-event-depth)`,
      ),
    );
    expect(
      eventsFromJsonBody({ events: [{ host: 'a', tags: nested(MAX_EVENT_DEPTH_LIMIT - 1) }] }, MAX_EVENT_DEPTH_LIMIT),
    ).toHaveLength(1);
  });
});
