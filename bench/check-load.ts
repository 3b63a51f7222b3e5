/**
 * What the benchmarks that run many checks share (`checks`, `exporters`): the local targets in a child process of
 * their own (so that they do not share the service's CPU accounting), the bulk payload of TCP and HTTP checks,
 * and the figures read from the service: the scheduling lag histogram and run counters from `/metrics`, its CPU
 * time and RSS from /proc.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const CLOCK_TICKS = 100;
/** The TCP listeners are spread over several ports so that 1,000 connections a second never run short of 4-tuples. */
const TCP_PORTS = 20;

export interface Targets {
  tcpPorts: number[];
  httpPort: number;
  /** An HTTP collector that reads each request and answers 200 after `collectorDelayMs` (0: not started). */
  collectorPort: number;
  /** With `newKinds`: a ws server (`/greet` sends `hello`), a grpc-js health server (SERVING), an SMTP greeter and
   *  an RDAP server (an expiry a year away); 0 otherwise. */
  wsPort: number;
  grpcPort: number;
  smtpPort: number;
  rdapPort: number;
  process: ChildProcess;
}

const targetsSource = (collectorDelayMs: number, keepAliveTimeoutMs: number | undefined, newKinds: boolean) => `
const net = require('node:net');
const http = require('node:http');
const tcpPorts = [];
let httpPort = 0;
let collectorPort = 0;
let wsPort = 0, grpcPort = 0, smtpPort = 0, rdapPort = 0;
let pending = ${TCP_PORTS} + 1 + ${collectorDelayMs > 0 ? 1 : 0} + ${newKinds ? 4 : 0};
const ready = () => { if (--pending === 0) process.stdout.write(JSON.stringify({ tcpPorts, httpPort, collectorPort, wsPort, grpcPort, smtpPort, rdapPort }) + '\\n'); };
if (${newKinds}) {
  const { WebSocketServer } = require('ws');
  const wsHttp = http.createServer();
  const wss = new WebSocketServer({ server: wsHttp, perMessageDeflate: false });
  wss.on('connection', (socket) => { socket.on('error', () => {}); socket.send('hello'); });
  wsHttp.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => { wsPort = wsHttp.address().port; ready(); });
  const grpc = require('@grpc/grpc-js');
  const server = new grpc.Server();
  server.addService({ Check: { path: '/grpc.health.v1.Health/Check', requestStream: false, responseStream: false,
    requestSerialize: (value) => value, requestDeserialize: (bytes) => ({ bytes }),
    responseSerialize: (status) => Buffer.from([0x08, status]), responseDeserialize: (bytes) => bytes[1] } },
    { Check: (call, callback) => callback(null, 1) });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => { grpcPort = port; ready(); });
  const smtp = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.write('220 bench ESMTP\\r\\n');
    socket.on('data', (data) => { if (/QUIT/i.test(data.toString())) socket.end('221 bye\\r\\n'); });
  });
  smtp.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => { smtpPort = smtp.address().port; ready(); });
  const expiry = new Date(Date.now() + 365 * 86400000).toISOString();
  const rdapBody = JSON.stringify({ objectClassName: 'domain', events: [{ eventAction: 'expiration', eventDate: expiry }] });
  const rdap = http.createServer((request, response) => response.writeHead(200, { 'content-type': 'application/rdap+json' }).end(rdapBody));
  rdap.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => { rdapPort = rdap.address().port; ready(); });
}
for (let i = 0; i < ${TCP_PORTS}; i++) {
  const server = net.createServer((socket) => { socket.on('error', () => {}); socket.resume(); });
  server.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => { tcpPorts.push(server.address().port); ready(); });
}
const web = http.createServer((request, response) => response.end('ok'));
${keepAliveTimeoutMs === undefined ? '' : `web.keepAliveTimeout = ${keepAliveTimeoutMs};`}
web.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => { httpPort = web.address().port; ready(); });
if (${collectorDelayMs} > 0) {
  const collector = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => setTimeout(() => response.end('ok'), ${collectorDelayMs}));
  });
  collector.keepAliveTimeout = 20000;
  collector.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => { collectorPort = collector.address().port; ready(); });
}
`;

/** `keepAliveTimeoutMs`: the HTTP target's keep-alive timeout; Node's default (5 s) when not given. */
export async function startTargets(
  options: { collectorDelayMs?: number; keepAliveTimeoutMs?: number; newKinds?: boolean } = {},
): Promise<Targets> {
  const source = targetsSource(options.collectorDelayMs ?? 0, options.keepAliveTimeoutMs, options.newKinds ?? false);
  const child = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ports = await new Promise<Omit<Targets, 'process'>>((resolve) =>
    child.stdout.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as Omit<Targets, 'process'>)),
  );
  return { ...ports, process: child };
}

