/**
 * The bounded backlog between every input (HTTP routes, Riemann TCP, the healthcheck stream exporter) and the
 * engine. An input submits a batch for a target (a stream name, or `default`) and gets either the outcome once
 * the batch went through, or `'full'` at once when the backlog cannot take it (HTTP answers 503, senders
 * retry). Every refusal is counted by input.
 *
 * With an event log (the journal, `streams.journal: on`), a batch is written to it first and pushed only once
 * the write succeeded: a batch the log refuses (the input answers 503) changed nothing, and an input never
 * acknowledges what a crash could lose (docs/durability.md, "The journal"). The log's group commit settles the
 * batches of one write together and in order; they then wait in the backlog like any other. The gateway tracks how
 * far the engine got in the log: a checkpoint records it.
 */
import { IngestBacklog } from './backlog.ts';
import type { PushResult, StreamEngine, StreamFailure } from './engine.ts';
import { StreamNotFoundError } from './engine.ts';
import { type Event, nowNs } from './event.ts';
import { type EventLog, LOG_START, type LogEntry, type LogPosition, type LogRecord } from './journal.ts';
import { eventsOf, eventsRecord } from './journal-records.ts';

export interface IngestOutcome {
  /** Errors raised by actions while the batch went through (0 when all went well). */
  readonly errorCount: number;
  /** The first of them, to name the stream and the problem. */
  readonly firstFailure: StreamFailure | undefined;
}

/** The sequence number of a batch that is not in the log (`streams.journal: off`): it moves no position. */
const NOT_LOGGED = -1;

export class IngestGateway {
  private readonly backlog: IngestBacklog<PushResult>;
  private appliedSeq = LOG_START.seq;
  private appliedOffset = LOG_START.offset;

  constructor(
    private readonly engine: StreamEngine,
    maxPending: number,
    /** Counts a batch refused because the backlog was full, by input. */
    private readonly onFull: (input: string) => void,
    /** Where acknowledged batches are written first; null: nowhere (`streams.journal: off`). */
    private log: EventLog | null = null,
  ) {
    this.backlog = new IngestBacklog(this.push, maxPending);
  }

  /** The log position of what the engine has taken in so far (what a checkpoint taken now covers). */
  get applied(): LogPosition {
    return { seq: this.appliedSeq, offset: this.appliedOffset };
  }

  /** Sets the log (`streams.journal` reloaded); the applied position restarts from `position`. */
  useLog(log: EventLog | null, position: LogPosition = LOG_START): void {
    this.log = log;
    this.appliedSeq = position.seq;
    this.appliedOffset = position.offset;
  }

  /**
   * Pushes what the log holds after a checkpoint (startup), in order, as it went the first time; returns how many
   * events went through. Entries of streams that no longer exist are skipped. `eventDepth`: the service's
   * `streams.max-event-depth`, which the events read back are checked against; an entry whose events are refused
   * is handed to `refused` and skipped, so that one bad entry never keeps the service from starting.
   */
  replay(entries: Iterable<LogEntry>, eventDepth: number, refused: (entry: LogEntry, problem: string) => void): number {
    let replayed = 0;
    for (const entry of entries) {
      let events: Event[];
      try {
        events = eventsOf(entry, eventDepth);
      } catch (error) {
        refused(entry, (error as Error).message);
        continue;
      }
      if (entry.seq === this.appliedSeq) events = events.slice(this.appliedOffset);
      this.push(entry.target, events, entry.seq, entry.count);
      replayed += events.length;
    }
    return replayed;
  }

  /** Resolves once every batch handed over so far has gone through (call it after the log's `close`: then no write
   *  is left to settle, and what the settled ones hold is queued). */
  idle(): Promise<void> {
    return this.backlog.idle();
  }

  /** Events accepted and not pushed yet. */
  get pending(): number {
    return this.backlog.pending;
  }

  get maxPending(): number {
    return this.backlog.maxPending;
  }

  set maxPending(value: number) {
    this.backlog.maxPending = value;
  }

  /**
   * Queues the events for `target`; `input` names the input for the refusal metric. `record` is what the journal
   * keeps of them when the input has it already encoded (the JSON route's body); by default their JSON.
   */
  submit(target: string, events: Event[], input: string, record?: LogRecord): Promise<IngestOutcome> | 'full' {
    if (this.backlog.isFull(events.length)) {
      this.onFull(input);
      return 'full';
    }
    if (this.log === null)
      return (this.backlog.submit(target, events, NOT_LOGGED) as Promise<PushResult[]>).then(summarize);
    // Counted as pending while the write is in flight, so that the backlog's cap holds those events too.
    this.backlog.reserve(events.length);
    const { seq, durable } = this.log.append(record ?? eventsRecord(target, input, events, nowNs()));
    return durable.then(
      () => this.backlog.enqueue(target, events, seq).then(summarize),
      (error: unknown) => {
        this.backlog.release(events.length);
        throw error;
      },
    );
  }

  private readonly push = (target: string, events: Event[], seq: number, end: number): PushResult => {
    if (seq !== NOT_LOGGED) {
      this.appliedSeq = seq;
      this.appliedOffset = end;
    }
    try {
      return this.engine.push(target, events);
    } catch (error) {
      // The stream was removed while its events waited in the backlog.
      if (error instanceof StreamNotFoundError) return { errors: [{ stream: target, error }], errorCount: 1 };
      throw error;
    }
  };
}

function summarize(results: readonly PushResult[]): IngestOutcome {
  let errorCount = 0;
  let firstFailure: StreamFailure | undefined;
  for (const result of results) {
    errorCount += result.errorCount;
    firstFailure ??= result.errors[0];
  }
  return { errorCount, firstFailure };
}

/** What to tell the sender of a batch whose actions failed: the stream, the first error, how many. */
export function describeFailures(target: string, outcome: IngestOutcome): string {
  const { firstFailure: first, errorCount: count } = outcome;
  const detail = first ? `Stream ${first.stream}: ${first.error.message}` : `Stream ${target}: an action failed`;
  return count > 1 ? `${detail} (${count} errors in this batch)` : detail;
}
