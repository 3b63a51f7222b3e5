/**
 * Bodies of `POST /api/v1/fluentbit/:name`: what Fluent Bit's `http` output sends with `format json`, a JSON
 * array of records, each carrying its timestamp under `date` (`json_date_key`). Each record becomes an event
 * (the parsed object itself, no copy): `date` is removed and becomes `time` in ns. `json_date_format` `double`
 * (the default) and `epoch` are seconds; `iso8601` and `java_sql_timestamp` (UTC, no offset) are dates. A record
 * without `date` (`json_date_key false`) gets the receive time. Mirabelle kept seconds in `time`: fixed here. A record
 * is otherwise free-form, but it must be an event the streams can keep (src/stream/event.ts).
 */
import { type Event, eventsProblem, nowNs } from '../event.ts';
import { IngestError } from './errors.ts';
import { rfc3339ToNs } from './json.ts';

const DATE_KEY = 'date';
const NO_OFFSET = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?$/;

/** A record as the route's body schema admits it (src/stream/http/routes.ts): an object, `date` a number, a string or
 *  null. */
export type FluentBitRecord = Event & { date?: number | string | null };

/** `eventDepth`: `streams.max-event-depth`. The records are checked as events once stamped (a `ttl` a number, no value
 *  nested past the limit): what is taken here is what the journal replays and the cluster's log carries. */
export function eventsFromFluentBit(records: FluentBitRecord[], eventDepth: number): Event[] {
  let now = -1;
  for (const [i, event] of records.entries()) {
    const date = event[DATE_KEY];
    if (date === undefined || date === null) {
      if (now < 0) now = nowNs();
      event.time = now;
    } else {
      event.time = dateToNs(date, i);
    }
    delete event[DATE_KEY];
  }
  const problem = eventsProblem(records, { eventDepth, timed: true, fromJson: true });
  if (problem !== null) throw new IngestError(problem.replace(/^events/, 'records'));
  return records;
}

function dateToNs(date: number | string, index: number): number {
  if (typeof date === 'number' && Number.isFinite(date)) return Math.round(date * 1e9);
  if (typeof date === 'string') {
    const ns = rfc3339ToNs(NO_OFFSET.test(date) ? `${date}Z` : date);
    if (ns !== null) return ns;
  }
  throw new IngestError(
    `records[${index}].date must be epoch seconds (json_date_format double or epoch) or an ISO 8601 date, got ${JSON.stringify(date)}`,
  );
}
