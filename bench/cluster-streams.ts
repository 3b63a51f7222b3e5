/**
 * `cluster-streams` benchmark (bench/JOURNAL.md "Cluster: streams"), in one run on this machine:
 * - HTTP ingest (PUT /api/v1/stream/<name>, batches of 1,000 events, 2 keep-alive connections per node) into an
 *   index stream: on one single node, then through three cluster nodes sharing one `nats-server` into the same
 *   stream partitioned by host. Accepted events/s, and how long the partitions' owners took to process them all.
 *   Everything shares the machine's cores: three nodes, NATS and the load generator.
 * - CPU per event: the same 300,000 events pushed through the single node, then through the cluster, in
 *   BENCH_ROUNDS pairs (3) back to back; the medians, and each pair. Each pair also splits the CPU of the single node
 *   and of the three nodes into main thread (user, kernel) and the other threads, in µs per event.
 * - Failover: events offered at 100,000/s through two nodes into a stream partitioned by host that sums each host's
 *   events (`:by [:host]` then `:sum` over 10 minutes of event time), the third node killed with kill -9 halfway
 *   through. Then every host's window is closed: the sums must add up to the events acknowledged (lost = 0). The
 *   failover time is from the kill until the survivors own every partition.
 *
 *   node --import tsx bench/cluster-streams.ts      bench/results/cluster-streams.json
 *
 * BENCH_INGEST_ONLY=1 (no failover), BENCH_CPU_PROF=<dir> (V8 profiles of the nodes), BENCH_PARTITIONS=<n>,
 * BENCH_NATS_PROF=<file> (a pprof profile of nats-server, below).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { partitionOf } from '../src/cluster/streams/log-batch.ts';
import { cpuSeconds, rssMb, threadCpuSeconds } from './check-load.ts';
import { startNatsServer } from '../test/helpers/nats.ts';
import { metric, type Node, startNode } from './cluster-nodes.ts';
import { round, writeResult } from './http-load.ts';

const BATCH = 1_000;
// BENCH_PARTITIONS=<n>: fewer partitions, more events per message (how the cost splits per message and per event).
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 64);
const MEMBER_TTL = '5s';
const INGEST_MS = 8_000;
const OFFERED_PER_S = 100_000;
const FAILOVER_PUSH_MS = 20_000;
const KILL_AT_MS = 8_000;
const HOSTS = 1_000;
const IDLE_MS = 5_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const edn = (text: string) => Buffer.from(text, 'utf8').toString('base64');

async function createStream(node: Node, name: string, config: string): Promise<void> {
  const response = await fetch(`${node.url}/api/v1/stream/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ config: edn(config) }),
  });
  if (response.status !== 200) throw new Error(`creating ${name}: ${response.status} ${await response.text()}`);
}

async function metricOf(node: Node, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  return metric(
    text
      .split('\n')
      .filter((line) => !line.startsWith(name) || line.includes(labels))
      .join('\n'),
    name,
  );
}

interface Pushed {
  accepted: number;
  refused: number;
  seconds: number;
}

/**
 * Pushes batches to every URL, `connections` requests in flight per URL, for `ms`; at most `perSecond` events a
 * second overall when given. A 503 is a refusal (counted, not fatal); `onAccepted` sees each acknowledged batch.
 */
async function push(
  urls: string[],
  stream: string,
  bodies: (i: number) => Buffer,
  options: { ms: number; connections: number; batches?: number; perSecond?: number; onAccepted?: (i: number) => void },
): Promise<Pushed> {
  const pools = urls.map((url) => new Pool(url, { connections: options.connections, pipelining: 1 }));
  let next = 0;
  let accepted = 0;
  let refused = 0;
  const started = performance.now();
  const deadline = started + options.ms;
  const perWorker =
    options.perSecond === undefined ? 0 : (BATCH * urls.length * options.connections * 1000) / options.perSecond;
  const worker = async (pool: Pool) => {
    let due = performance.now();
    while (performance.now() < deadline && next < (options.batches ?? Infinity)) {
      const i = next++;
      const response = await pool.request({
        path: `/api/v1/stream/${stream}`,
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: bodies(i),
      });
      await response.body.dump();
      if (response.statusCode === 200) {
        accepted += BATCH;
        options.onAccepted?.(i);
      } else if (response.statusCode === 503) refused += BATCH;
      else throw new Error(`push answered ${response.statusCode}`);
      if (perWorker > 0) {
        due += perWorker;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
      }
    }
  };
  await Promise.all(pools.flatMap((pool) => Array.from({ length: options.connections }, () => worker(pool))));
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(pools.map((pool) => pool.close()));
  return { accepted, refused, seconds };
}

