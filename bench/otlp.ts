/**
 * OTLP traces benchmark: protobuf ExportTraceServiceRequests of 500 spans (bench/otlp-payload.ts)
 * over 2 connections into an index stream, through the real server. Floor: 100,000 spans/s on 2 cores.
 *
 * `node --import tsx bench/otlp.ts`
 */
import { createStream, drive, round, startBenchServer, writeResult } from './http-load.ts';
import { otlpExportRequest } from './otlp-payload.ts';

const SPANS = 500;
const FLOOR = 100_000;

const server = await startBenchServer();
try {
  await createStream(server, 'bench', '{:actions {:action :index :params [[:span-id]]}}');
  const bodies = Array.from({ length: 20 }, (_, b) => otlpExportRequest(b, SPANS));
  const result = await drive(server.url, {
    serverPid: server.process.pid as number,
    path: '/api/v1/opentelemetry/v1/traces/bench',
    method: 'POST',
    headers: { 'content-type': 'application/x-protobuf' },
    bodies,
    connections: 2,
    warmupMs: 2_000,
    durationMs: 8_000,
    expectStatus: 200,
  });
  const spansPerSecond = Math.round((result.requests * SPANS) / result.seconds);
  const spansPerServerCpuSecond = Math.round((result.requests * SPANS) / result.serverCpuSeconds);
  writeResult('otlp', {
    spansPerSecond,
    spansPerRequest: SPANS,
    connections: 2,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    serverCpuSeconds: round(result.serverCpuSeconds),
    spansPerServerCpuSecond,
    floor: FLOOR,
    pass: spansPerSecond >= FLOOR,
  });
} finally {
  await server.stop();
}
