/**
 * Reads over the aggregates for status pages and reports (docs/status-pages.md): the daily runs of a set of checks
 * (a page's 90 bars), and each check's totals over any period (the uptime report). Results in a maintenance window
 * are in no aggregate, so both exclude them; the results still waiting to be written count as they will once
 * written.
 */
import type { Db } from '../db/client.ts';
import type { PendingRuns } from './pending-results.ts';
import { DAY_S, HOUR_S } from './result-types.ts';

export interface DayRuns {
  runs: number;
  successes: number;
}

export interface PeriodTotals {
  runs: number;
  successes: number;
  totalMs: number;
  minMs: number;
  maxMs: number;
}

/** The period a report counted: whole days before `boundaryS`, whole hours from it. */
export interface CountedPeriod {
  fromS: number;
  toS: number;
}

export class UptimePeriods {
  constructor(
    private readonly db: Db,
    private readonly pending: PendingRuns,
    private readonly nowS: () => number,
  ) {}

  /** Runs per check and per day (the day's start in unix seconds) since `sinceS` (a day's start), in one query. */
  dailyRuns(names: readonly string[], sinceS: number): Map<string, Map<number, DayRuns>> {
    const byName = new Map<string, Map<number, DayRuns>>(names.map((name) => [name, new Map()]));
    const rows = this.db.$client
      .prepare<[{ since: number; names: string }], [string, number, number, number]>(
        `select name, period_start_s, runs, successes from healthcheck_uptime
         where name in (select value from json_each(@names)) and granularity = 'day' and period_start_s >= @since`,
      )
      .raw()
      .all({ since: sinceS, names: JSON.stringify(names) });
    for (const [name, day, runs, successes] of rows) byName.get(name)?.set(day, { runs, successes });
    for (const name of names) {
      const days = byName.get(name) as Map<number, DayRuns>;
      for (const hour of this.pending.hoursOf(name)) {
        const day = hour.hour - (hour.hour % DAY_S);
        if (day < sinceS) continue;
        const counted = days.get(day) ?? { runs: 0, successes: 0 };
        days.set(day, { runs: counted.runs + hour.runs, successes: counted.successes + hour.successes });
      }
    }
    return byName;
  }

  /**
   * Every check's totals over [fromS, toS). Hourly aggregates are kept 30 days: the last 29 whole days are counted
   * by the hour, older ones by the day. Buckets overlapping the period count whole; `counted` is the period they
   * cover.
   */
  totals(fromS: number, toS: number): { counted: CountedPeriod; byName: Map<string, PeriodTotals> } {
    const nowS = this.nowS();
    const boundaryS = nowS - (nowS % DAY_S) - 29 * DAY_S;
    const floor = (s: number, step: number) => s - (((s % step) + step) % step);
    const ceil = (s: number, step: number) => floor(s + step - 1, step);
    const from = fromS < boundaryS ? floor(fromS, DAY_S) : floor(fromS, HOUR_S);
    const to = toS <= boundaryS ? ceil(toS, DAY_S) : ceil(toS, HOUR_S);
    const rows = this.db.$client
      .prepare<[{ dayFrom: number; dayTo: number; hourFrom: number; hourTo: number }], [string, number, number, number, number, number]>(
        `select name, sum(runs), sum(successes), sum(duration_total_ms), min(duration_min_ms), max(duration_max_ms) from healthcheck_uptime
         where (granularity = 'day' and period_start_s >= @dayFrom and period_start_s < @dayTo) or (granularity = 'hour' and period_start_s >= @hourFrom and period_start_s < @hourTo)
         group by name`,
      )
      .raw()
      .all({ dayFrom: from, dayTo: Math.min(to, boundaryS), hourFrom: Math.max(from, boundaryS), hourTo: to });
    const byName = new Map<string, PeriodTotals>(rows.map(([name, runs, successes, totalMs, minMs, maxMs]) => [name, { runs, successes, totalMs, minMs, maxMs }]));
    for (const [name, hours] of this.pending.allHours()) {
      for (const hour of hours) {
        if (hour.hour < Math.max(from, boundaryS) || hour.hour >= to) continue;
        const totals = byName.get(name) ?? { runs: 0, successes: 0, totalMs: 0, minMs: Infinity, maxMs: -Infinity };
        totals.runs += hour.runs;
        totals.successes += hour.successes;
        totals.totalMs += hour.totalMs;
        totals.minMs = Math.min(totals.minMs, hour.minMs);
        totals.maxMs = Math.max(totals.maxMs, hour.maxMs);
        byName.set(name, totals);
      }
    }
    return { counted: { fromS: from, toS: to }, byName };
  }
}
