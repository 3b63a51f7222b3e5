/**
 * Index search benchmark: 100,000 events indexed by host, then where-queries (nested and/or/not, about 1% of
 * the index matching) over HTTP, one at a time, through the real server. Figure: p50/p99 latency; floor: p99
 * at most 20 ms.
 *
 * `node --import tsx bench/index-search.ts`
 */
import { createStream, percentile, startBenchServer, writeResult } from './http-load.ts';

const EVENTS = 100_000;
const QUERIES = 300;
const FLOOR_P99_MS = 20;

const server = await startBenchServer();
try {
  await createStream(server, 'bench', '{:actions {:action :index :params [[:host]]}}');
  const start = 1_700_000_000_000_000_000;
  for (let offset = 0; offset < EVENTS; offset += 10_000) {
    const events = Array.from({ length: 10_000 }, (_, i) => ({
      host: `host-${offset + i}`,
      service: `svc-${(offset + i) % 50}`,
      metric: (offset + i) % 100,
      state: (offset + i) % 7 === 0 ? 'critical' : 'ok',
      time: start + (offset + i) * 1_000_000,
    }));
    const response = await server.request('/api/v1/stream/bench', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    if (response.status !== 200) throw new Error(`push failed: ${response.status}`);
  }
  const queries = Array.from({ length: 10 }, (_, q) =>
    Buffer.from(
      `[:and [:= :service "svc-${q}"] [:or [:> :metric 50] [:= :state "critical"]] [:not [:= :host "host-${q}"]]]`,
    ).toString('base64'),
  );
  const latencies: number[] = [];
  let matched = 0;
  for (let i = 0; i < QUERIES + 20; i++) {
    const started = performance.now();
    const response = await server.request('/api/v1/index/bench/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: queries[i % queries.length] }),
    });
    const { events } = (await response.json()) as { events: unknown[] };
    if (i >= 20) {
      latencies.push(performance.now() - started);
      matched += events.length;
    }
  }
  latencies.sort((a, b) => a - b);
  const p99Ms = percentile(latencies, 0.99);
  writeResult('index-search', {
    indexed: EVENTS,
    queries: QUERIES,
    meanMatches: Math.round(matched / QUERIES),
    p50Ms: percentile(latencies, 0.5),
    p99Ms,
    floorP99Ms: FLOOR_P99_MS,
    pass: p99Ms <= FLOOR_P99_MS,
  });
} finally {
  await server.stop();
}
