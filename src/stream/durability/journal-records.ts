/**
 * What the inputs write to the journal and how a replay reads it back (docs/durability.md, "The journal"). The
 * JSON push route writes its body as received (parsing and stamping it again at replay costs nothing while the
 * service runs, where encoding every event again would); every other input writes its decoded events as JSON.
 */
import { type Event, eventsProblem } from '../event.ts';
import { IngestError } from '../ingest/errors.ts';
import { eventsFromJsonBody } from '../ingest/json.ts';
import type { LogRecord } from './event-log.ts';
import type { LogEntry } from './event-log.ts';

/** A batch as the events the input decoded (remote-write, OTLP, Fluent Bit, Riemann TCP, the stream exporter). */
export function eventsRecord(target: string, input: string, events: readonly Event[], receivedAtNs: number): LogRecord {
  return {
    target,
    input,
    format: 'events',
    receivedAtNs,
    count: events.length,
    payload: Buffer.from(JSON.stringify(events)),
  };
}

/** A `PUT /api/v1/stream/<name>` body as received; its events without a time were stamped `receivedAtNs`. */
export function jsonBodyRecord(target: string, body: Buffer, count: number, receivedAtNs: number): LogRecord {
  return { target, input: 'stream', format: 'json-body', receivedAtNs, count, payload: body };
}

/**
 * The events of a journal entry, as they were pushed when it was written: what is read back from the disk is not
 * trusted (docs/durability.md, "Damage"), under the reader's `streams.max-event-depth`. A JSON body is decoded as
 * the push route decoded it (it is the body as received); the events of every other input are checked as events
 * already taken (src/stream/event.ts), never decoded as a body again. Throws an IngestError naming the problem.
 */
export function eventsOf(entry: LogEntry, eventDepth: number): Event[] {
  const parsed: unknown = JSON.parse(entry.payload.toString('utf8'));
  if (entry.format === 'json-body')
    return eventsFromJsonBody(parsed, eventDepth, undefined, entry.receivedAtNs > 0 ? entry.receivedAtNs : -1);
  const problem = eventsProblem(parsed, { eventDepth, timed: true, fromJson: true });
  if (problem !== null) throw new IngestError(problem);
  return parsed as Event[];
}
