import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { closeDatabase, type Db, migrateDatabase, openDatabase } from '../../../src/db/client.ts';
import { type CheckResult, HealthcheckRepository } from '../../../src/healthcheck/results/repository.ts';
import { waitFor } from '../../helpers/wait.ts';

let db: Db;
let nowS: number;
const HOUR = 3600;
const DAY = 86_400;

function open(historySize = 5, writeDelayS = 0): HealthcheckRepository {
  return new HealthcheckRepository(db, { historySize, writeDelayS, nowS: () => nowS, maxPendingResults: 10_000 });
}

function result(name: string, timestampS: number, success = true, duration = 10): CheckResult {
  return {
    name,
    summary: `TCP healthcheck on ${name}:80`,
    ...(name === 'labelled' ? { labels: { env: 'prod' } } : {}),
    success,
    'healthcheck-timestamp': timestampS,
    message: success ? 'success' : 'boom',
    duration,
    source: 'api',
  };
}

function count(sql: string, ...params: unknown[]): number {
  return (db.$client.prepare(sql).get(...params) as { n: number }).n;
}

beforeEach(() => {
  db = openDatabase(join(mkdtempSync(join(tmpdir(), 'vigie-repo-')), 'vigie.db'));
  migrateDatabase(db);
  nowS = 1_700_000_000 - (1_700_000_000 % DAY) + 12 * HOUR;
});

afterEach(() => closeDatabase(db));

