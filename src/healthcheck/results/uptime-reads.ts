/**
 * Uptime and response-time reads over the hourly and daily aggregates (`healthcheck_uptime`), with the results still
 * waiting to be written counted as they will be once written. Results in a maintenance window count nowhere here
 * (docs/checks.md, "Maintenance windows").
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { healthcheckUptime } from '../../db/schema.ts';
import type { PendingRuns } from './pending-results.ts';
import {
  DAY_S,
  type DurationBucket,
  HOUR_S,
  type SeriesWindow,
  UPTIME_WINDOWS,
  type UptimeRatios,
  type UptimeWindow,
  type UptimeWindowName,
} from '../result-types.ts';

export class UptimeReads {
  constructor(
    private readonly db: Db,
    /** The runs not written yet, per check and hour. */
    private readonly pending: PendingRuns,
    private readonly nowS: () => number,
  ) {}

  /** Uptime over each window, from the hourly aggregates that overlap it. */
  uptime(name: string): Record<UptimeWindowName, UptimeWindow> {
    const nowS = this.nowS();
    const hourOf = (s: number) => s - (s % HOUR_S);
    const u = healthcheckUptime;
    const oldest = hourOf(nowS - UPTIME_WINDOWS['30d']);
    const rows = this.db
      .select({
        periodStartS: u.periodStartS,
        runs: u.runs,
        successes: u.successes,
        durationTotalMs: u.durationTotalMs,
        durationMinMs: u.durationMinMs,
        durationMaxMs: u.durationMaxMs,
      })
      .from(u)
      .where(and(eq(u.name, name), eq(u.granularity, 'hour'), sql`${u.periodStartS} >= ${oldest}`))
      .all();
    // The waiting runs, per hour: they count exactly as they will once written.
    for (const hour of this.pending.hoursOf(name)) {
      rows.push({
        periodStartS: hour.hour,
        runs: hour.runs,
        successes: hour.successes,
        durationTotalMs: hour.totalMs,
        durationMinMs: hour.minMs,
        durationMaxMs: hour.maxMs,
      });
    }
    const windows = {} as Record<UptimeWindowName, UptimeWindow>;
    for (const [window, seconds] of Object.entries(UPTIME_WINDOWS) as [UptimeWindowName, number][]) {
      const since = hourOf(nowS - seconds);
      let runs = 0;
      let successes = 0;
      let total = 0;
      let min = Infinity;
      let max = -Infinity;
      for (const row of rows) {
        if (row.periodStartS < since) continue;
        runs += row.runs;
        successes += row.successes;
        total += row.durationTotalMs;
        min = Math.min(min, row.durationMinMs);
        max = Math.max(max, row.durationMaxMs);
      }
      windows[window] = {
        runs,
        successes,
        ratio: runs === 0 ? null : successes / runs,
        'mean-duration': runs === 0 ? null : total / runs,
        'min-duration': runs === 0 ? null : min,
        'max-duration': runs === 0 ? null : max,
        since,
      };
    }
    return windows;
  }

  /**
   * The success ratio of every check over 24 h (hourly aggregates), 7 d and 30 d (daily aggregates: a day
   * overlapping the window counts whole), in one query: the dashboard's overview must not ask check by check.
   */
  uptimeOfAll(): Map<string, UptimeRatios> {
    const nowS = this.nowS();
    const since24h = nowS - (nowS % HOUR_S) - UPTIME_WINDOWS['24h'];
    const since7d = nowS - (nowS % DAY_S) - UPTIME_WINDOWS['7d'];
    const since30d = nowS - (nowS % DAY_S) - UPTIME_WINDOWS['30d'];
    const u = healthcheckUptime;
    const hourly = sql`${u.granularity} = 'hour' and ${u.periodStartS} >= ${since24h}`;
    const daily7 = sql`${u.granularity} = 'day' and ${u.periodStartS} >= ${since7d}`;
    const daily30 = sql`${u.granularity} = 'day'`;
    const rows = this.db
      .select({
        name: u.name,
        runs24h: sql<number>`sum(case when ${hourly} then ${u.runs} else 0 end)`,
        ok24h: sql<number>`sum(case when ${hourly} then ${u.successes} else 0 end)`,
        runs7d: sql<number>`sum(case when ${daily7} then ${u.runs} else 0 end)`,
        ok7d: sql<number>`sum(case when ${daily7} then ${u.successes} else 0 end)`,
        runs30d: sql<number>`sum(case when ${daily30} then ${u.runs} else 0 end)`,
        ok30d: sql<number>`sum(case when ${daily30} then ${u.successes} else 0 end)`,
      })
      .from(u)
      .where(
        sql`(${u.granularity} = 'hour' and ${u.periodStartS} >= ${since24h}) or (${u.granularity} = 'day' and ${u.periodStartS} >= ${since30d})`,
      )
      .groupBy(u.name)
      .all();
    // The results still waiting to be written count as they will once written.
    const counts = new Map(rows.map((row) => [row.name, row]));
    for (const [name, hours] of this.pending.allHours()) {
      if (hours.length === 0) continue;
      let row = counts.get(name);
      if (row === undefined)
        counts.set(name, (row = { name, runs24h: 0, ok24h: 0, runs7d: 0, ok7d: 0, runs30d: 0, ok30d: 0 }));
      for (const { hour, runs, successes } of hours) {
        if (hour >= since24h) {
          row.runs24h += runs;
          row.ok24h += successes;
        }
        if (hour - (hour % DAY_S) >= since7d) {
          row.runs7d += runs;
          row.ok7d += successes;
        }
        if (hour - (hour % DAY_S) >= since30d) {
          row.runs30d += runs;
          row.ok30d += successes;
        }
      }
    }
    const ratio = (ok: number, runs: number) => (runs === 0 ? null : ok / runs);
    const byName = new Map<string, UptimeRatios>();
    for (const row of counts.values()) {
      byName.set(row.name, {
        '24h': ratio(row.ok24h, row.runs24h),
        '7d': ratio(row.ok7d, row.runs7d),
        '30d': ratio(row.ok30d, row.runs30d),
      });
    }
    return byName;
  }

  /**
   * Response-time buckets of one check over a window: hourly for 24 h and 7 d, daily for 30 d, oldest first; the
   * results still waiting to be written are counted in their buckets, as they will be once written.
   */
  durationSeries(name: string, window: SeriesWindow): DurationBucket[] {
    const buckets = this.storedDurationSeries(name, window);
    const step = window === '30d' ? DAY_S : HOUR_S;
    let added = false;
    for (const hour of this.pending.hoursOf(name)) {
      const start = hour.hour - (hour.hour % step);
      let bucket = buckets.find((candidate) => candidate.start === start);
      if (bucket === undefined) {
        bucket = { start, runs: 0, successes: 0, mean: 0, min: hour.minMs, max: hour.maxMs };
        buckets.push(bucket);
        added = true;
      }
      bucket.mean = (bucket.mean * bucket.runs + hour.totalMs) / (bucket.runs + hour.runs);
      bucket.runs += hour.runs;
      bucket.successes += hour.successes;
      bucket.min = Math.min(bucket.min, hour.minMs);
      bucket.max = Math.max(bucket.max, hour.maxMs);
    }
    if (added) buckets.sort((a, b) => a.start - b.start);
    return buckets;
  }

  private storedDurationSeries(name: string, window: SeriesWindow): DurationBucket[] {
    const nowS = this.nowS();
    const granularity = window === '30d' ? 'day' : 'hour';
    const step = granularity === 'day' ? DAY_S : HOUR_S;
    const since = nowS - (nowS % step) - UPTIME_WINDOWS[window];
    const u = healthcheckUptime;
    return this.db
      .select({
        start: u.periodStartS,
        runs: u.runs,
        successes: u.successes,
        total: u.durationTotalMs,
        min: u.durationMinMs,
        max: u.durationMaxMs,
      })
      .from(u)
      .where(and(eq(u.name, name), eq(u.granularity, granularity), sql`${u.periodStartS} >= ${since}`))
      .orderBy(u.periodStartS)
      .all()
      .map((row) => ({
        start: row.start,
        runs: row.runs,
        successes: row.successes,
        mean: row.total / row.runs,
        min: row.min,
        max: row.max,
      }));
  }
}
