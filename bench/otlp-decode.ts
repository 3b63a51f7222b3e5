/**
 * Decode-only throughput of OTLP/HTTP protobuf trace exports (protobuf decoding + mapping to events), without
 * HTTP: requests of 500 spans, each with a few attributes, one event and one link. Writes
 * bench/results/otlp-decode.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { decodeOtlpTraces } from '../src/stream/ingest/otlp.ts';
import { loadProtos } from '../src/stream/ingest/protos.ts';

const SPANS_PER_REQUEST = 500;
const REQUESTS = 400;
const limits = { maxDecompressedBytes: 64 * 1024 * 1024 };

function bytes(length: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length }, (_, i) => (seed * 31 + i * 7) & 0xff));
}

function makeRequest(offset: number): Uint8Array {
  const start = 1_735_000_000_000_000_000;
  const spans = Array.from({ length: SPANS_PER_REQUEST }, (_, i) => ({
    traceId: bytes(16, offset + i),
    spanId: bytes(8, offset + i + 1),
    parentSpanId: i % 4 === 0 ? Buffer.alloc(0) : bytes(8, offset + i + 2),
    name: `GET /api/items/${i % 20}`,
    kind: 2,
    startTimeUnixNano: start + i * 1000,
    endTimeUnixNano: start + i * 1000 + 250_000,
    attributes: [
      { key: 'http.method', value: { stringValue: 'GET' } },
      { key: 'http.status_code', value: { intValue: 200 } },
      { key: 'http.route', value: { stringValue: '/api/items/:id' } },
      { key: 'sampling.ratio', value: { doubleValue: 0.25 } },
    ],
    events: [{ timeUnixNano: start + i * 1000 + 100, name: 'cache.miss', attributes: [{ key: 'key', value: { stringValue: `k${i}` } }] }],
    links: i % 10 === 0 ? [{ traceId: bytes(16, i), spanId: bytes(8, i) }] : [],
    status: { code: i % 50 === 0 ? 2 : 1 },
  }));
  const type = loadProtos().exportTraceServiceRequest;
  return type
    .encode(
      type.fromObject({
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'checkout' } }] },
            scopeSpans: [{ scope: { name: '@opentelemetry/instrumentation-http', version: '0.57.0' }, spans }],
          },
        ],
      }),
    )
    .finish();
}

const bodies = Array.from({ length: 10 }, (_, i) => makeRequest(i * SPANS_PER_REQUEST));
for (let i = 0; i < 40; i++) decodeOtlpTraces(bodies[i % bodies.length] as Uint8Array, 'application/x-protobuf', undefined, limits);

const begin = process.hrtime.bigint();
let spans = 0;
for (let i = 0; i < REQUESTS; i++) spans += decodeOtlpTraces(bodies[i % bodies.length] as Uint8Array, 'application/x-protobuf', undefined, limits).length;
const seconds = Number(process.hrtime.bigint() - begin) / 1e9;
const result = { spansPerSecond: Math.round(spans / seconds), spans, seconds, cores: cpus().length };
console.log(`otlp decode: ${result.spansPerSecond} spans/s (${spans} spans in ${seconds.toFixed(2)} s, ${result.cores} cores)`);
const dir = join(import.meta.dirname, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'otlp-decode.json'), `${JSON.stringify(result)}\n`);
