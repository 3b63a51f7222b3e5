/**
 * The raw-result reads of the healthcheck part: a check's history and the newest results of many checks at once (the
 * dashboard's sparklines). They merge the results still waiting to be written
 * (src/healthcheck/results/pending-results.ts) into what SQLite holds, so that a read never forces a write; the writes
 * themselves are result-store.ts's.
 */
import { eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { healthcheckHistory } from '../../db/schema.ts';
import type { PendingResults } from './pending-results.ts';
import { chunks } from './result-store.ts';
import type { CheckResult, HistoryEntry } from '../result-types.ts';

export class HistoryReads {
  constructor(
    private readonly db: Db,
    /** The results not written yet, newer than any stored one. */
    private readonly pending: PendingResults,
    private readonly historySize: number,
  ) {}

  /** Newest first: the waiting results of the check, then the stored ones. */
  history(name: string, limit: number): HistoryEntry[] {
    const max = Math.min(limit, this.historySize);
    const entries: HistoryEntry[] = [];
    const waiting = this.pending.get(name)?.results ?? [];
    for (let i = waiting.length - 1; i >= 0 && entries.length < max; i--)
      entries.push(historyEntry(waiting[i] as CheckResult));
    if (entries.length === max) return entries;
    const h = healthcheckHistory;
    const stored = this.db
      .select({
        name: h.name,
        success: h.success,
        timestampS: h.timestampS,
        durationMs: h.durationMs,
        message: h.message,
        maintenance: h.maintenance,
        node: h.node,
      })
      .from(h)
      .where(eq(h.name, name))
      .orderBy(sql`${h.id} desc`)
      .limit(max - entries.length)
      .all();
    for (const row of stored)
      entries.push(
        storedEntry(row.name, row.success, row.timestampS, row.message, row.durationMs, row.maintenance, row.node),
      );
    return entries;
  }

  /**
   * The newest `limit` raw results of each named check, oldest first: one query through the (name, id) index,
   * then the results still waiting to be written (newer than any stored one).
   */
  recentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    const byName = this.storedRecentResults(names, limit);
    if (this.pending.size === 0) return byName;
    const max = Math.min(limit, this.historySize);
    for (const name of names) {
      const waiting = this.pending.get(name)?.results;
      if (waiting === undefined || waiting.length === 0) continue;
      let entries = byName.get(name);
      if (entries === undefined) byName.set(name, (entries = []));
      for (const result of waiting) entries.push(historyEntry(result));
    }
    for (const [name, entries] of byName)
      if (entries.length > max) byName.set(name, entries.slice(entries.length - max));
    return byName;
  }

  private storedRecentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    const byName = new Map<string, HistoryEntry[]>();
    const h = healthcheckHistory;
    for (const chunk of chunks(names)) {
      const rows = this.db.all<{
        name: string;
        success: number;
        timestamp_s: number;
        duration_ms: number;
        message: string;
        maintenance: number;
        node: string | null;
      }>(
        sql`select name, success, timestamp_s, duration_ms, message, maintenance, node from (
              select ${h.name} as name, ${h.success} as success, ${h.timestampS} as timestamp_s, ${h.durationMs} as duration_ms,
                     ${h.message} as message, ${h.maintenance} as maintenance, ${h.node} as node, ${h.id} as id, row_number() over (partition by ${h.name} order by ${h.id} desc) as newest
              from ${h} where ${inArray(h.name, chunk)})
            where newest <= ${Math.min(limit, this.historySize)} order by name, id`,
      );
      for (const row of rows) {
        let entries = byName.get(row.name);
        if (entries === undefined) byName.set(row.name, (entries = []));
        entries.push(
          storedEntry(
            row.name,
            row.success === 1,
            row.timestamp_s,
            row.message,
            row.duration_ms,
            row.maintenance === 1,
            row.node,
          ),
        );
      }
    }
    return byName;
  }
}

/** A result still waiting to be written, as the history reads return it. */
function historyEntry(result: CheckResult): HistoryEntry {
  return storedEntry(
    result.name,
    result.success,
    result['healthcheck-timestamp'],
    result.message,
    result.duration,
    result.maintenance === true,
    result.node ?? null,
  );
}

function storedEntry(
  name: string,
  success: boolean,
  timestampS: number,
  message: string,
  duration: number,
  maintenance: boolean,
  node: string | null,
): HistoryEntry {
  const entry: HistoryEntry = { name, success, 'healthcheck-timestamp': timestampS, message, duration };
  if (maintenance) entry.maintenance = true;
  if (node !== null) entry.node = node;
  return entry;
}
