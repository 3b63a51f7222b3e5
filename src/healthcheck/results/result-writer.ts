/**
 * The writes of one check's waiting rows (result-store.ts decides when, in which transaction): its history, trimmed
 * to `history-size`; once none is left, its hourly and daily aggregates, its latest result with its state, and its
 * changes of state, trimmed to `max-events-per-check`. Keeps per check what it wrote, so that a trim deletes exactly
 * the rows over the cap without counting them again.
 */
import type { Db } from '../../db/client.ts';
import type { PendingCheck, PendingResults } from './pending-results.ts';
import { prepareResultStatements, type ResultStatements } from './result-statements.ts';
import type { StoredHealth } from '../states/stored-state.ts';
import { type CheckResult, DAILY_RETENTION_S, DAY_S, HOURLY_RETENTION_S } from '../result-types.ts';
import type { StateEvent } from '../states/events.ts';

const DEFAULT_MAX_EVENTS_PER_CHECK = 100_000;

/**
 * Per check: the hour it last wrote an aggregate for (a new hour triggers the pruning of its old aggregates),
 * and how many history rows it has (counted once, then kept up to date), so that trimming deletes exactly the
 * rows over `history-size`, oldest first, without looking at the others.
 */
interface WrittenState {
  hour: number;
  historyRows: number;
  /** -1 until the check first writes a change of state. */
  eventRows: number;
}

interface WriterOptions {
  historySize: number;
  stateOf?: (name: string) => StoredHealth | undefined;
  maxEventsPerCheck?: () => number;
}

export class ResultWriter {
  private readonly statements: ResultStatements;
  /** What the writes keep per check: the hour it last wrote an aggregate for, its history and event rows. */
  private readonly stored = new Map<string, WrittenState>();

  constructor(
    db: Db,
    private readonly pending: PendingResults,
    private readonly options: WriterOptions,
  ) {
    this.statements = prepareResultStatements(db);
  }

  /**
   * Writes up to `maxRows` of a check's waiting raw results, oldest first, into its history (trimmed to
   * history-size); once none is left, its aggregates and its latest result too, and forgets what it had waiting.
   * True when the check is done.
   */
  writeCheck(name: string, check: PendingCheck, maxRows: number): boolean {
    const s = this.statements;
    const state = this.writtenState(name);
    const rows = this.pending.takeOldest(check, maxRows);
    for (let i = 0; i < rows.length; i++) {
      const result = rows[i] as CheckResult;
      s.insertHistory.run(
        name,
        result.success ? 1 : 0,
        result['healthcheck-timestamp'],
        result.duration,
        result.message,
        result.maintenance ? 1 : 0,
        result.node ?? null,
      );
    }
    state.historyRows += rows.length;
    if (state.historyRows > this.options.historySize) {
      s.trimHistory.run(name, state.historyRows - this.options.historySize);
      state.historyRows = this.options.historySize;
    }
    if (check.results.length > 0) return false;
    let newestHour = -1;
    for (const hour of check.hours) {
      this.writeAggregates(name, hour.hour, hour.runs, hour.successes, hour.totalMs, hour.minMs, hour.maxMs);
      if (hour.hour > newestHour) newestHour = hour.hour;
    }
    const latest = check.latest;
    const health = this.options.stateOf?.(name);
    s.upsertResult.run(
      name,
      latest.success ? 1 : 0,
      latest['healthcheck-timestamp'],
      latest.duration,
      latest.message,
      latest.summary,
      latest.labels === undefined ? null : JSON.stringify(latest.labels),
      latest.source,
      latest.maintenance ? 1 : 0,
      latest.node ?? null,
      health?.health ?? null,
      health?.sinceMs ?? null,
      health?.streak ?? 0,
    );
    if (check.events !== null) this.writeEvents(name, check.events, state);
    if (newestHour !== -1 && state.hour !== newestHour) {
      state.hour = newestHour;
      s.pruneUptime.run(name, 'hour', newestHour - HOURLY_RETENTION_S);
      s.pruneUptime.run(name, 'day', newestHour - DAILY_RETENTION_S);
    }
    this.pending.remove(name);
    return true;
  }

  /** What this store knows it wrote of a check, counted from its tables the first time it is asked. */
  private writtenState(name: string): WrittenState {
    let state = this.stored.get(name);
    if (state === undefined) {
      state = { hour: -1, historyRows: (this.statements.countHistory.get(name) as { n: number }).n, eventRows: -1 };
      this.stored.set(name, state);
    }
    return state;
  }

  /** A check's changes of state, and the trim of its oldest beyond `healthchecks.max-events-per-check`. */
  writeEvents(name: string, events: readonly StateEvent[], state = this.writtenState(name)): void {
    const s = this.statements;
    for (const event of events)
      s.insertEvent.run(name, event.atMs, event.from, event.to, event.message, event.node ?? null);
    if (state.eventRows < 0) state.eventRows = (s.countEvents.get(name) as { n: number }).n;
    else state.eventRows += events.length;
    const max = this.options.maxEventsPerCheck?.() ?? DEFAULT_MAX_EVENTS_PER_CHECK;
    if (state.eventRows > max) {
      s.trimEvents.run(name, state.eventRows - max);
      state.eventRows = max;
    }
  }

  /** A change of `name` was written by another path (a pause, a resume): its count is taken again at the next write. */
  recountEvents(name: string): void {
    const state = this.stored.get(name);
    if (state !== undefined) state.eventRows = -1;
  }

  /** Adds one hour's runs of a check to its hourly and daily aggregates (an hour lies within one day). */
  private writeAggregates(
    name: string,
    hour: number,
    runs: number,
    successes: number,
    total: number,
    min: number,
    max: number,
  ): void {
    this.statements.upsertUptime.run(
      name,
      hour,
      runs,
      successes,
      total,
      min,
      max,
      name,
      hour - (hour % DAY_S),
      runs,
      successes,
      total,
      min,
      max,
    );
  }

  /** A write failed and was rolled back: the row counts are read again. */
  clear(): void {
    this.stored.clear();
  }

  /** The checks' rows were deleted. */
  forget(names: readonly string[]): void {
    for (const name of names) this.stored.delete(name);
  }
}
