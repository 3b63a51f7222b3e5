/**
 * Decode-only throughput of OTLP/HTTP protobuf trace exports (protobuf decoding + mapping to events), without
 * HTTP: requests of 500 spans (bench/otlp-payload.ts). Writes
 * bench/results/otlp-decode.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { decodeOtlpTraces } from '../src/stream/ingest/otlp.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../src/stream/lang/nesting.ts';
import { otlpExportRequest } from './otlp-payload.ts';

const SPANS_PER_REQUEST = 500;
const REQUESTS = 400;
const limits = { maxDecompressedBytes: 64 * 1024 * 1024, eventDepth: DEFAULT_MAX_EVENT_DEPTH };

const bodies = Array.from({ length: 10 }, (_, i) => otlpExportRequest(i, SPANS_PER_REQUEST));
for (let i = 0; i < 40; i++)
  decodeOtlpTraces(bodies[i % bodies.length] as Uint8Array, 'application/x-protobuf', undefined, limits);

const begin = process.hrtime.bigint();
let spans = 0;
for (let i = 0; i < REQUESTS; i++)
  spans += decodeOtlpTraces(
    bodies[i % bodies.length] as Uint8Array,
    'application/x-protobuf',
    undefined,
    limits,
  ).length;
const seconds = Number(process.hrtime.bigint() - begin) / 1e9;
const result = { spansPerSecond: Math.round(spans / seconds), spans, seconds, cores: cpus().length };
console.log(
  `otlp decode: ${result.spansPerSecond} spans/s (${spans} spans in ${seconds.toFixed(2)} s, ${result.cores} cores)`,
);
const dir = join(import.meta.dirname, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'otlp-decode.json'), `${JSON.stringify(result)}\n`);