/** The bulk API payload: `tcp` TCP checks spread over the TCP targets and `http` HTTP checks, all at `interval`. */
export function checksPayload(targets: Targets, tcp: number, http: number, interval = '10s'): Record<string, unknown> {
  return {
    'tcp-checks': Array.from({ length: tcp }, (_, i) => ({
      name: `tcp-${i}`,
      target: '127.0.0.1',
      port: targets.tcpPorts[i % targets.tcpPorts.length],
      timeout: '5s',
      interval,
    })),
    'http-checks': Array.from({ length: http }, (_, i) => ({
      name: `http-${i}`,
      target: '127.0.0.1',
      port: targets.httpPort,
      path: '/health',
      'valid-status': [200],
      timeout: '5s',
      interval,
    })),
  };
}

export interface Scrape {
  lagBuckets: Map<number, number>;
  lagCount: number;
  success: number;
  failure: number;
  /** Node's own view of its memory, in MB, when the service exports it (prom-client's default metrics). */
  memory: { heap_used_mb: number; heap_total_mb: number; external_mb: number };
}

export function parseMetrics(text: string): Scrape {
  const lagBuckets = new Map<number, number>();
  let lagCount = 0;
  let success = 0;
  let failure = 0;
  const memory = { heap_used_mb: 0, heap_total_mb: 0, external_mb: 0 };
  const mb = (line: string) => Number((Number(line.slice(line.lastIndexOf(' ') + 1)) / 1048576).toFixed(1));
  for (const line of text.split('\n')) {
    if (line.startsWith('nodejs_heap_size_used_bytes ')) memory.heap_used_mb = mb(line);
    else if (line.startsWith('nodejs_heap_size_total_bytes ')) memory.heap_total_mb = mb(line);
    else if (line.startsWith('nodejs_external_memory_bytes ')) memory.external_mb = mb(line);
    if (line.startsWith('healthcheck_scheduling_lag_seconds_bucket')) {
      const match = /le="([^"]+)"\} (\d+)/.exec(line);
      if (match) lagBuckets.set(match[1] === '+Inf' ? Infinity : Number(match[1]), Number(match[2]));
    } else if (line.startsWith('healthcheck_scheduling_lag_seconds_count')) {
      lagCount = Number(line.split(' ')[1]);
    } else if (line.startsWith('healthcheck_total{')) {
      const value = Number(line.slice(line.lastIndexOf(' ') + 1));
      if (line.includes('status="success"')) success += value;
      else failure += value;
    }
  }
  return { lagBuckets, lagCount, success, failure, memory };
}

/**
 * A quantile of the lag between two scrapes, from cumulative buckets, interpolated linearly inside its bucket;
 * null when no run started between them.
 */
export function percentile(before: Scrape, after: Scrape, q: number): number | null {
  const total = after.lagCount - before.lagCount;
  if (total === 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [bound, cumulative] of [...after.lagBuckets].sort((a, b) => a[0] - b[0])) {
    const count = cumulative - (before.lagBuckets.get(bound) ?? 0);
    if (count >= rank) {
      if (bound === Infinity) return lower;
      return lower + ((rank - below) / Math.max(1, count - below)) * (bound - lower);
    }
    lower = bound;
    below = count;
  }
  return lower;
}

/** User and system CPU seconds from a `/proc/.../stat` line (fields after the name, which may hold `) `). */
function statCpuSeconds(stat: string): { user: number; system: number } {
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
}

/** User + system CPU time of a process so far, in seconds. */
export function cpuSeconds(pid: number): number {
  const { user, system } = statCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return user + system;
}

/**
 * User and system CPU seconds of each of a process's threads, summed by thread name (`node` for the main thread,
 * `V8 DefaultWorke` for V8's GC and compiler helpers, `libuv-worker`, Go's runtime threads all read `cabourotte`):
 * where the time goes that a main-thread profile does not show.
 */
export function threadCpuSeconds(pid: number): Map<string, { user: number; system: number }> {
  const byName = new Map<string, { user: number; system: number }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const name = tid === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const { user, system } = statCpuSeconds(stat);
    const entry = byName.get(name) ?? { user: 0, system: 0 };
    entry.user += user;
    entry.system += system;
    byName.set(name, entry);
  }
  return byName;
}

/** Share of one core per thread name and kind of time over a window, from two `threadCpuSeconds` readings. */
export function threadCpuShares(
  before: Map<string, { user: number; system: number }>,
  after: Map<string, { user: number; system: number }>,
  seconds: number,
): Record<string, { user: number; system: number }> {
  const shares: Record<string, { user: number; system: number }> = {};
  for (const [name, end] of after) {
    const start = before.get(name) ?? { user: 0, system: 0 };
    shares[name] = {
      user: Number(((end.user - start.user) / seconds).toFixed(4)),
      system: Number(((end.system - start.system) / seconds).toFixed(4)),
    };
  }
  return shares;
}

export function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

/** Voluntary context switches of each thread, summed by thread name. */
export function wakeups(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const name = /^Name:\s*(.*)$/m.exec(status)?.[1] ?? '?';
      const switches = Number(/^voluntary_ctxt_switches:\s*(\d+)$/m.exec(status)?.[1] ?? 0);
      // The main thread has the process's own id.
      const key = tid === String(pid) ? 'main' : name;
      byName.set(key, (byName.get(key) ?? 0) + switches);
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return byName;
}
