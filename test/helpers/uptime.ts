/**
 * Writes daily aggregates (`healthcheck_uptime`, granularity `day`) straight into a running server's database, for
 * tests and benchmarks that need 90 days of history: no API records runs in the past. Another connection in WAL
 * mode, with a busy timeout so that it waits for the service's own writes.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';

const DAY_S = 86_400;

export interface DayRow {
  name: string;
  /** Days before today (0: today, UTC). */
  daysAgo: number;
  runs: number;
  successes: number;
}

/** The unix second at which the UTC day `daysAgo` days before today starts. */
export function dayStart(daysAgo: number, nowMs = Date.now()): number {
  const today = Math.floor(nowMs / 1000 / DAY_S) * DAY_S;
  return today - daysAgo * DAY_S;
}

export function seedDailyUptime(dataDir: string, rows: readonly DayRow[]): void {
  const db = new Database(join(dataDir, 'vigie.db'));
  try {
    db.pragma('busy_timeout = 10000');
    const insert = db.prepare(
      `insert into healthcheck_uptime (name, granularity, period_start_s, runs, successes, duration_total_ms, duration_min_ms, duration_max_ms)
       values (?, 'day', ?, ?, ?, ?, 1, 20)
       on conflict (name, granularity, period_start_s) do update set runs = excluded.runs, successes = excluded.successes`,
    );
    db.transaction(() => {
      for (const row of rows) insert.run(row.name, dayStart(row.daysAgo), row.runs, row.successes, row.runs * 10);
    })();
  } finally {
    db.close();
  }
}
