/**
 * The results of the healthcheck part in SQLite: the latest result of every check, the last `history-size` raw
 * results per check, and the hourly / daily aggregates they add to. Knows nothing of HTTP or of scheduling.
 *
 * Results are buffered and written per
 * check in groups: once a second, the checks whose oldest buffered result is `writeDelayS` old have all their
 * buffered results written, in one transaction for all of them (and everything is written at stop, before a
 * mutation, and when `maxBuffered` results wait). A group of n results of one check costs one history insert per
 * result but one trim, one latest-result upsert and one aggregate upsert, and it dirties the check's pages once:
 * SQLite's cost is per page written, so a group of 3 costs about half of 3 single writes (docs/performance.md,
 * "Result writes"). Everything stays bounded: history is trimmed per check in the same transaction, and a check's
 * aggregates older than their retention are pruned when the check opens a new hour.
 * Reads (history, uptime) see the buffered results too: they merge the buffer into what the database holds,
 * so a read never forces a write.
 */
import { eq, getTableName, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { healthcheckHistory, healthcheckResults, healthcheckUptime, heartbeatReports } from '../db/schema.ts';
import { type CheckResult, DAILY_RETENTION_S, DAY_S, HOUR_S, type HistoryEntry, HOURLY_RETENTION_S } from './result-types.ts';

export interface RepositoryOptions {
  historySize: number;
  /** How often the due groups are written. */
  flushIntervalMs?: number;
  /** A check's results are written once its oldest buffered one is this old (`healthchecks.write-delay`). */
  writeDelayS?: number;
  /** Everything is written as soon as this many results are buffered. */
  maxBuffered?: number;
  /** Unix seconds; injectable for tests. */
  nowS?: () => number;
  /** A periodic flush failed (disk full, database locked for too long); the batch is lost. */
  onFlushError?: (error: unknown) => void;
}

/**
 * Per check: the hour it last wrote an aggregate for (a new hour triggers the pruning of its old aggregates),
 * and how many history rows it has (counted once, then kept up to date), so that trimming deletes exactly the
 * rows over `history-size`, oldest first, without looking at the others.
 */
interface StoredState {
  hour: number;
  historyRows: number;
}


export class ResultStore {
  private buffer: CheckResult[] = [];
  private flushTimer: ReturnType<typeof setInterval> | null = null;
  /** What the flush keeps per check: the hour it last wrote an aggregate for, and its history rows. */
  private readonly stored = new Map<string, StoredState>();
  private readonly flushIntervalMs: number;
  private readonly writeDelayS: number;
  private readonly maxBuffered: number;
  private readonly nowS: () => number;
  private readonly statements;
  private readonly writeBatch: (batch: CheckResult[]) => void;

  constructor(
    private readonly db: Db,
    private readonly options: RepositoryOptions,
  ) {
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.writeDelayS = options.writeDelayS ?? 0;
    this.maxBuffered = options.maxBuffered ?? 200_000;
    this.nowS = options.nowS ?? (() => Math.floor(Date.now() / 1000));
    this.statements = this.prepareStatements();
    this.writeBatch = this.db.$client.transaction((batch: CheckResult[]) => this.writeResults(batch));
  }

  /**
   * The flush's statements, prepared once on the better-sqlite3 connection itself: they run 1,200 times a
   * second with 12,000 checks, and drizzle's placeholder mapping cost more than SQLite's own work. One statement
   * per table and result; the hourly and daily aggregates are one two-row upsert.
   */
  private prepareStatements() {
    const client = this.db.$client;
    const h = getTableName(healthcheckHistory);
    const u = getTableName(healthcheckUptime);
    const r = getTableName(healthcheckResults);
    return {
      upsertResult: client.prepare<[string, number, number, number, string, string, string | null, string, number, string | null]>(
        `insert into ${r} (name, success, timestamp_s, duration_ms, message, summary, labels, source, maintenance, node) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         on conflict (name) do update set success = excluded.success, timestamp_s = excluded.timestamp_s, duration_ms = excluded.duration_ms,
           message = excluded.message, summary = excluded.summary, labels = excluded.labels, source = excluded.source, maintenance = excluded.maintenance,
           node = excluded.node`,
      ),
      insertHistory: client.prepare<[string, number, number, number, string, number, string | null]>(
        `insert into ${h} (name, success, timestamp_s, duration_ms, message, maintenance, node) values (?, ?, ?, ?, ?, ?, ?)`,
      ),
      countHistory: client.prepare<[string], { n: number }>(`select count(*) as n from ${h} where name = ?`),
      // The oldest rows of one check, through the (name, id) index: it walks only the rows it deletes.
      trimHistory: client.prepare<[string, number]>(`delete from ${h} where id in (select id from ${h} where name = ? order by id asc limit ?)`),
      upsertUptime: client.prepare<[string, number, number, number, number, number, number, string, number, number, number, number, number, number]>(
        `insert into ${u} (name, granularity, period_start_s, runs, successes, duration_total_ms, duration_min_ms, duration_max_ms)
         values (?, 'hour', ?, ?, ?, ?, ?, ?), (?, 'day', ?, ?, ?, ?, ?, ?)
         on conflict (name, granularity, period_start_s) do update set runs = runs + excluded.runs, successes = successes + excluded.successes,
           duration_total_ms = duration_total_ms + excluded.duration_total_ms, duration_min_ms = min(duration_min_ms, excluded.duration_min_ms),
           duration_max_ms = max(duration_max_ms, excluded.duration_max_ms)`,
      ),
      pruneUptime: client.prepare<[string, string, number]>(`delete from ${u} where name = ? and granularity = ? and period_start_s < ?`),
    };
  }

  /** Starts the periodic flush. */
  start(): void {
    if (this.flushTimer !== null) return;
    this.flushTimer = setInterval(() => this.flushReportingErrors(false), this.flushIntervalMs);
    this.flushTimer.unref();
  }

  /** Writes what is buffered and stops the periodic flush. */
  stop(): void {
    if (this.flushTimer !== null) clearInterval(this.flushTimer);
    this.flushTimer = null;
    this.flush();
  }

  /** The results not written yet, oldest first (the reads merge them with what the database holds). */
  buffered(): readonly CheckResult[] {
    return this.buffer;
  }

  // Results

  loadResults(): CheckResult[] {
    const rows = this.db.select().from(healthcheckResults).all();
    return rows.map((row) => ({
      name: row.name,
      summary: row.summary,
      ...(row.labels !== null && Object.keys(row.labels as object).length > 0 ? { labels: row.labels as Record<string, string> } : {}),
      success: row.success,
      'healthcheck-timestamp': row.timestampS,
      message: row.message,
      duration: row.durationMs,
      source: row.source,
      ...(row.maintenance ? { maintenance: true as const } : {}),
      ...(row.node !== null ? { node: row.node } : {}),
    }));
  }

  /** Buffers a result; it reaches the database at the next flush. */
  record(result: CheckResult): void {
    this.buffer.push(result);
    if (this.buffer.length >= this.maxBuffered) this.flushReportingErrors(true);
  }

  private flushReportingErrors(all: boolean): void {
    try {
      if (all) this.flush();
      else this.writeDue();
    } catch (error) {
      this.options.onFlushError?.(error);
    }
  }

  /** Drops the buffered results of checks that were just removed, so that no flush writes them back. */
  dropBuffered(names: ReadonlySet<string>): void {
    if (this.buffer.length > 0) this.buffer = this.buffer.filter((result) => !names.has(result.name));
  }

  /** Writes every buffered result. */
  flush(): void {
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    this.writeBatch(batch);
  }

  /**
   * Writes the groups that are due: every buffered result of the checks whose oldest buffered result is
   * `writeDelayS` old. The buffer is in arrival order, so the due checks are found among its oldest entries.
   */
  writeDue(): void {
    const buffer = this.buffer;
    if (buffer.length === 0) return;
    const cutoff = this.nowS() - this.writeDelayS;
    if ((buffer[0] as CheckResult)['healthcheck-timestamp'] > cutoff) return;
    const due = new Set<string>();
    for (let i = 0; i < buffer.length; i++) {
      const result = buffer[i] as CheckResult;
      if (result['healthcheck-timestamp'] > cutoff) break;
      due.add(result.name);
    }
    const batch: CheckResult[] = [];
    const kept: CheckResult[] = [];
    for (let i = 0; i < buffer.length; i++) {
      const result = buffer[i] as CheckResult;
      (due.has(result.name) ? batch : kept).push(result);
    }
    this.buffer = kept;
    this.writeBatch(batch);
  }

  /** One transaction for the whole batch, check by check; the batch is not referenced once it is written. */
  private writeResults(batch: CheckResult[]): void {
    const groups = new Map<string, CheckResult[]>();
    for (let i = 0; i < batch.length; i++) {
      const result = batch[i] as CheckResult;
      const group = groups.get(result.name);
      if (group === undefined) groups.set(result.name, [result]);
      else group.push(result);
    }
    for (const [name, group] of groups) this.writeGroup(name, group);
  }

  /** A check's results, oldest first: each in the history, the newest as latest, and their aggregates summed. */
  private writeGroup(name: string, group: CheckResult[]): void {
    const s = this.statements;
    let state = this.stored.get(name);
    if (state === undefined) {
      state = { hour: -1, historyRows: (s.countHistory.get(name) as { n: number }).n };
      this.stored.set(name, state);
    }
    // Runs, successes, total, min and max duration of the hour being summed, written when the hour changes.
    let hour = -1;
    let runs = 0;
    let successes = 0;
    let total = 0;
    let min = 0;
    let max = 0;
    for (let i = 0; i < group.length; i++) {
      const result = group[i] as CheckResult;
      const timestampS = result['healthcheck-timestamp'];
      const durationMs = result.duration;
      const success = result.success ? 1 : 0;
      s.insertHistory.run(name, success, timestampS, durationMs, result.message, result.maintenance ? 1 : 0, result.node ?? null);
      // A result in maintenance counts in no uptime ratio nor duration aggregate (docs/checks.md).
      if (result.maintenance) continue;
      const resultHour = timestampS - (timestampS % HOUR_S);
      if (resultHour !== hour) {
        if (runs > 0) this.writeAggregates(name, hour, runs, successes, total, min, max);
        hour = resultHour;
        runs = successes = total = 0;
        min = Infinity;
        max = -Infinity;
      }
      runs++;
      successes += success;
      total += durationMs;
      if (durationMs < min) min = durationMs;
      if (durationMs > max) max = durationMs;
    }
    if (runs > 0) this.writeAggregates(name, hour, runs, successes, total, min, max);
    const latest = group[group.length - 1] as CheckResult;
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
    );
    state.historyRows += group.length;
    if (state.historyRows > this.options.historySize) {
      s.trimHistory.run(name, state.historyRows - this.options.historySize);
      state.historyRows = this.options.historySize;
    }
    if (hour !== -1 && state.hour !== hour) {
      state.hour = hour;
      s.pruneUptime.run(name, 'hour', hour - HOURLY_RETENTION_S);
      s.pruneUptime.run(name, 'day', hour - DAILY_RETENTION_S);
    }
  }

  /** Adds one hour's runs of a check to its hourly and daily aggregates (an hour lies within one day). */
  private writeAggregates(name: string, hour: number, runs: number, successes: number, total: number, min: number, max: number): void {
    this.statements.upsertUptime.run(name, hour, runs, successes, total, min, max, name, hour - (hour % DAY_S), runs, successes, total, min, max);
  }

  /** Newest first: the buffered results of the check, then the stored ones. */
  history(name: string, limit: number): HistoryEntry[] {
    const max = Math.min(limit, this.options.historySize);
    const entries: HistoryEntry[] = [];
    for (let i = this.buffer.length - 1; i >= 0 && entries.length < max; i--) {
      const result = this.buffer[i] as CheckResult;
      if (result.name !== name) continue;
      entries.push(historyEntry(result));
    }
    if (entries.length === max) return entries;
    const h = healthcheckHistory;
    const stored = this.db
      .select({ name: h.name, success: h.success, timestampS: h.timestampS, durationMs: h.durationMs, message: h.message, maintenance: h.maintenance, node: h.node })
      .from(h)
      .where(eq(h.name, name))
      .orderBy(sql`${h.id} desc`)
      .limit(max - entries.length)
      .all();
    for (const row of stored) entries.push(storedEntry(row.name, row.success, row.timestampS, row.message, row.durationMs, row.maintenance, row.node));
    return entries;
  }

  /**
   * The newest `limit` raw results of each named check, oldest first: one query through the (name, id) index,
   * then the results still waiting to be written (newer than any stored one).
   */
  recentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    const byName = this.storedRecentResults(names, limit);
    if (this.buffer.length === 0) return byName;
    const max = Math.min(limit, this.options.historySize);
    const wanted = new Set(names);
    for (const result of this.buffer) {
      if (!wanted.has(result.name)) continue;
      let entries = byName.get(result.name);
      if (entries === undefined) byName.set(result.name, (entries = []));
      entries.push(historyEntry(result));
    }
    for (const [name, entries] of byName) if (entries.length > max) byName.set(name, entries.slice(entries.length - max));
    return byName;
  }

  private storedRecentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    const byName = new Map<string, HistoryEntry[]>();
    const h = healthcheckHistory;
    for (const chunk of chunks(names)) {
      const rows = this.db.all<{ name: string; success: number; timestamp_s: number; duration_ms: number; message: string; maintenance: number; node: string | null }>(
        sql`select name, success, timestamp_s, duration_ms, message, maintenance, node from (
              select ${h.name} as name, ${h.success} as success, ${h.timestampS} as timestamp_s, ${h.durationMs} as duration_ms,
                     ${h.message} as message, ${h.maintenance} as maintenance, ${h.node} as node, ${h.id} as id, row_number() over (partition by ${h.name} order by ${h.id} desc) as newest
              from ${h} where ${inArray(h.name, chunk)})
            where newest <= ${Math.min(limit, this.options.historySize)} order by name, id`,
      );
      for (const row of rows) {
        let entries = byName.get(row.name);
        if (entries === undefined) byName.set(row.name, (entries = []));
        entries.push(storedEntry(row.name, row.success === 1, row.timestamp_s, row.message, row.duration_ms, row.maintenance === 1, row.node));
      }
    }
    return byName;
  }

  /** Every name with something stored: results, or a heartbeat report (committed at once, its result later). */
  storedNames(): Set<string> {
    const names = new Set(this.db.select({ name: healthcheckResults.name }).from(healthcheckResults).all().map((row) => row.name));
    for (const row of this.db.select({ name: heartbeatReports.name }).from(heartbeatReports).all()) names.add(row.name);
    return names;
  }

  /** Deletes the results, history, aggregates and heartbeat report of checks, inside the caller's transaction. */
  forget(tx: Pick<Db, 'delete'>, names: readonly string[]): void {
    for (const chunk of chunks(names)) {
      tx.delete(healthcheckResults).where(inArray(healthcheckResults.name, chunk)).run();
      tx.delete(healthcheckHistory).where(inArray(healthcheckHistory.name, chunk)).run();
      tx.delete(healthcheckUptime).where(inArray(healthcheckUptime.name, chunk)).run();
      tx.delete(heartbeatReports).where(inArray(heartbeatReports.name, chunk)).run();
    }
    for (const name of names) this.stored.delete(name);
  }
}


/** SQLite limits bound parameters per statement; 500 names per `in (...)` stays well below. */
/** A result still waiting to be written, as the history reads return it. */
function historyEntry(result: CheckResult): HistoryEntry {
  return storedEntry(result.name, result.success, result['healthcheck-timestamp'], result.message, result.duration, result.maintenance === true, result.node ?? null);
}

function storedEntry(name: string, success: boolean, timestampS: number, message: string, duration: number, maintenance: boolean, node: string | null): HistoryEntry {
  const entry: HistoryEntry = { name, success, 'healthcheck-timestamp': timestampS, message, duration };
  if (maintenance) entry.maintenance = true;
  if (node !== null) entry.node = node;
  return entry;
}

export function* chunks<T>(items: readonly T[], size = 500): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}