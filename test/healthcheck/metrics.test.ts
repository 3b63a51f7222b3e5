import { PerformanceObserver } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HealthcheckMetrics } from '../../src/healthcheck/metrics.ts';
import { renderMetrics } from '../../src/server/metrics.ts';
import { waitFor } from '../helpers/wait.ts';

async function scrape(registry: Registry): Promise<string> {
  let text = '';
  for await (const piece of renderMetrics(registry)) text += piece;
  return text;
}

/** How many garbage collections `work` (synchronous: nothing else runs meanwhile) started. */
async function collectionsDuring(work: () => void): Promise<number> {
  const starts: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) starts.push(entry.startTime);
  });
  observer.observe({ entryTypes: ['gc'] });
  work();
  const end = performance.now();
  // gc entries are delivered on a later turn, in order: garbage made after the work brings a collection whose entry
  // comes after those of the work.
  await waitFor(
    () => Array.from({ length: 100_000 }, (_, i) => ({ i })).length > 0 && starts.some((start) => start >= end),
    { timeoutMs: 10_000, message: 'a collection after the work, observed' },
  );
  observer.disconnect();
  return starts.filter((start) => start < end).length;
}

describe('healthcheck_scheduling_lag_seconds', () => {
  it('is a histogram of how late runs started, with its buckets, sum and count, before any run', async () => {
    const registry = new Registry();
    new HealthcheckMetrics(registry, []);
    const text = await scrape(registry);
    expect(text).toContain('# TYPE healthcheck_scheduling_lag_seconds histogram\n');
    expect(text).toContain('healthcheck_scheduling_lag_seconds_bucket{le="0.001"} 0\n');
    expect(text).toContain('healthcheck_scheduling_lag_seconds_bucket{le="+Inf"} 0\n');
    expect(text).toContain('healthcheck_scheduling_lag_seconds_sum 0\n');
    expect(text).toContain('healthcheck_scheduling_lag_seconds_count 0\n');
  });

  it('counts each lag in the buckets whose bound it does not exceed, cumulatively', async () => {
    const registry = new Registry();
    const metrics = new HealthcheckMetrics(registry, []);
    for (const lag of [0, 0.001, 0.0015, 0.03, 0.1, 20]) metrics.observeLag(lag);
    const text = await scrape(registry);
    const bucket = (le: string) =>
      Number(
        new RegExp(`^healthcheck_scheduling_lag_seconds_bucket\\{le="${le.replace('+', '\\+')}"\\} (\\d+)$`, 'm').exec(
          text,
        )?.[1],
      );
    expect(bucket('0.001')).toBe(2);
    expect(bucket('0.002')).toBe(3);
    expect(bucket('0.025')).toBe(3);
    expect(bucket('0.05')).toBe(4);
    expect(bucket('0.1')).toBe(5);
    expect(bucket('10')).toBe(5);
    expect(bucket('+Inf')).toBe(6);
    expect(text).toMatch(/^healthcheck_scheduling_lag_seconds_sum 20\.1325\d*$/m);
    expect(text).toMatch(/^healthcheck_scheduling_lag_seconds_count 6$/m);
  });

  it('observes a run start without allocating: 1,000,000 lags start at most one garbage collection', async () => {
    // Every run starts with one: at 12,000 checks, 1,200 a second. Through prom-client each cost about 240 bytes
    // of garbage (bench/JOURNAL.md, "Issue 66").
    const metrics = new HealthcheckMetrics(new Registry(), []);
    for (let i = 0; i < 10_000; i++) metrics.observeLag(i / 1e6);
    const collections = await collectionsDuring(() => {
      for (let i = 0; i < 1_000_000; i++) metrics.observeLag((i % 5000) / 1e5);
    });
    // Through prom-client, a million observations made about 240 MB of garbage: dozens of scavenges. One is
    // allowed, for a collection that what ran before in this worker left due.
    expect(collections).toBeLessThanOrEqual(1);
  });
});
