/**
 * Maintenance windows benchmark: 15,000 API windows (written to SQLite before the server starts, as a restart
 * finds them), then rounds of 20 concurrent `POST /api/v1/maintenance` while `/healthz` is asked every 10 ms on
 * its own connection. Figures: the slowest `/healthz` answer during the POSTs, and the POSTs' p50/p99. A POST
 * renders only its own window (docs/hardening.md, "Maintenance windows"), so neither grows with the count.
 *
 * `node --import tsx bench/maintenance.ts`
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startServer } from '../test/helpers/server.ts';
import { percentile, round, startBenchServer, writeResult } from './http-load.ts';

const WINDOWS = 15_000;
const ROUNDS = 10;
const CONCURRENT = 20;
const FLOOR_HEALTHZ_MAX_MS = 100;

const config = { healthchecks: { 'max-maintenance-windows': WINDOWS + ROUNDS * CONCURRENT } };
const first = await startBenchServer(config);
await first.stop();
const db = new Database(join(first.dataDir, 'vigie.db'));
const insert = db.prepare('insert into maintenance_windows (name, definition, created_at_s) values (?, ?, ?)');
db.transaction(() => {
  for (let i = 0; i < WINDOWS; i++) {
    const definition = {
      name: `window-${i}`,
      start: '2026-01-01T00:00:00.000Z',
      duration: '1h0m0s',
      every: '24h0m0s',
      labels: { team: `team-${i % 100}` },
    };
    insert.run(definition.name, JSON.stringify(definition), 1_700_000_000);
  }
})();
db.close();

const server = await startServer({
  dataDir: first.dataDir,
  config: { ...config, http: { 'body-limit': 64 * 1024 * 1024 } },
});
try {
  const healthz: number[] = [];
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const started = performance.now();
      await (await server.request('/healthz')).text();
      healthz.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  const posts: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    await Promise.all(
      Array.from({ length: CONCURRENT }, async (_, i) => {
        const body = {
          name: `bench-${round}-${i}`,
          start: new Date().toISOString(),
          duration: '10m',
          labels: { team: 'bench' },
        };
        const started = performance.now();
        const response = await server.request('/api/v1/maintenance', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        if (response.status !== 201) throw new Error(`POST refused: ${response.status} ${await response.text()}`);
        await response.text();
        posts.push(performance.now() - started);
      }),
    );
  }
  polling = false;
  await poll;
  posts.sort((a, b) => a - b);
  const healthzMaxMs = round(Math.max(...healthz));
  writeResult('maintenance', {
    windows: WINDOWS,
    posts: posts.length,
    concurrent: CONCURRENT,
    postP50Ms: percentile(posts, 0.5),
    postP99Ms: percentile(posts, 0.99),
    healthzMaxMs,
    floorHealthzMaxMs: FLOOR_HEALTHZ_MAX_MS,
    pass: healthzMaxMs <= FLOOR_HEALTHZ_MAX_MS,
  });
} finally {
  await server.stop();
}
