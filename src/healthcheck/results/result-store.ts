/**
 * The results of the healthcheck part in SQLite: the latest result of every check, the last `history-size` raw
 * results per check, and the hourly / daily aggregates they add to. Knows nothing of HTTP or of scheduling.
 *
 * Results wait in memory (src/healthcheck/results/pending-results.ts: at most `history-size` raw results per check,
 * `max-pending-results` and `max-pending-bytes` in all, every run summed in its hour) and are written per check in
 * groups: every 2 s (the service's beat, src/common/beat.ts), the checks whose oldest waiting result is `writeDelayS`
 * old have what they hold written (and everything at stop, before a mutation, and as soon as the cap is reached). A
 * group of n results of one check costs one history insert per result but one trim, one latest-result upsert and one
 * aggregate upsert per hour, and it dirties the check's pages once: SQLite's cost is per page written, so a group of 3
 * costs about half of 3 single writes (docs/performance.md, "Result writes"). The periodic writes go in slices of at
 * most 8 ms, one transaction each, with the event loop free between two (docs/hardening.md, "Heartbeat floods").
 * Everything stays bounded: history is trimmed per check as it is written, and a check's aggregates older than
 * their retention are pruned when the check opens a new hour.
 * The reads (history-reads.ts, uptime-reads.ts) merge the waiting results into what the database holds, so a read
 * never forces a write. What one check's write puts in which table is result-writer.ts's.
 */
import { getTableName, inArray } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { BEAT_MS, type BeatTimer, everyBeat } from '../../common/beat.ts';
import {
  healthcheckEvents,
  healthcheckHistory,
  healthcheckResults,
  healthcheckUptime,
  heartbeatReports,
} from '../../db/schema.ts';
import { type FoldReason, PendingResults } from './pending-results.ts';
import { ResultWriter } from './result-writer.ts';
import type { StoredHealth, StoredState } from '../states/stored-state.ts';
import type { CheckResult } from '../result-types.ts';
import type { StateEvent } from '../states/events.ts';
import type { Health } from '../states/machine.ts';

/** `healthchecks.max-pending-results`: raw results held for all checks until they are written. */
export const DEFAULT_MAX_PENDING_RESULTS = 100_000;
/** `healthchecks.max-pending-bytes`: the bytes of their messages. */
export const DEFAULT_MAX_PENDING_BYTES = 64 * 1024 * 1024;
/** A slice of the periodic writes holds the event loop about this long, then commits and yields. */
const DEFAULT_SLICE_MS = 8;
/** Rows of one check written between two looks at the clock. */
const ROWS_PER_STEP = 256;

export interface RepositoryOptions {
  historySize: number;
  /** How often the due groups are written: every BEAT_MS (2 s) unless set. */
  flushIntervalMs?: number;
  /** A check's results are written once its oldest waiting one is this old (`healthchecks.write-delay`). */
  writeDelayS?: number;
  /** Raw results held for all checks (`healthchecks.max-pending-results`); everything is written when reached. */
  maxPendingResults?: number;
  /** The bytes of their messages (`healthchecks.max-pending-bytes`); the same when reached. */
  maxPendingBytes?: number;
  /** Unix seconds; injectable for tests. */
  nowS?: () => number;
  /** How long a slice of the periodic writes may hold the event loop (8 ms); a slice writes one step at least. */
  sliceMs?: number;
  /** A periodic write failed (disk full, database locked for too long); the slice is lost. */
  onFlushError?: (error: unknown) => void;
  /** A raw result was not kept (its run still counts in the aggregates). */
  onFolded?: (reason: FoldReason) => void;
  /** A check's state when its latest result is written (src/healthcheck/states/), kept beside it for restarts. */
  stateOf?: (name: string) => StoredHealth | undefined;
  /** `healthchecks.max-events-per-check`: a check's oldest changes of state beyond it are deleted as it writes. */
  maxEventsPerCheck?: () => number;
}

