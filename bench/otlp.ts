/**
 * OTLP traces benchmark: protobuf ExportTraceServiceRequests of 500 spans (a few attributes, one span event)
 * over 2 connections into an index stream, through the real server. Floor: 100,000 spans/s on 2 cores.
 *
 * `node --import tsx bench/otlp.ts`
 */
import { loadProtos } from '../src/stream/ingest/protos.ts';
import { createStream, drive, startBenchServer, writeResult } from './http-load.ts';

const SPANS = 500;
const FLOOR = 100_000;

function id(length: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length }, (_, i) => (seed * 31 + i * 7) & 0xff));
}

function request(offset: number): Buffer {
  const start = 1_735_000_000_000_000_000;
  const spans = Array.from({ length: SPANS }, (_, i) => ({
    traceId: id(16, offset + i),
    spanId: id(8, offset * SPANS + i),
    parentSpanId: i % 4 === 0 ? Buffer.alloc(0) : id(8, offset + i + 2),
    name: `GET /api/items/${i % 20}`,
    kind: 2,
    startTimeUnixNano: start + (offset * SPANS + i) * 1000,
    endTimeUnixNano: start + (offset * SPANS + i) * 1000 + 250_000,
    attributes: [
      { key: 'http.method', value: { stringValue: 'GET' } },
      { key: 'http.status_code', value: { intValue: 200 } },
      { key: 'http.route', value: { stringValue: '/api/items/:id' } },
    ],
    events: [{ timeUnixNano: start + i * 1000 + 100, name: 'cache.miss' }],
    status: { code: i % 50 === 0 ? 2 : 1 },
  }));
  const type = loadProtos().exportTraceServiceRequest;
  const message = type.fromObject({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'shop' } }] },
        scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans }],
      },
    ],
  });
  return Buffer.from(type.encode(message).finish());
}

const server = await startBenchServer();
try {
  await createStream(server, 'bench', '{:actions {:action :index :params [[:span-id]]}}');
  const bodies = Array.from({ length: 20 }, (_, b) => request(b));
  const result = await drive(server.url, {
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
  writeResult('otlp', { spansPerSecond, spansPerRequest: SPANS, connections: 2, p50Ms: result.p50Ms, p99Ms: result.p99Ms, floor: FLOOR, pass: spansPerSecond >= FLOOR });
} finally {
  await server.stop();
}
