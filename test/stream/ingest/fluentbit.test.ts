import { describe, expect, it } from 'vitest';
import { IngestError } from '../../../src/stream/ingest/errors.ts';
import { eventsFromFluentBit, type FluentBitRecord } from '../../../src/stream/ingest/fluentbit.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../../src/stream/lang/nesting.ts';
import { streamErrors } from '../../../src/stream/http/routes.ts';

function error(records: FluentBitRecord[]): string {
  try {
    eventsFromFluentBit(records, DEFAULT_MAX_EVENT_DEPTH);
  } catch (caught) {
    expect(caught).toBeInstanceOf(IngestError);
    expect(streamErrors.fromDomainError(caught)?.statusCode).toBe(400);
    return (caught as Error).message;
  }
  throw new Error('decoding did not fail');
}

describe('eventsFromFluentBit', () => {
  it('turns each record into an event, date (double seconds) into time in ns', () => {
    const events = eventsFromFluentBit(
      [
        { date: 1_735_047_872.123456, log: 'GET /', host: 'web-1' },
        { date: 1_735_047_873, cpu_p: 0.5 },
      ],
      DEFAULT_MAX_EVENT_DEPTH,
    );
    expect(events).toEqual([
      { time: Math.round(1_735_047_872.123456 * 1e9), log: 'GET /', host: 'web-1' },
      { time: 1_735_047_873e9, cpu_p: 0.5 },
    ]);
    expect(events[0]?.time).toBeCloseTo(1_735_047_872_123_456_000, -3);
  });

  it('reads iso8601 and java_sql_timestamp dates, and stamps records without date with the receive time', () => {
    const before = Date.now() * 1e6;
    const [iso, sql, none] = eventsFromFluentBit(
      [{ date: '2018-05-30T09:39:52.000681Z' }, { date: '2018-05-30 09:39:52.000681' }, { log: 'x' }],
      DEFAULT_MAX_EVENT_DEPTH,
    );
    expect(iso?.time).toBe(Date.parse('2018-05-30T09:39:52Z') * 1e6 + 681_000);
    expect(sql?.time).toBe(iso?.time);
    expect(none?.time).toBeGreaterThanOrEqual(before);
    expect(none).not.toHaveProperty('date');
  });

  // A body that is not an array of objects is refused by the route's body schema (test/e2e/fluentbit.test.ts).
  it('refuses a date that is not a time, naming the record', () => {
    expect(error([{ date: 'yesterday' }])).toMatch(/^records\[0\]\.date must be epoch seconds .* got "yesterday"$/);
  });
});
