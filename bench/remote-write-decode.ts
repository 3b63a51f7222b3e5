/**
 * Decode-only throughput of remote-write bodies (snappy + protobuf + mapping to events), without HTTP: the share
 * of the `remote-write` budget that ingest/remote-write.ts owns. Requests of 2,000 samples shaped like what
 * Prometheus sends (one sample per series, eight labels). Writes bench/results/remote-write-decode.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { decodeRemoteWrite, encodeRemoteWrite, type RemoteWriteSeries } from '../src/stream/ingest/remote-write.ts';

const SAMPLES_PER_REQUEST = 2000;
const REQUESTS = 500;

function makeRequest(offset: number): Buffer {
  const series: RemoteWriteSeries[] = [];
  for (let i = 0; i < SAMPLES_PER_REQUEST; i++) {
    series.push({
      labels: {
        __name__: `node_metric_${i % 50}`,
        instance: `host-${(offset + i) % 100}:9100`,
        job: 'node',
        cpu: String(i % 8),
        mode: ['idle', 'user', 'system', 'iowait'][i % 4] as string,
        env: 'prod',
        region: 'eu-west-1',
        team: 'platform',
      },
      samples: [{ value: Math.random() * 100, timestampMs: 1_735_000_000_000 + offset * 15_000 }],
    });
  }
  return encodeRemoteWrite(series);
}

const bodies = Array.from({ length: 20 }, (_, i) => makeRequest(i));
const limits = { maxDecompressedBytes: 64 * 1024 * 1024 };
for (let i = 0; i < 50; i++) decodeRemoteWrite(bodies[i % bodies.length] as Buffer, limits);

const start = process.hrtime.bigint();
let samples = 0;
for (let i = 0; i < REQUESTS; i++) samples += decodeRemoteWrite(bodies[i % bodies.length] as Buffer, limits).length;
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const result = { samplesPerSecond: Math.round(samples / seconds), samples, seconds, cores: cpus().length };
console.log(
  `remote-write decode: ${result.samplesPerSecond} samples/s (${samples} samples in ${seconds.toFixed(2)} s, ${result.cores} cores)`,
);
const dir = join(import.meta.dirname, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'remote-write-decode.json'), `${JSON.stringify(result)}\n`);