describe('the healthcheck repository', () => {
  it('ticks its periodic writes only while results wait, on whole beats of the monotonic clock: none armed when idle, armed by a result, disarmed once written', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      vi.advanceTimersByTime(1_234);
      const repo = new HealthcheckRepository(db, {
        historySize: 5,
        writeDelayS: 0,
        maxPendingResults: 10_000,
        flushIntervalMs: 1_000,
      });
      repo.start();
      expect(vi.getTimerCount()).toBe(0);
      repo.record(result('plain', Math.floor(Date.now() / 1000)));
      repo.record(result('other', Math.floor(Date.now() / 1000)));
      expect(vi.getTimerCount()).toBe(1);
      // Not a second after the result (at 2,234 ms) but on the whole second of performance.now() nearest to that, with
      // the scheduler's tick and the checkpoint's look (bench/JOURNAL.md, "One wake-up a second").
      const beat = Math.round((performance.now() + 1_000) / 1_000) * 1_000;
      expect(beat).toBe(2_000);
      await vi.advanceTimersByTimeAsync(beat - performance.now() - 1);
      expect(count('select count(*) n from healthcheck_results')).toBe(0);
      // The beat starts a write round, whose slices run as immediates.
      await vi.advanceTimersByTimeAsync(2);
      expect(count('select count(*) n from healthcheck_results')).toBe(2);
      // The next beat finds nothing waiting and arms nothing more.
      await vi.advanceTimersByTimeAsync(1_000);
      expect(vi.getTimerCount()).toBe(0);
      repo.record(result('plain', Math.floor(Date.now() / 1000) + 1));
      expect(vi.getTimerCount()).toBe(1);
      repo.stop();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('writes by default on whole 2 s beats, where an automatic start tick of 2 s or less starts runs too', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      vi.advanceTimersByTime(1_234);
      const repo = new HealthcheckRepository(db, { historySize: 5, writeDelayS: 0, maxPendingResults: 10_000 });
      repo.start();
      repo.record(result('plain', Math.floor(Date.now() / 1000)));
      // On the whole multiple of 2 s of performance.now() nearest to 2 s after the result (at 3,234 ms): 4,000 ms.
      await vi.advanceTimersByTimeAsync(4_000 - performance.now() - 1);
      expect(count('select count(*) n from healthcheck_results')).toBe(0);
      await vi.advanceTimersByTimeAsync(2);
      expect(count('select count(*) n from healthcheck_results')).toBe(1);
      repo.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('starts a write round on every beat while results keep coming, not on every other one (timers fire late)', async () => {
    const repo = new HealthcheckRepository(db, {
      historySize: 5,
      writeDelayS: 0,
      maxPendingResults: 10_000,
      flushIntervalMs: 100,
    });
    const writeDue = repo.results.writeDue.bind(repo.results);
    const rounds: number[] = [];
    vi.spyOn(repo.results, 'writeDue').mockImplementation(() => {
      rounds.push(performance.now());
      return writeDue();
    });
    repo.start();
    const feed = setInterval(() => repo.record(result('plain', Math.floor(Date.now() / 1000))), 20);
    try {
      await waitFor(() => rounds.length >= 8, { timeoutMs: 15_000, message: 'eight write rounds' });
    } finally {
      clearInterval(feed);
      repo.stop();
    }
    // Eight rounds span seven beats (700 ms). A timer fires a few ms after its beat, and taking the first beat past
    // that one plus the interval for the next skipped every other beat: 1,400 ms. Two beats missed under load are
    // allowed.
    expect(rounds[7]! - rounds[0]!).toBeLessThan(950);
  });

  it('writes buffered results only at flush, and loads the latest one per check back', () => {
    const repo = open();
    repo.record(result('labelled', nowS - 20, false, 7));
    repo.record(result('labelled', nowS - 10, true, 3));
    repo.record(result('plain', nowS - 5));
    expect(count('select count(*) n from healthcheck_results')).toBe(0);
    repo.flush();
    const loaded = open()
      .loadResults()
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(loaded).toEqual([result('labelled', nowS - 10, true, 3), result('plain', nowS - 5)]);
    // Readable with sqlite3: real JSON for labels, SQL NULL without.
    expect(
      db.$client.prepare('select name, labels, typeof(labels) t from healthcheck_results order by name').all(),
    ).toEqual([
      { name: 'labelled', labels: '{"env":"prod"}', t: 'text' },
      { name: 'plain', labels: null, t: 'null' },
    ]);
  });

  it('keeps the last history-size raw results per check, newest first', () => {
    const repo = open(5);
    for (let i = 0; i < 12; i++) {
      repo.record(result('a', nowS - 100 + i, i % 2 === 0, i));
      repo.record(result('b', nowS - 100 + i));
      if (i % 4 === 3) repo.flush();
    }
    repo.flush();
    expect(count("select count(*) n from healthcheck_history where name = 'a'")).toBe(5);
    expect(count("select count(*) n from healthcheck_history where name = 'b'")).toBe(5);
    const history = repo.history('a', 3);
    expect(history.map((entry) => entry.duration)).toEqual([11, 10, 9]);
    expect(history[0]).toEqual({
      name: 'a',
      success: false,
      'healthcheck-timestamp': nowS - 89,
      message: 'boom',
      duration: 11,
    });
    expect(repo.history('a', 1000)).toHaveLength(5);
  });

  it('answers history and uptime with the buffered results, without writing them, exactly as after the flush', () => {
    const repo = open(5);
    repo.record(result('a', nowS - 2 * HOUR, true, 10));
    repo.record(result('a', nowS - 40, false, 30));
    repo.record(result('b', nowS - 35));
    repo.flush();
    repo.record(result('a', nowS - 30, true, 20));
    repo.record(result('b', nowS - 25));
    repo.record(result('a', nowS - 20, false, 40));
    const stored = count('select count(*) n from healthcheck_history');
    const history = repo.history('a', 3);
    const all = repo.history('a', 100);
    const uptime = repo.uptime('a');
    expect(count('select count(*) n from healthcheck_history')).toBe(stored);
    expect(history.map((entry) => entry.duration)).toEqual([40, 20, 30]);
    expect(all.map((entry) => entry.duration)).toEqual([40, 20, 30, 10]);
    expect(uptime['1h']).toMatchObject({
      runs: 3,
      successes: 1,
      'min-duration': 20,
      'max-duration': 40,
      'mean-duration': 30,
    });
    expect(uptime['24h']).toMatchObject({ runs: 4, successes: 2 });
    expect(repo.history('a', 2)).toEqual(history.slice(0, 2));
    repo.flush();
    expect(count('select count(*) n from healthcheck_history')).toBe(stored + 3);
    expect(repo.history('a', 3)).toEqual(history);
    expect(repo.history('a', 100)).toEqual(all);
    expect(repo.uptime('a')).toEqual(uptime);
  });

  it('aggregates runs, successes and durations per hour and per day', () => {
    const repo = open();
    repo.record(result('a', nowS - 2 * HOUR, true, 10));
    repo.record(result('a', nowS - 30, true, 20));
    repo.record(result('a', nowS - 20, false, 40));
    repo.flush();
    const hours = db.$client
      .prepare(
        "select period_start_s, runs, successes, duration_total_ms, duration_min_ms, duration_max_ms from healthcheck_uptime where name = 'a' and granularity = 'hour' order by period_start_s",
      )
      .all();
    expect(hours).toEqual([
      {
        period_start_s: nowS - 2 * HOUR,
        runs: 1,
        successes: 1,
        duration_total_ms: 10,
        duration_min_ms: 10,
        duration_max_ms: 10,
      },
      {
        period_start_s: nowS - HOUR,
        runs: 2,
        successes: 1,
        duration_total_ms: 60,
        duration_min_ms: 20,
        duration_max_ms: 40,
      },
    ]);
    expect(count("select runs n from healthcheck_uptime where name = 'a' and granularity = 'day'")).toBe(3);
    const uptime = repo.uptime('a');
    expect(uptime['1h']).toMatchObject({
      runs: 2,
      successes: 1,
      ratio: 0.5,
      'mean-duration': 30,
      'min-duration': 20,
      'max-duration': 40,
    });
    expect(uptime['24h']).toMatchObject({ runs: 3, successes: 2, 'mean-duration': 70 / 3 });
    expect(uptime['30d'].runs).toBe(3);
    expect(repo.uptime('nothing')['7d']).toEqual({
      runs: 0,
      successes: 0,
      ratio: null,
      'mean-duration': null,
      'min-duration': null,
      'max-duration': null,
      since: nowS - 7 * DAY,
    });
  });

  it('prunes hourly aggregates older than 30 days and daily ones older than a year as a check opens a new hour', () => {
    const insert = db.$client.prepare('insert into healthcheck_uptime values (?, ?, ?, 1, 1, 5, 5, 5)');
    insert.run('a', 'hour', nowS - 31 * DAY);
    insert.run('a', 'hour', nowS - 29 * DAY);
    insert.run('a', 'day', nowS - 400 * DAY);
    insert.run('a', 'day', nowS - 300 * DAY);
    insert.run('other', 'hour', nowS - 31 * DAY);
    const repo = open();
    repo.record(result('a', nowS));
    repo.flush();
    expect(
      db.$client
        .prepare(
          "select granularity, period_start_s from healthcheck_uptime where name = 'a' order by granularity, period_start_s",
        )
        .all(),
    ).toEqual([
      { granularity: 'day', period_start_s: nowS - 300 * DAY },
      { granularity: 'day', period_start_s: nowS - (nowS % DAY) },
      { granularity: 'hour', period_start_s: nowS - 29 * DAY },
      { granularity: 'hour', period_start_s: nowS },
    ]);
    expect(count("select count(*) n from healthcheck_uptime where name = 'other'")).toBe(1);
  });

  it('saves API definitions, replaces a set in one call, and forgets checks with everything stored about them', () => {
    const repo = open();
    repo.saveCheck({ name: 'a', kind: 'tcp', definition: { name: 'a', port: 1 } });
    repo.saveCheck({ name: 'a', kind: 'tcp', definition: { name: 'a', port: 2 } });
    repo.saveCheck({ name: 'b', kind: 'dns', definition: { name: 'b' } });
    for (const name of ['a', 'b', 'c']) repo.record(result(name, nowS));
    repo.flush();
    expect(repo.listApiChecks()).toEqual([
      { name: 'a', kind: 'tcp', definition: { name: 'a', port: 2 } },
      { name: 'b', kind: 'dns', definition: { name: 'b' } },
    ]);
    repo.record(result('b', nowS + 1));
    repo.replaceChecks([{ name: 'c', kind: 'tcp', definition: { name: 'c' } }], ['b']);
    expect(repo.listApiChecks().map((check) => check.name)).toEqual(['a', 'c']);
    for (const table of ['healthcheck_results', 'healthcheck_history', 'healthcheck_uptime']) {
      expect(count(`select count(*) n from ${table} where name = 'b'`)).toBe(0);
      expect(count(`select count(*) n from ${table} where name = 'a'`)).toBeGreaterThan(0);
    }
    repo.deleteDefinitions(['a']);
    expect(repo.listApiChecks().map((check) => check.name)).toEqual(['c']);
    expect(count("select count(*) n from healthcheck_results where name = 'a'")).toBe(1);
    expect(repo.retainOnly(new Set(['c']))).toEqual(['a']);
    expect(count('select count(*) n from healthcheck_history')).toBe(1);
  });

  it('writes the results of a check as one group once the oldest is write-delay old, summing their aggregates', async () => {
    const repo = open(3, 30);
    // a: three runs, the oldest 40 s old, across an hour boundary; b: one run 10 s old, not due yet.
    repo.record(result('a', nowS - 40, true, 10));
    repo.record(result('a', nowS - 25, false, 30));
    repo.record(result('b', nowS - 10));
    repo.record(result('a', nowS + 5, true, 20));
    await repo.writeDue();
    expect(count("select count(*) n from healthcheck_history where name = 'a'")).toBe(3);
    expect(count("select count(*) n from healthcheck_history where name = 'b'")).toBe(0);
    expect(
      db.$client.prepare("select success, timestamp_s, duration_ms from healthcheck_results where name = 'a'").get(),
    ).toEqual({ success: 1, timestamp_s: nowS + 5, duration_ms: 20 });
    expect(
      db.$client
        .prepare(
          "select period_start_s, runs, successes, duration_total_ms, duration_min_ms, duration_max_ms from healthcheck_uptime where name = 'a' and granularity = 'hour' order by period_start_s",
        )
        .all(),
    ).toEqual([
      {
        period_start_s: nowS - HOUR,
        runs: 2,
        successes: 1,
        duration_total_ms: 40,
        duration_min_ms: 10,
        duration_max_ms: 30,
      },
      { period_start_s: nowS, runs: 1, successes: 1, duration_total_ms: 20, duration_min_ms: 20, duration_max_ms: 20 },
    ]);
    expect(count("select runs n from healthcheck_uptime where name = 'a' and granularity = 'day'")).toBe(3);
    // b still waits, and reads see it; 21 s later it is due.
    expect(repo.history('b', 10)).toHaveLength(1);
    await repo.writeDue();
    expect(count("select count(*) n from healthcheck_history where name = 'b'")).toBe(0);
    nowS += 21;
    repo.record(result('a', nowS, true, 50));
    await repo.writeDue();
    expect(count("select count(*) n from healthcheck_history where name = 'b'")).toBe(1);
    // A group that goes past history-size is trimmed to it in the same write.
    repo.flush();
    expect(repo.history('a', 10).map((entry) => entry.duration)).toEqual([50, 20, 30]);
    expect(count("select count(*) n from healthcheck_history where name = 'a'")).toBe(3);
  });

  it('answers the dashboard reads (recent results, duration series, uptime ratios) with the waiting results, exactly as after the write', () => {
    const repo = open(3, 30);
    repo.record(result('a', nowS - 2 * HOUR, true, 10));
    repo.flush();
    for (const [offset, success, duration] of [
      [40, false, 30],
      [30, true, 20],
      [20, true, 60],
    ] as const)
      repo.record(result('a', nowS - offset, success, duration));
    repo.record(result('b', nowS - 10));
    const recent = repo.recentResults(['a', 'b', 'none'], 3);
    const series = repo.durationSeries('a', '24h');
    expect(recent.get('a')?.map((entry) => entry.duration)).toEqual([30, 20, 60]);
    expect(recent.get('b')).toHaveLength(1);
    expect(series.map((bucket) => bucket.runs)).toEqual([1, 3]);
    expect(series[1]).toMatchObject({ successes: 2, mean: 110 / 3, min: 20, max: 60 });
    const ratios = repo.uptimeOfAll();
    expect(ratios.get('a')).toEqual({ '24h': 0.75, '7d': 0.75, '30d': 0.75 });
    expect(ratios.get('b')).toEqual({ '24h': 1, '7d': 1, '30d': 1 });
    repo.flush();
    expect(repo.uptimeOfAll()).toEqual(ratios);
    expect(repo.recentResults(['a', 'b', 'none'], 3)).toEqual(recent);
    expect(repo.durationSeries('a', '24h')).toEqual(series);
  });

  it('never writes back the buffered results of a dropped check', () => {
    const repo = open();
    repo.record(result('gone', nowS));
    repo.record(result('kept', nowS));
    repo.dropBuffered(new Set(['gone']));
    repo.flush();
    expect(repo.loadResults().map((r) => r.name)).toEqual(['kept']);
  });

  it('holds at most history-size raw results of a check, and counts the runs of the others in its aggregates', () => {
    const folded: string[] = [];
    const repo = new HealthcheckRepository(db, {
      historySize: 3,
      writeDelayS: 30,
      nowS: () => nowS,
      maxPendingResults: 5,
      onFolded: (reason) => folded.push(reason),
    });
    for (let i = 0; i < 10; i++) repo.record(result('a', nowS - 60 + i, i % 2 === 0, i));
    expect(repo.results.pending.size).toBe(3);
    expect(folded).toEqual(Array(7).fill('history_size'));
    expect(repo.history('a', 10).map((entry) => entry.duration)).toEqual([9, 8, 7]);
    expect(repo.uptime('a')['1h']).toMatchObject({ runs: 10, successes: 5, 'min-duration': 0, 'max-duration': 9 });
    // At max-pending-results (5) a result takes the place of its check's oldest; a check with none waiting keeps
    // no raw result, but its run and its latest result are written.
    repo.record(result('b', nowS - 50));
    repo.record(result('b', nowS - 49));
    repo.record(result('b', nowS - 48, true, 77));
    repo.record(result('c', nowS - 47, false, 5));
    expect(repo.results.pending.size).toBe(5);
    expect(folded.slice(7)).toEqual(['pending_full', 'pending_full']);
    expect(repo.history('b', 10).map((entry) => entry.duration)).toEqual([77, 10]);
    expect(repo.history('c', 10)).toEqual([]);
    repo.flush();
    expect(repo.results.pending.size).toBe(0);
    expect(count("select count(*) n from healthcheck_history where name = 'a'")).toBe(3);
    expect(count("select sum(runs) n from healthcheck_uptime where name = 'a' and granularity = 'hour'")).toBe(10);
    expect(count("select sum(runs) n from healthcheck_uptime where name = 'b' and granularity = 'day'")).toBe(3);
    expect(count("select sum(runs) n from healthcheck_uptime where name = 'c' and granularity = 'day'")).toBe(1);
    expect(repo.loadResults().find((r) => r.name === 'c')).toMatchObject({ success: false, duration: 5 });
  });

  it('writes a large group in slices that leave the event loop free, with reads that stay whole between them', async () => {
    const total = 10_000;
    // A slice of 0 ms writes one step (256 rows) per slice, whatever the machine's speed: 8 ms of a fast
    // machine held all 10,000 rows in one or two slices and left nothing to observe (CI, 2026-11-26).
    const repo = new HealthcheckRepository(db, {
      historySize: 100_000,
      writeDelayS: 30,
      nowS: () => nowS,
      maxPendingResults: 100_000,
      sliceMs: 0,
    });
    for (let i = 0; i < total; i++) repo.record(result('big', nowS - 100, i % 4 !== 0, 1));
    nowS += 100;
    // The observer re-queues itself with setImmediate, as the slices do, so it runs between any two of them.
    let turns = 0;
    let observing = true;
    const seen: number[] = [];
    const observe = () => {
      if (!observing) return;
      turns++;
      seen.push(repo.history('big', 100_000).length, repo.uptime('big')['1h'].runs);
      setImmediate(observe);
    };
    setImmediate(observe);
    await repo.writeDue();
    observing = false;
    expect(turns).toBeGreaterThanOrEqual(Math.ceil(total / 256));
    // Every read between two slices saw all 10,000 results, part from the database and part still waiting.
    expect(new Set(seen)).toEqual(new Set([total]));
    expect(count("select count(*) n from healthcheck_history where name = 'big'")).toBe(total);
    expect(count("select sum(runs) n from healthcheck_uptime where name = 'big' and granularity = 'hour'")).toBe(total);
    expect(repo.results.pending.size).toBe(0);
  }, 60_000);
});
