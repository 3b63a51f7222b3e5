/**
 * What a scrape of `/metrics` costs for its per-check families (src/healthcheck/metrics.ts): 1,200 and 12,000
 * checks with labels, each with a few runs and its state, rendered whole (`renderMetrics`, as the route sends it) 20
 * times after 5 unmeasured. Figures per scrape: CPU of this process, bytes of text, and the time V8 spent collecting
 * garbage (young and full collections; the text and what building it leaves behind are all garbage once sent).
 *
 * `node --import tsx bench/metrics-scrape.ts`
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { HealthcheckMetrics } from '../src/healthcheck/metrics.ts';
import { renderMetrics } from '../src/server/metrics.ts';
import { round, writeResult } from './http-load.ts';

const WARMUP = 5;
const SCRAPES = 20;

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

async function scrape(registry: Registry): Promise<number> {
  let bytes = 0;
  // Encoded as the route's stream encodes each piece before it writes it.
  for await (const piece of renderMetrics(registry)) bytes += Buffer.from(piece, 'utf8').length;
  return bytes;
}

async function perScrape(checks: number): Promise<{ cpu_ms: number; gc_ms: number; text_mb: number }> {
  const registry = new Registry();
  const metrics = new HealthcheckMetrics(registry, ['env']);
  for (let i = 0; i < checks; i++) {
    const series = metrics.labelsFor(`check-${i}`, { env: i % 2 === 0 ? 'prod' : 'staging' });
    for (let run = 0; run < 5; run++) metrics.observeRun(series, run !== 3, 0.0005 * (1 + ((i + run) % 40)));
    // Every registered check has a state (`healthcheck_state`, six series).
    metrics.observeCheckState(series, i % 50 === 0 ? 'down' : 'up');
  }
  for (let i = 0; i < WARMUP; i++) await scrape(registry);
  const gcBefore = gcMs;
  const before = process.cpuUsage();
  let bytes = 0;
  for (let i = 0; i < SCRAPES; i++) bytes = await scrape(registry);
  const used = process.cpuUsage(before);
  // The observer is told of collections asynchronously: let it catch up.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return {
    cpu_ms: round((used.user + used.system) / 1000 / SCRAPES),
    gc_ms: round((gcMs - gcBefore) / SCRAPES),
    text_mb: round(bytes / 1e6),
  };
}

const result = { checks_1200: await perScrape(1200), checks_12000: await perScrape(12_000) };
console.log(JSON.stringify(result));
writeResult('metrics-scrape', result);
