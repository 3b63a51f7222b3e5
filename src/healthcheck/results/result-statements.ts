/**
 * The result store's statements (src/healthcheck/results/result-store.ts), prepared once on the better-sqlite3
 * connection itself: they run 1,200 times a second with 12,000 checks, and drizzle's placeholder mapping cost more than
 * SQLite's own work. One statement per table and result; the hourly and daily aggregates are one two-row upsert; the
 * latest result's row keeps its check's state beside it (src/healthcheck/states/).
 */
import { getTableName } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { healthcheckEvents, healthcheckHistory, healthcheckResults, healthcheckUptime } from '../../db/schema.ts';

export type ResultStatements = ReturnType<typeof prepareResultStatements>;

export function prepareResultStatements(db: Db) {
  const client = db.$client;
  const h = getTableName(healthcheckHistory);
  const u = getTableName(healthcheckUptime);
  const r = getTableName(healthcheckResults);
  const e = getTableName(healthcheckEvents);
  return {
    upsertResult: client.prepare<
      [
        string,
        number,
        number,
        number,
        string,
        string,
        string | null,
        string,
        number,
        string | null,
        string | null,
        number | null,
        number,
      ]
    >(
      `insert into ${r} (name, success, timestamp_s, duration_ms, message, summary, labels, source, maintenance, node, state, state_since_ms, state_streak) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (name) do update set success = excluded.success, timestamp_s = excluded.timestamp_s, duration_ms = excluded.duration_ms,
         message = excluded.message, summary = excluded.summary, labels = excluded.labels, source = excluded.source, maintenance = excluded.maintenance,
         node = excluded.node, state = excluded.state, state_since_ms = excluded.state_since_ms, state_streak = excluded.state_streak`,
    ),
    insertEvent: client.prepare<[string, number, string, string, string, string | null]>(
      `insert into ${e} (name, at_ms, from_state, to_state, message, node) values (?, ?, ?, ?, ?, ?)`,
    ),
    countEvents: client.prepare<[string], { n: number }>(`select count(*) as n from ${e} where name = ?`),
    trimEvents: client.prepare<[string, number]>(
      `delete from ${e} where id in (select id from ${e} where name = ? order by at_ms asc, id asc limit ?)`,
    ),
    insertHistory: client.prepare<[string, number, number, number, string, number, string | null]>(
      `insert into ${h} (name, success, timestamp_s, duration_ms, message, maintenance, node) values (?, ?, ?, ?, ?, ?, ?)`,
    ),
    countHistory: client.prepare<[string], { n: number }>(`select count(*) as n from ${h} where name = ?`),
    // The oldest rows of one check, through the (name, id) index: it walks only the rows it deletes.
    trimHistory: client.prepare<[string, number]>(
      `delete from ${h} where id in (select id from ${h} where name = ? order by id asc limit ?)`,
    ),
    upsertUptime: client.prepare<
      [string, number, number, number, number, number, number, string, number, number, number, number, number, number]
    >(
      `insert into ${u} (name, granularity, period_start_s, runs, successes, duration_total_ms, duration_min_ms, duration_max_ms)
       values (?, 'hour', ?, ?, ?, ?, ?, ?), (?, 'day', ?, ?, ?, ?, ?, ?)
       on conflict (name, granularity, period_start_s) do update set runs = runs + excluded.runs, successes = successes + excluded.successes,
         duration_total_ms = duration_total_ms + excluded.duration_total_ms, duration_min_ms = min(duration_min_ms, excluded.duration_min_ms),
         duration_max_ms = max(duration_max_ms, excluded.duration_max_ms)`,
    ),
    pruneUptime: client.prepare<[string, string, number]>(
      `delete from ${u} where name = ? and granularity = ? and period_start_s < ?`,
    ),
  };
}
