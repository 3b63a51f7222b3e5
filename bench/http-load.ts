/**
 * Shared by the HTTP benchmarks: starts the real server process, and drives requests over a fixed number of
 * keep-alive connections (one request in flight per connection, as Prometheus and the OTLP exporters do),
 * measuring throughput and latency, and the server's own CPU time over the window (utime + stime from
 * /proc/<pid>/stat): on a shared 2-core machine the wall-clock rate moves with the other load, the work per CPU
 * second much less. Results go to bench/results/<name>.json with the core count and the load average.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startServer, type TestServer } from '../test/helpers/server.ts';

export interface LoadOptions {
  path: string;
  method: 'PUT' | 'POST';
  headers: Record<string, string>;
  /** Request bodies, used in turn. */
  bodies: readonly Buffer[];
  connections: number;
  durationMs: number;
  warmupMs: number;
  expectStatus: number;
  /** The server process, whose CPU time over the window is measured. */
  serverPid: number;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU seconds (user + system) the server process spent during the window. */
  serverCpuSeconds: number;
}

const CLOCK_TICKS = 100;

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

export async function startBenchServer(config: Record<string, unknown> = {}): Promise<TestServer> {
  return startServer({ config: { http: { 'body-limit': 64 * 1024 * 1024 }, ...config }, asService: true });
}

export async function createStream(server: TestServer, name: string, config: string): Promise<void> {
  const response = await server.request(`/api/v1/stream/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ config: Buffer.from(config).toString('base64') }),
  });
  if (response.status !== 200)
    throw new Error(`cannot create stream ${name}: ${response.status} ${await response.text()}`);
}

export async function drive(url: string, options: LoadOptions): Promise<LoadResult> {
  const pool = new Pool(url, { connections: options.connections, pipelining: 1 });
  let next = 0;
  const latencies: number[] = [];
  let measuring = false;
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const body = options.bodies[next++ % options.bodies.length] as Buffer;
      const started = performance.now();
      const response = await pool.request({
        path: options.path,
        method: options.method,
        headers: options.headers,
        body,
      });
      await response.body.dump();
      if (response.statusCode !== options.expectStatus)
        throw new Error(`${options.path} answered ${response.statusCode}`);
      if (measuring) latencies.push(performance.now() - started);
    }
  };
  const workers = Array.from({ length: options.connections }, worker);
  await sleep(options.warmupMs);
  measuring = true;
  const cpuAtStart = cpuSeconds(options.serverPid);
  const started = performance.now();
  await sleep(options.durationMs);
  measuring = false;
  const seconds = (performance.now() - started) / 1000;
  const serverCpuSeconds = cpuSeconds(options.serverPid) - cpuAtStart;
  stop = true;
  await Promise.all(workers);
  await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    seconds,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    serverCpuSeconds,
  };
}

export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number);
}

export function round(value: number): number {
  return Math.round(value * 100) / 100;
}

export function writeResult(name: string, result: Record<string, unknown>): void {
  const full = { ...result, cores: cpus().length, loadAverage1m: round(loadavg()[0] ?? 0) };
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(full)}\n`);
  console.log(`${name}: ${JSON.stringify(full)}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
