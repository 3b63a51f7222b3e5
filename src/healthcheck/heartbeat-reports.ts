/**
 * The last report of each heartbeat check, in SQLite (`heartbeat_reports`). A report is written before the job's
 * request is answered: one small upsert per report, at the pace of cron jobs, so no batching is needed. A report
 * goes with its check (src/healthcheck/results/result-store.ts forgets it with the check's results).
 */
import type { Db } from '../db/client.ts';
import type { PushReport, PushReports } from './kinds/types.ts';

export class HeartbeatReports implements PushReports {
  private readonly upsert;
  private readonly select;

  constructor(db: Db) {
    const table = 'heartbeat_reports';
    this.upsert = db.$client.prepare<[string, number, number, string]>(
      `insert into ${table} (name, reported_at_ms, success, message) values (?, ?, ?, ?)
       on conflict (name) do update set reported_at_ms = excluded.reported_at_ms, success = excluded.success, message = excluded.message`,
    );
    this.select = db.$client.prepare<[string], { reported_at_ms: number; success: number; message: string }>(
      `select reported_at_ms, success, message from ${table} where name = ?`,
    );
  }

  last(name: string): PushReport | undefined {
    const row = this.select.get(name);
    return row === undefined
      ? undefined
      : { atMs: row.reported_at_ms, success: row.success === 1, message: row.message };
  }

  save(name: string, report: PushReport): void {
    this.upsert.run(name, report.atMs, report.success ? 1 : 0, report.message);
  }
}