export class ResultStore {
  readonly pending: PendingResults;
  private flushTimer: BeatTimer | null = null;
  private started = false;
  /** The writes under way (`all`: every waiting check, not only the due ones) and their end, or none. */
  private round: { all: boolean; done: Promise<void> } | null = null;
  /** The writes of one check's rows. */
  private readonly writer: ResultWriter;
  private readonly flushIntervalMs: number;
  private readonly writeDelayS: number;
  private readonly nowS: () => number;
  private readonly writeAll: () => void;
  private readonly writeSliceOf: (all: boolean, cutoffS: number) => boolean;
  private readonly writeEventAlone: (name: string, event: StateEvent) => void;

  constructor(
    private readonly db: Db,
    private readonly options: RepositoryOptions,
  ) {
    this.flushIntervalMs = options.flushIntervalMs ?? BEAT_MS;
    this.writeDelayS = options.writeDelayS ?? 0;
    this.nowS = options.nowS ?? (() => Math.floor(Date.now() / 1000));
    this.pending = new PendingResults(
      options.historySize,
      {
        maxResults: options.maxPendingResults ?? DEFAULT_MAX_PENDING_RESULTS,
        maxBytes: options.maxPendingBytes ?? DEFAULT_MAX_PENDING_BYTES,
      },
      options.onFolded ?? (() => undefined),
    );
    this.writer = new ResultWriter(db, this.pending, options);
    this.writeAll = this.db.$client.transaction(() => {
      for (const [name, check] of this.pending.entries()) this.writer.writeCheck(name, check, Infinity);
    });
    this.writeSliceOf = this.db.$client.transaction((all: boolean, cutoffS: number) => this.writeSlice(all, cutoffS));
    this.writeEventAlone = this.db.$client.transaction((name: string, event: StateEvent) =>
      this.writer.writeEvents(name, [event]),
    );
  }

  /** Starts the periodic writes: they tick while results wait, so that an idle service is not woken for nothing
   *  (docs/performance.md, "An idle service"). */
  start(): void {
    this.started = true;
    if (!this.pending.empty) this.armFlush();
  }

  private armFlush(): void {
    if (this.flushTimer !== null) return;
    this.flushTimer = everyBeat(this.flushIntervalMs, () => {
      const [oldest] = this.pending.entries();
      if (oldest === undefined) {
        this.flushTimer?.cancel();
        this.flushTimer = null;
        return;
      }
      if (oldest[1].sinceS <= this.nowS() - this.writeDelayS) void this.writeDue();
    });
  }

  /** Writes what is waiting and stops the periodic writes. */
  stop(): void {
    this.started = false;
    this.flushTimer?.cancel();
    this.flushTimer = null;
    this.round = null;
    this.flush();
  }

  // Results

  loadResults(): CheckResult[] {
    const rows = this.db.select().from(healthcheckResults).all();
    return rows.map((row) => ({
      name: row.name,
      summary: row.summary,
      ...(row.labels !== null && Object.keys(row.labels as object).length > 0
        ? { labels: row.labels as Record<string, string> }
        : {}),
      success: row.success,
      'healthcheck-timestamp': row.timestampS,
      message: row.message,
      duration: row.durationMs,
      source: row.source,
      ...(row.maintenance ? { maintenance: true as const } : {}),
      ...(row.node !== null ? { node: row.node } : {}),
    }));
  }

  /**
   * Keeps a result for the next write of its check; at the cap, every waiting check is written (in slices). `state`
   * is what the result makes the check's latest result and its uptime count: itself, or the state of a check with
   * locations (docs/checks.md "Locations").
   */
  record(result: CheckResult, state: CheckResult = result): void {
    this.pending.add(result, state);
    if (this.started) this.armFlush();
    if (this.pending.full) void this.startRound(true);
  }

  /** Writes the due checks in slices (the periodic writes); resolves when none is left. */
  writeDue(): Promise<void> {
    return this.startRound(false);
  }

  /** Drops the waiting results of checks that were just removed, so that no write brings them back. */
  dropBuffered(names: ReadonlySet<string>): void {
    for (const name of names) this.pending.remove(name);
  }

  /** Writes every waiting result now, in one transaction (stop, and before a mutation of the checks). */
  flush(): void {
    if (!this.pending.empty) this.writeAll();
  }