const ingestBodies = Array.from({ length: 20 }, (_, b) =>
  Buffer.from(
    JSON.stringify({
      events: Array.from({ length: BATCH }, (_, i) => ({
        host: `host-${(b * BATCH + i) % 5_000}`,
        service: `svc-${i % 10}`,
        metric: i % 100,
        state: 'ok',
        time: 1_700_000_000_000_000_000 + (b * BATCH + i) * 1_000_000,
        tags: ['bench'],
      })),
    }),
  ),
);

/** Until the nodes' engines processed `events` events of `stream` (or `timeoutMs`); returns the seconds it took. */
async function processed(
  nodes: Node[],
  stream: string,
  events: number,
  since: number,
  timeoutMs = 120_000,
): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    const totals = await Promise.all(nodes.map((node) => metricOf(node, 'stream_events_total', `name="${stream}"`)));
    if (totals.reduce((sum, value) => sum + value, 0) - since >= events) break;
    await sleep(250);
  }
  return (performance.now() - started) / 1000;
}

/** The events both runs' CPU is measured on: the same 300 bodies of 1,000 events, in the same order. */
const MEASURED_BATCHES = 300;

/** µs per event of the main thread in user space, of the main thread in the kernel (sockets), and of the other
 *  threads (V8's garbage collection and compiler helpers, libuv's pool: on Node 20 all are named `node`), summed over
 *  `pids`: where a main-thread profile cannot look. */
interface ThreadSplit {
  main_user: number;
  main_system: number;
  other_threads: number;
}

function threadSplit(
  pids: number[],
  before: Map<string, { user: number; system: number }>[],
  events: number,
): ThreadSplit {
  const split = { main_user: 0, main_system: 0, other_threads: 0 };
  pids.forEach((pid, i) => {
    for (const [name, end] of threadCpuSeconds(pid)) {
      const start = before[i]?.get(name) ?? { user: 0, system: 0 };
      if (name === 'main') {
        split.main_user += end.user - start.user;
        split.main_system += end.system - start.system;
      } else split.other_threads += end.user - start.user + end.system - start.system;
    }
  });
  const us = (seconds: number) => round((seconds * 1e6) / events);
  return { main_user: us(split.main_user), main_system: us(split.main_system), other_threads: us(split.other_threads) };
}

/**
 * Pushes the measured events through `nodes` and waits until their partitions' owners processed them all; the CPU
 * (user + system, every thread) each of `pids` spent from the first push to the last event processed, in µs per
 * event. A single node acknowledges before its engine runs the events (its backlog), so the CPU until processed is
 * what an event costs, on both sides.
 */
async function measured(
  nodes: Node[],
  pids: number[],
): Promise<{ pushed: Pushed; drainS: number; usPerEvent: number[]; messages: number; split: ThreadSplit }> {
  const before = (await Promise.all(nodes.map((node) => metricOf(node, 'stream_events_total', 'name="bench"')))).reduce(
    (sum, value) => sum + value,
    0,
  );
  const messages = async () =>
    (await Promise.all(nodes.map((node) => metricOf(node, 'cluster_event_messages_published_total')))).reduce(
      (sum, value) => sum + value,
      0,
    );
  const messagesBefore = await messages();
  const cpuBefore = pids.map(cpuSeconds);
  // The nodes' threads (not nats-server's, the last pid of a cluster).
  const nodePids = pids.length > 1 ? pids.slice(0, -1) : pids;
  const threadsBefore = nodePids.map(threadCpuSeconds);
  const profiled = natsProfile !== null && pids.length > 1 ? profileNats(natsProfile) : null;
  const pushed = await push(
    nodes.map((node) => node.url),
    'bench',
    (i) => ingestBodies[i % ingestBodies.length] as Buffer,
    { ms: 600_000, connections: 2, batches: MEASURED_BATCHES },
  );
  const drainS = await processed(nodes, 'bench', pushed.accepted, before);
  const usPerEvent = pids.map((pid, i) =>
    round(((cpuSeconds(pid) - (cpuBefore[i] as number)) * 1e6) / pushed.accepted),
  );
  const split = threadSplit(nodePids, threadsBefore, pushed.accepted);
  await profiled;
  return { pushed, drainS, usPerEvent, messages: (await messages()) - messagesBefore, split };
}

