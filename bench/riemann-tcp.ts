/**
 * Riemann TCP input benchmark, through the real server: 4 TCP connections each sending `Msg` frames of 100 events
 * (host, service, state, metric_d, time_micros, a tag and two attributes) into a default stream with an index,
 * each connection keeping a window of frames in flight as a pipelining client does. Floor: 300,000 events/s on
 * 2 cores (the load generator shares them). Also the real client's figure: `riemann-client send -0` reading
 * metrics from stdin, one event per Msg, each waiting for its reply.
 *
 * `node --import tsx bench/riemann-tcp.ts`
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { loadavg } from 'node:os';
import { loadProtos } from '../src/stream/ingest/protos.ts';
import type { TestServer } from '../test/helpers/server.ts';
import { createStream, percentile, round, startBenchServer, writeResult } from './http-load.ts';

const CONNECTIONS = 4;
const EVENTS_PER_FRAME = 100;
const WINDOW = 8;
const WARMUP_MS = 2_000;
const DURATION_MS = 8_000;
const CLIENT_EVENTS = 20_000;
const FLOOR = 300_000;

function frames(): Buffer[] {
  const type = loadProtos().riemannMsg;
  return Array.from({ length: 20 }, (_, f) => {
    const events = Array.from({ length: EVENTS_PER_FRAME }, (_, i) => ({
      host: `host-${(f * EVENTS_PER_FRAME + i) % 500}`,
      service: `cpu-${i % 8}`,
      state: i % 10 === 0 ? 'warning' : 'ok',
      metricD: f + i / 100,
      timeMicros: 1_735_047_872_000_000 + f * 1_000_000 + i,
      tags: ['bench'],
      attributes: [
        { key: 'region', value: 'eu-west' },
        { key: 'env', value: 'prod' },
      ],
    }));
    const body = type.encode(type.fromObject({ events })).finish();
    const frame = Buffer.alloc(4 + body.length);
    frame.writeUInt32BE(body.length, 0);
    frame.set(body, 4);
    return frame;
  });
}

interface Counters {
  measuring: boolean;
  stop: boolean;
  frames: number;
  latencies: number[];
}

/** One connection: keeps WINDOW frames in flight, counts the ok replies. */
function runConnection(port: number, payloads: Buffer[], counters: Counters): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    const sentAt: number[] = [];
    let next = 0;
    let pending: Buffer = Buffer.alloc(0);
    const sendOne = () => {
      sentAt.push(performance.now());
      socket.write(payloads[next++ % payloads.length] as Buffer);
    };
    socket.on('connect', () => {
      for (let i = 0; i < WINDOW; i++) sendOne();
    });
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
        const length = pending.readUInt32BE(0);
        // {ok: true} is `10 01`; anything else is an error reply.
        if (length !== 2 || pending[4] !== 0x10 || pending[5] !== 0x01) {
          reject(new Error(`error reply: ${pending.subarray(4, 4 + length).toString('utf8')}`));
          socket.destroy();
          return;
        }
        pending = pending.subarray(4 + length);
        const started = sentAt.shift() as number;
        if (counters.measuring) {
          counters.frames++;
          counters.latencies.push(performance.now() - started);
        }
        if (!counters.stop) sendOne();
        else if (sentAt.length === 0) {
          socket.end();
          resolve();
        }
      }
    });
    socket.on('error', reject);
  });
}

/** CPU seconds (user + system) the server process used so far: on a shared machine, events per CPU second of
 *  the server says what wall-clock throughput cannot. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function streamEvents(server: TestServer, name: string): Promise<number> {
  const text = await (await server.request('/metrics')).text();
  const match = new RegExp(`^stream_events_total\\{name="${name}"\\} (\\d+)`, 'm').exec(text);
  return Number(match?.[1] ?? 0);
}

/** The real client: `riemann-client send -0`, one event per stdin line. */
async function riemannClientThroughput(
  server: TestServer,
  port: number,
): Promise<{ eventsPerSecond: number; delivered: number }> {
  const before = await streamEvents(server, 'bench');
  const started = performance.now();
  const child = spawn(
    'riemann-client',
    ['send', '-0', '-S', 'client-bench', '-h', 'riemann-client', '127.0.0.1', String(port)],
    { stdio: ['pipe', 'ignore', 'inherit'] },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.stdin.end(Array.from({ length: CLIENT_EVENTS }, (_, i) => `${i % 100} ok`).join('\n') + '\n');
  const code = await exited;
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`riemann-client exited with ${code}`);
  const delivered = (await streamEvents(server, 'bench')) - before;
  return { eventsPerSecond: Math.round(delivered / seconds), delivered };
}

const server = await startBenchServer({ streams: { tcp: { host: '127.0.0.1', port: 0 } } });
try {
  const line = await server.waitForLog(/Riemann TCP input listening/);
  const port = Number(/listening on [\d.]+:(\d+)/.exec(line)?.[1]);
  await createStream(server, 'bench', '{:default true :actions {:action :index :params [[:host :service]]}}');
  const payloads = frames();
  const counters: Counters = { measuring: false, stop: false, frames: 0, latencies: [] };
  const running = Array.from({ length: CONNECTIONS }, () => runConnection(port, payloads, counters));
  await new Promise((resolve) => setTimeout(resolve, WARMUP_MS));
  const pid = server.process.pid as number;
  counters.measuring = true;
  const started = performance.now();
  const cpuBefore = cpuSeconds(pid);
  await new Promise((resolve) => setTimeout(resolve, DURATION_MS));
  counters.measuring = false;
  const serverCpu = cpuSeconds(pid) - cpuBefore;
  const seconds = (performance.now() - started) / 1000;
  counters.stop = true;
  await Promise.all(running);
  const eventsPerSecond = Math.round((counters.frames * EVENTS_PER_FRAME) / seconds);
  const sorted = counters.latencies.sort((a, b) => a - b);
  const client = await riemannClientThroughput(server, port);
  writeResult('riemann-tcp', {
    eventsPerSecond,
    eventsPerFrame: EVENTS_PER_FRAME,
    connections: CONNECTIONS,
    framesInFlightPerConnection: WINDOW,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    serverCpuSeconds: round(serverCpu),
    eventsPerServerCpuSecond: Math.round((counters.frames * EVENTS_PER_FRAME) / serverCpu),
    riemannClientEventsPerSecond: client.eventsPerSecond,
    riemannClientEvents: client.delivered,
    floor: FLOOR,
    pass: eventsPerSecond >= FLOOR,
    windowSeconds: round(seconds),
    // Measured at the end of the window; writeResult adds the core count and the load average once more.
    loadAverageAtEnd: round(loadavg()[0] as number),
    riemannClientMethod: 'riemann-client send -0: one event per Msg, each reply awaited',
  });
} finally {
  await server.stop();
}