  private startRound(all: boolean): Promise<void> {
    if (this.round !== null) {
      this.round.all ||= all;
      return this.round.done;
    }
    let end = () => {};
    const round = { all, done: new Promise<void>((resolve) => (end = resolve)) };
    this.round = round;
    const next = () => {
      if (this.round !== round) return end();
      let more = false;
      try {
        more = this.writeSliceOf(round.all, this.nowS() - this.writeDelayS);
      } catch (error) {
        // The slice is rolled back and what it took is lost; the row counts are read again.
        this.writer.clear();
        this.options.onFlushError?.(error);
      }
      if (more) return setImmediate(next);
      this.round = null;
      end();
    };
    setImmediate(next);
    return round.done;
  }

  /**
   * One slice of a round, in its transaction: the due checks (every waiting one when `all`), oldest first, until
   * about `sliceMs` have passed; a check with many rows may be written over several slices. A slice writes one
   * step at least, so that a pause (GC) between reading the clock and the first step cannot stall the round.
   * True when some are left.
   */
  private writeSlice(all: boolean, cutoffS: number): boolean {
    const deadline = performance.now() + (this.options.sliceMs ?? DEFAULT_SLICE_MS);
    let wrote = false;
    for (const [name, check] of this.pending.entries()) {
      if (!all && check.sinceS > cutoffS) return false;
      if (wrote && performance.now() >= deadline) return true;
      while (!this.writer.writeCheck(name, check, ROWS_PER_STEP)) {
        if (performance.now() >= deadline) return true;
      }
      wrote = true;
    }
    return false;
  }

  /**
   * A change of state a result of `name` made: written with the check's waiting results (recorded just before), or
   * now when none waits.
   */
  addEvent(name: string, event: StateEvent): void {
    if (this.pending.addEvent(name, event)) return;
    // Counted and trimmed as the batched path does: a change written alone once left the count behind, and a
    // flapping check past the cap was never trimmed back to it.
    this.writeEventAlone(name, event);
  }

  /** A change of `name` was written by another path (a pause, a resume): its count is taken again at the next write. */
  recountEvents(name: string): void {
    this.writer.recountEvents(name);
  }

  /** Every check's stored state, with what its latest result was (a restart restores the states from them). */
  loadStates(): StoredState[] {
    const rows = this.db.$client
      .prepare<[], [string, string | null, number | null, number, number, number, string]>(
        `select name, state, state_since_ms, state_streak, maintenance, timestamp_s, message from ${getTableName(healthcheckResults)}`,
      )
      .raw()
      .all();
    const states: StoredState[] = [];
    for (const [name, health, sinceMs, streak, maintenance, timestampS, message] of rows) {
      // A row written before states existed: the check starts afresh.
      if (health === null || sinceMs === null) continue;
      states.push({
        name,
        health: health as Health,
        sinceMs,
        streak,
        maintenance: maintenance === 1,
        timestampS,
        message,
      });
    }
    return states;
  }

  /** Every name with something stored: results, or a heartbeat report (committed at once, its result later). */
  storedNames(): Set<string> {
    const names = new Set(
      this.db
        .select({ name: healthcheckResults.name })
        .from(healthcheckResults)
        .all()
        .map((row) => row.name),
    );
    for (const row of this.db.select({ name: heartbeatReports.name }).from(heartbeatReports).all()) names.add(row.name);
    return names;
  }

  /** Deletes the results, history, aggregates, changes of state and heartbeat report of checks, inside the caller's
   *  transaction. */
  forget(tx: Pick<Db, 'delete'>, names: readonly string[]): void {
    for (const chunk of chunks(names)) {
      tx.delete(healthcheckResults).where(inArray(healthcheckResults.name, chunk)).run();
      tx.delete(healthcheckHistory).where(inArray(healthcheckHistory.name, chunk)).run();
      tx.delete(healthcheckUptime).where(inArray(healthcheckUptime.name, chunk)).run();
      tx.delete(heartbeatReports).where(inArray(heartbeatReports.name, chunk)).run();
      tx.delete(healthcheckEvents).where(inArray(healthcheckEvents.name, chunk)).run();
    }
    this.writer.forget(names);
  }
}

/** SQLite limits bound parameters per statement; 500 names per `in (...)` stays well below. */
export function* chunks<T>(items: readonly T[], size = 500): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