/** The single node, warmed and its throughput taken; left running for the measured rounds. */
async function ingestSingle(root: string): Promise<{ node: Node; figures: Record<string, number> }> {
  const node = await startNode(root, 'single', null);
  await createStream(node, 'bench', '{:actions {:action :index :params [[:host :service]]}}');
  await push([node.url], 'bench', (i) => ingestBodies[i % ingestBodies.length] as Buffer, {
    ms: 2_000,
    connections: 2,
  });
  const result = await push([node.url], 'bench', (i) => ingestBodies[i % ingestBodies.length] as Buffer, {
    ms: INGEST_MS,
    connections: 2,
  });
  await waitIdle([node]);
  return { node, figures: { accepted_per_s: Math.round(result.accepted / result.seconds), refused: result.refused } };
}

/** Until the nodes' engines stop counting events (what earlier pushes left behind is processed). */
async function waitIdle(nodes: Node[]): Promise<void> {
  let last = -1;
  for (let tries = 0; tries < 240; tries++) {
    const total = (
      await Promise.all(nodes.map((node) => metricOf(node, 'stream_events_total', 'name="bench"')))
    ).reduce((sum, value) => sum + value, 0);
    if (total === last) return;
    last = total;
    await sleep(500);
  }
}

async function ingestCluster(nodes: Node[], natsPid: number): Promise<Record<string, number>> {
  await createStream(
    nodes[0] as Node,
    'bench',
    '{:partition-by [:host] :actions {:action :index :params [[:host :service]]}}',
  );
  await sleep(2_000);
  const urls = nodes.map((node) => node.url);
  await push(urls, 'bench', (i) => ingestBodies[i % ingestBodies.length] as Buffer, { ms: 2_000, connections: 2 });
  await processed(nodes, 'bench', 0, 0, 1);
  const before = (await Promise.all(nodes.map((node) => metricOf(node, 'stream_events_total', 'name="bench"')))).reduce(
    (sum, value) => sum + value,
    0,
  );
  const pids = [...nodes.map((node) => node.process.pid as number), natsPid];
  const cpuBefore = pids.map(cpuSeconds);
  const result = await push(urls, 'bench', (i) => ingestBodies[i % ingestBodies.length] as Buffer, {
    ms: INGEST_MS,
    connections: 2,
  });
  // Where the two cores went while the pushes ran: each node, and nats-server.
  const cpu = pids.map((pid, i) => round((cpuSeconds(pid) - (cpuBefore[i] as number)) / result.seconds));
  const drainS = await processed(nodes, 'bench', result.accepted, before);
  const perNode = await Promise.all(nodes.map((node) => metricOf(node, 'stream_events_total', 'name="bench"')));
  await waitIdle(nodes);
  // What the cluster spends with no event at all (membership, reassignment, checkpoint timers, this bench's
  // /metrics polls): part of every per-event figure below, more so the slower the events go through.
  const idleBefore = pids.map(cpuSeconds);
  await sleep(IDLE_MS);
  const idle = pids.map((pid, i) => round((cpuSeconds(pid) - (idleBefore[i] as number)) / (IDLE_MS / 1000)));
  return {
    accepted_per_s: Math.round(result.accepted / result.seconds),
    refused: result.refused,
    processed_all_after_s: round(drainS),
    ...Object.fromEntries(perNode.map((value, i) => [`processed_by_node_${i}`, value])),
    ...Object.fromEntries(cpu.slice(0, -1).map((share, i) => [`cpu_cores_node_${i}`, share])),
    cpu_cores_nats_server: cpu.at(-1) as number,
    idle_cores_nodes: round(idle.slice(0, -1).reduce((sum, share) => sum + share, 0)),
    idle_cores_nats_server: idle.at(-1) as number,
  };
}

/** Rounds of the measured events, each on the single node then on the cluster, back to back. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : round(((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2);
};

/**
 * The CPU per event of the single node and of the cluster, in `ROUNDS` pairs taken back to back: on this machine
 * one pair's ratio moved from 2.5 to 4.6 between runs minutes apart (other load, the cores' clocks), and a pair
 * shares its conditions. The figures are the medians, each round is listed.
 */
