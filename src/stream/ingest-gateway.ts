/**
 * The bounded backlog between every input (the HTTP routes today; TCP inputs next) and the engine. An input
 * submits a batch for a target (a stream name, or `default`) and gets either the outcome once the batch went
 * through, or `'full'` at once when the backlog cannot take it (HTTP answers 503, senders retry). Every refusal
 * is counted by input.
 */
import { IngestBacklog } from './backlog.ts';
import type { PushResult, StreamEngine, StreamFailure } from './engine.ts';
import { StreamNotFoundError } from './engine.ts';
import type { Event } from './event.ts';

export interface IngestOutcome {
  /** Errors raised by actions while the batch went through (0 when all went well). */
  readonly errorCount: number;
  /** The first of them, to name the stream and the problem. */
  readonly firstFailure: StreamFailure | undefined;
}

export class IngestGateway {
  private readonly backlog: IngestBacklog<PushResult>;

  constructor(
    private readonly engine: StreamEngine,
    maxPending: number,
    /** Counts a batch refused because the backlog was full, by input. */
    private readonly onFull: (input: string) => void,
  ) {
    this.backlog = new IngestBacklog(this.push, maxPending);
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

  /** Queues the events for `target`; `input` names the input for the refusal metric. */
  submit(target: string, events: Event[], input: string): Promise<IngestOutcome> | 'full' {
    const pending = this.backlog.submit(target, events);
    if (pending === null) {
      this.onFull(input);
      return 'full';
    }
    return pending.then(summarize);
  }

  private readonly push = (target: string, events: Event[]): PushResult => {
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
