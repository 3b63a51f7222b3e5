/**
 * Prometheus remote-write benchmark: snappy protobuf WriteRequests of 2,000 samples (200 series of 10 samples,
 * labels as a node exporter sends them) over 2 connections into an index stream, through the real server.
 * Floor: 500,000 samples/s on 2 cores.
 *
 * `node --import tsx bench/remote-write.ts`
 */
import { encodeRemoteWrite, type RemoteWriteSeries } from '../src/stream/ingest/remote-write.ts';
import { createStream, drive, round, startBenchServer, writeResult } from './http-load.ts';

const SERIES = 200;
const SAMPLES_PER_SERIES = 10;
const FLOOR = 500_000;

const server = await startBenchServer();
try {
  await createStream(server, 'bench', '{:actions {:action :index :params [[:service :instance :cpu]]}}');
  const bodies = Array.from({ length: 20 }, (_, b) => {
    const series: RemoteWriteSeries[] = Array.from({ length: SERIES }, (_, s) => ({
      labels: {
        __name__: `node_cpu_seconds_total`,
        instance: `node-${(b * SERIES + s) % 1_000}:9100`,
        job: 'node',
        cpu: String(s % 8),
        mode: 'user',
      },
      samples: Array.from({ length: SAMPLES_PER_SERIES }, (_, i) => ({
        value: b * 1000 + s + i / 10,
        timestampMs: 1_700_000_000_000 + (b * 10 + i) * 15_000,
      })),
    }));
    return encodeRemoteWrite(series);
  });
  const result = await drive(server.url, {
    serverPid: server.process.pid as number,
    path: '/api/v1/prometheus/remote-write/bench',
    method: 'POST',
    headers: {
      'content-type': 'application/x-protobuf',
      'content-encoding': 'snappy',
      'x-prometheus-remote-write-version': '0.1.0',
    },
    bodies,
    connections: 2,
    warmupMs: 2_000,
    durationMs: 8_000,
    expectStatus: 204,
  });
  const samples = SERIES * SAMPLES_PER_SERIES;
  const samplesPerSecond = Math.round((result.requests * samples) / result.seconds);
  const samplesPerServerCpuSecond = Math.round((result.requests * samples) / result.serverCpuSeconds);
  writeResult('remote-write', {
    samplesPerSecond,
    samplesPerRequest: samples,
    connections: 2,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    serverCpuSeconds: round(result.serverCpuSeconds),
    samplesPerServerCpuSecond,
    floor: FLOOR,
    pass: samplesPerSecond >= FLOOR,
  });
} finally {
  await server.stop();
}