async function measuredRounds(single: Node, nodes: Node[], natsPid: number): Promise<Record<string, unknown>> {
  const pids = [...nodes.map((node) => node.process.pid as number), natsPid];
  const rounds: Record<string, number>[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    await waitIdle([single]);
    const one = await measured([single], [single.process.pid as number]);
    await waitIdle(nodes);
    const cost = await measured(nodes, pids);
    const nodesUs = cost.usPerEvent.slice(0, -1);
    const nodesSum = round(nodesUs.reduce((sum, us) => sum + us, 0));
    rounds.push({
      single_cpu_us_per_event: one.usPerEvent[0] as number,
      single_accepted_per_s: Math.round(one.pushed.accepted / one.pushed.seconds),
      ...Object.fromEntries(nodesUs.map((us, i) => [`cpu_us_per_event_node_${i}`, us])),
      cpu_us_per_event_nodes: nodesSum,
      cpu_us_per_event_nats_server: cost.usPerEvent.at(-1) as number,
      cluster_to_single_cpu_per_event: round(nodesSum / (one.usPerEvent[0] as number)),
      events_per_message: round(cost.pushed.accepted / cost.messages),
      cluster_accepted_per_s: Math.round(cost.pushed.accepted / cost.pushed.seconds),
      processed_after_s: round(cost.drainS),
      ...Object.fromEntries(Object.entries(one.split).map(([key, us]) => [`single_${key}_us`, us])),
      ...Object.fromEntries(Object.entries(cost.split).map(([key, us]) => [`nodes_${key}_us`, us])),
    });
  }
  const of = (key: string) => median(rounds.map((round) => round[key] as number));
  return {
    measured_events_per_round: MEASURED_BATCHES * BATCH,
    cpu_us_per_event_single: of('single_cpu_us_per_event'),
    cpu_us_per_event_nodes: of('cpu_us_per_event_nodes'),
    cpu_us_per_event_nats_server: of('cpu_us_per_event_nats_server'),
    cluster_to_single_cpu_per_event: of('cluster_to_single_cpu_per_event'),
    events_per_message: of('events_per_message'),
    // After the rounds: the single node's index holds 50,000 events, each node's about a third of them.
    rss_mb_single: Math.round(rssMb(single.process.pid as number)),
    rss_mb_nodes: nodes.map((node) => Math.round(rssMb(node.process.pid as number))),
    rounds,
  };
}

