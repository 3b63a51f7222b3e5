/**
 * Reads over the aggregates for status pages and reports (docs/status-pages.md): the daily runs of a set of checks
 * (a page's 90 bars), and each check's totals over any period (the uptime report). Results in a maintenance window
 * are in no aggregate, so both exclude them; the results still waiting to be written count as they will once
 * written.
 */
import type { Db } from '../../db/client.ts';
import type { PendingRuns } from './pending-results.ts';
import { DAY_S, HOUR_S } from '../result-types.ts';

/** A check's runs and successes per day, index 0 the oldest day asked. */
export interface DailySeries {
  runs: number[];
  successes: number[];
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

  /**
   * Each check's runs and successes on each of `days` days from `sinceS` (a day's start). One query; its rows are
   * folded by SQLite into one string per check, which costs a fifth of reading 45,000 rows one by one for a page
   * of 500 checks (docs/status-pages.md, "Scale").
   */
  dailyRuns(names: readonly string[], sinceS: number, days: number): Map<string, DailySeries> {
    const byName = new Map<string, DailySeries>();
    for (const name of names)
      byName.set(name, { runs: new Array<number>(days).fill(0), successes: new Array<number>(days).fill(0) });
    const rows = this.db.$client
      .prepare<[{ since: number; until: number; names: string }], [string, string]>(
        `select name, group_concat(((period_start_s - @since) / ${DAY_S}) || ',' || runs || ',' || successes, ';') from healthcheck_uptime
         where name in (select value from json_each(@names)) and granularity = 'day' and period_start_s >= @since and period_start_s < @until
         group by name`,
      )
      .raw()
      .all({ since: sinceS, until: sinceS + days * DAY_S, names: JSON.stringify(names) });
    for (const [name, folded] of rows) {
      const series = byName.get(name) as DailySeries;
      for (const day of folded.split(';')) {
        const [index, runs, successes] = day.split(',').map(Number) as [number, number, number];
        series.runs[index] = runs;
        series.successes[index] = successes;
      }
    }
    for (const name of names) {
      const series = byName.get(name) as DailySeries;
      for (const hour of this.pending.hoursOf(name)) {
        const index = Math.floor((hour.hour - sinceS) / DAY_S);
        if (index < 0 || index >= days) continue;
        series.runs[index] = (series.runs[index] as number) + hour.runs;
        series.successes[index] = (series.successes[index] as number) + hour.successes;
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
      .prepare<
        [{ dayFrom: number; dayTo: number; hourFrom: number; hourTo: number }],
        [string, number, number, number, number, number]
      >(
        `select name, sum(runs), sum(successes), sum(duration_total_ms), min(duration_min_ms), max(duration_max_ms) from healthcheck_uptime
         where (granularity = 'day' and period_start_s >= @dayFrom and period_start_s < @dayTo) or (granularity = 'hour' and period_start_s >= @hourFrom and period_start_s < @hourTo)
         group by name`,
      )
      .raw()
      .all({ dayFrom: from, dayTo: Math.min(to, boundaryS), hourFrom: Math.max(from, boundaryS), hourTo: to });
    const byName = new Map<string, PeriodTotals>(
      rows.map(([name, runs, successes, totalMs, minMs, maxMs]) => [name, { runs, successes, totalMs, minMs, maxMs }]),
    );
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
