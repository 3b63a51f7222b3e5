/**
 * The bounded backlog between every input (HTTP routes, Riemann TCP, the healthcheck stream exporter) and the
 * engine. An input submits a batch for a target (a stream name, or `default`) and gets either the outcome once
 * the batch went through, or `'full'` at once when the backlog cannot take it (HTTP answers 503, senders
 * retry). Every refusal is counted by input.
 *
 * With an event log (the journal, `streams.journal: on`), a batch is written to it first and pushed only once
 * the write succeeded: a batch the log refuses (the input answers 503) changed nothing, and an input never
 * acknowledges what a crash could lose (docs/durability.md, "The journal"). The log's group commit settles the
 * batches of one write together and in order; they then wait in the backlog like any other, and go through the
 * node's partition (src/stream/partition/partition.ts), which records how far it got in the log for its checkpoints.
 */
import { IngestBacklog } from './backlog.ts';
import { type Event, nowNs } from '../event.ts';
import type { AppliedBatch, LogReader, LogRecord } from '../durability/event-log.ts';
import type { EventLog } from '../durability/journal.ts';
import type { IngestOutcome } from './placement.ts';
import { eventsRecord } from '../durability/journal-records.ts';

/** The sequence number of a batch that is not in the log (`streams.journal: off`): it moves no position. */
const NOT_LOGGED = -1;

export class IngestGateway {
  private readonly backlog: IngestBacklog<AppliedBatch>;

  constructor(
    /** Where the batches go through: the node's partition (src/stream/partition/partition.ts). */
    private readonly partition: LogReader,
    maxPending: number,
    /** Counts a batch refused because the backlog was full, by input. */
    private readonly onFull: (input: string) => void,
    /** Where acknowledged batches are written first; null: nowhere (`streams.journal: off`). */
    private log: EventLog | null = null,
  ) {
    this.backlog = new IngestBacklog(this.push, maxPending);
  }

  /** Sets the log (`streams.journal` reloaded). */
  useLog(log: EventLog | null): void {
    this.log = log;
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
      return (this.backlog.submit(target, events, NOT_LOGGED) as Promise<AppliedBatch[]>).then(summarize);
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

  private readonly push = (target: string, events: Event[], seq: number, end: number): AppliedBatch =>
    this.partition.apply(seq === NOT_LOGGED ? null : { seq, offset: end }, target, events);
}

function summarize(results: readonly AppliedBatch[]): IngestOutcome {
  let errorCount = 0;
  let firstFailure: IngestOutcome['firstFailure'];
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