async function failover(nodes: Node[]): Promise<Record<string, number | string>> {
  const [a, b, c] = nodes as [Node, Node, Node];
  await createStream(
    a,
    'counted',
    '{:partition-by [:host] :actions {:action :by :params [{:fields [:host]}] :children [{:action :sum :params [{:duration "10m"}] :children [{:action :index :params [[:host]]}]}]}}',
  );
  await sleep(2_000);
  const hour = 3_600 * 1e9;
  const t0 = 500_000 * hour;
  // One event time for all: a batch applied before an earlier one must not fall before its window's start.
  const body = (i: number) =>
    Buffer.from(
      JSON.stringify({
        events: Array.from({ length: BATCH }, (_, k) => ({
          host: `h${(i * BATCH + k) % HOSTS}`,
          service: 'count',
          metric: 1,
          ttl: 1e6,
          time: t0,
        })),
      }),
    );
  let killedAt = 0;
  const killer = (async () => {
    await sleep(KILL_AT_MS);
    killedAt = performance.now();
    await c.kill9();
  })();
  // The survivors own every partition again: polled from the kill on.
  const owned = (async () => {
    await killer;
    for (;;) {
      const counts = await Promise.all(
        [a, b].map((node) => metricOf(node, 'cluster_partitions_owned', 'stream="counted"')),
      );
      if ((counts[0] ?? 0) + (counts[1] ?? 0) >= PARTITIONS) return (performance.now() - killedAt) / 1000;
      await sleep(100);
    }
  })();
  const result = await push([a.url, b.url], 'counted', body, {
    ms: FAILOVER_PUSH_MS,
    connections: 4,
    perSecond: OFFERED_PER_S,
  });
  const failoverS = await owned;
  // One event per host 11 minutes later (event time) closes every window.
  const closing = Array.from({ length: HOSTS }, (_, h) => ({
    host: `h${h}`,
    service: 'count',
    metric: 0,
    ttl: 1e6,
    time: t0 + 11 * 60e9,
  }));
  const closed = await fetch(`${a.url}/api/v1/stream/counted`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ events: closing }),
  });
  if (closed.status !== 200) throw new Error(`closing the windows: ${closed.status}`);
  let counted = 0;
  let short: string[] = [];
  const started = performance.now();
  while (performance.now() - started < 120_000) {
    const response = await fetch(`${a.url}/api/v1/index/counted/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: edn('[:always-true]'), limit: HOSTS }),
    });
    if (response.status === 200) {
      const found = ((await response.json()) as { events: { host: string; metric: number }[] }).events;
      counted = found.reduce((sum, event) => sum + event.metric, 0);
      // Every acknowledged batch holds one event of each host.
      const expected = result.accepted / HOSTS;
      short = found
        .filter((event) => event.metric < expected)
        .map(
          (event) =>
            `${event.host}/p${partitionOf({ host: event.host }, ['host'], PARTITIONS)}:-${expected - event.metric}`,
        );
      if (found.length === HOSTS && counted >= result.accepted) break;
    }
    await sleep(500);
  }
  const gaps = (
    await Promise.all([a, b].map((node) => metricOf(node, 'cluster_partition_consumer_gaps_total')))
  ).reduce((sum, value) => sum + value, 0);
  for (const node of [a, b])
    for (const line of node.logs.filter((text) => /"level":(40|50)/.test(text)).slice(-5))
      console.log(`${node.name}: ${line.slice(0, 300)}`);
  return {
    consumer_gaps_recovered: gaps,
    offered_per_s: OFFERED_PER_S,
    accepted_per_s: Math.round(result.accepted / result.seconds),
    acknowledged: result.accepted,
    refused: result.refused,
    counted,
    lost: Math.max(0, result.accepted - counted),
    failover_s: round(failoverS),
    counted_after_s: round((performance.now() - started) / 1000),
    ...(short.length > 0 ? { short_hosts: short.slice(0, 20).join(' ') } : {}),
  };
}

/**
 * BENCH_NATS_PROF=<file>: nats-server runs with Go's pprof endpoint, and a CPU profile of the first 3 s of the
 * measured pushes is written to <file> (gzipped pprof protobuf: `go tool pprof`, or any pprof reader).
 */
const natsProfile = process.env.BENCH_NATS_PROF ?? null;

async function profileNats(file: string): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${nats.profilePort}/debug/pprof/profile?seconds=3`);
  writeFileSync(file, Buffer.from(await response.arrayBuffer()));
}

const root = mkdtempSync(join(tmpdir(), 'vigie-bench-cluster-streams-'));
// BENCH_INGEST_ONLY=1: the per-event costs only (no failover), the nodes stopped cleanly (their profiles written).
const ingestOnly = process.env.BENCH_INGEST_ONLY === '1';
const single = await ingestSingle(root);
const nats = await startNatsServer({ storeDir: join(root, 'nats'), profile: natsProfile !== null });
// Each node with its own user of the documented NATS config (docs/cluster.md, "Securing NATS").
const cluster = (node: string) => ({ nats: nats.clusterNats(node), 'member-ttl': MEMBER_TTL, partitions: PARTITIONS });
const nodes = [
  await startNode(root, 'node-a', cluster('node-a')),
  await startNode(root, 'node-b', cluster('node-b')),
  await startNode(root, 'node-c', cluster('node-c')),
];
try {
  await sleep(3_000);
  const three = await ingestCluster(nodes, nats.process?.pid as number);
  const perEvent = await measuredRounds(single.node, nodes, nats.process?.pid as number);
  await single.node.stop();
  const figures = {
    single_node_ingest: single.figures,
    three_node_ingest: three,
    cpu_per_event: perEvent,
    partitions: PARTITIONS,
  };
  if (ingestOnly) {
    writeResult('cluster-streams-ingest', figures);
    await Promise.all(nodes.map((node) => node.stop()));
  } else {
    const failed = await failover(nodes);
    writeResult('cluster-streams', { ...figures, failover_at_100k: failed, member_ttl: MEMBER_TTL });
  }
} finally {
  await Promise.all([single.node, ...nodes].map((node) => node.kill9()));
  await nats.kill9();
}
