/**
 * HTTP ingest benchmark: PUT /api/v1/stream/<name> with batches of 1,000 JSON events over 2 keep-alive
 * connections, end to end through the real server into an index stream. Floor: 300,000 events/s on 2 cores.
 *
 * `node --import tsx bench/http-ingest.ts`
 */
import { createStream, drive, round, startBenchServer, writeResult } from './http-load.ts';

const BATCH = 1_000;
const FLOOR = 300_000;

const server = await startBenchServer();
try {
  await createStream(server, 'bench', '{:actions {:action :index :params [[:host :service]]}}');
  const start = 1_700_000_000_000_000_000;
  const bodies = Array.from({ length: 20 }, (_, b) =>
    Buffer.from(
      JSON.stringify({
        events: Array.from({ length: BATCH }, (_, i) => ({
          host: `host-${(b * BATCH + i) % 5_000}`,
          service: `svc-${i % 10}`,
          metric: (i * 13) % 100,
          state: 'ok',
          time: start + (b * BATCH + i) * 1_000_000,
          tags: ['bench'],
        })),
      }),
    ),
  );
  const result = await drive(server.url, {
    serverPid: server.process.pid as number,
    path: '/api/v1/stream/bench',
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    bodies,
    connections: 2,
    warmupMs: 2_000,
    durationMs: 8_000,
    expectStatus: 200,
  });
  const eventsPerSecond = Math.round((result.requests * BATCH) / result.seconds);
  const eventsPerServerCpuSecond = Math.round((result.requests * BATCH) / result.serverCpuSeconds);
  writeResult('http-ingest', {
    eventsPerSecond,
    batch: BATCH,
    connections: 2,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    serverCpuSeconds: round(result.serverCpuSeconds),
    eventsPerServerCpuSecond,
    floor: FLOOR,
    pass: eventsPerSecond >= FLOOR,
  });
} finally {
  await server.stop();
}
