/**
 * `cluster-idle` benchmark (docs/cluster.md, "What a cluster costs at rest"): three cluster nodes on one
 * `nats-server`, with no checks, no streams and nobody calling, beside one single node started the same way, watched
 * for WINDOW_S after they settle. What a cluster node spends beyond the single node is the price of membership and of
 * following the buckets, paid whatever the load, and it is part of every node's share in bench/cluster.ts.
 * Figures: CPU of each node and of nats-server (share of one core, from /proc), each node's main-thread wake-ups a
 * second (voluntary context switches), and RSS.
 *
 *   node --import tsx bench/cluster-idle.ts      bench/results/cluster-idle.json
 *
 * BENCH_STREAM=1: the same with one partitioned stream on every node (`cluster.partitions` 64, 1,000 events pushed
 * once before the settling, so that every partition holds state and a checkpoint): what a stream costs at rest
 * (bench/results/cluster-idle-stream.json).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer } from '../test/helpers/nats.ts';
import { cpuSeconds, rssMb, wakeups } from './check-load.ts';
import { type Node, startNode } from './cluster-nodes.ts';
import { round, writeResult } from './http-load.ts';

/** As bench/idle.ts: startup's compiles and V8's memory reducer (32 s in) are over before the window opens. */
const SETTLE_MS = 45_000;
const WINDOW_S = Number(process.env.IDLE_WINDOW_S ?? 60);
const MEMBER_TTL = '10s';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const WITH_STREAM = process.env.BENCH_STREAM === '1';
const STREAM = '{:partition-by [:host] :actions {:action :index :params [[:host]]}}';

/** A partitioned stream on `node` (through the API: a cluster node writes it to the bucket, the others apply it), and
 *  1,000 events pushed into it once. */
async function idleStream(node: Node): Promise<void> {
  const request = (method: string, path: string, body: unknown) =>
    fetch(`${node.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  for (let tries = 0; ; tries++) {
    const created = await request('POST', '/api/v1/stream/idle', { config: Buffer.from(STREAM).toString('base64') });
    if (created.status === 200) break;
    if (tries >= 30) throw new Error(`creating the stream on ${node.name}: ${created.status} ${await created.text()}`);
    await sleep(1_000);
  }
  const events = Array.from({ length: 1_000 }, (_, i) => ({ host: `host-${i}`, service: 'idle', metric: i, ttl: 1e9 }));
  for (let tries = 0; ; tries++) {
    const pushed = await request('PUT', '/api/v1/stream/idle', { events });
    if (pushed.status === 200) break;
    if (tries >= 30)
      throw new Error(`pushing into the stream on ${node.name}: ${pushed.status} ${await pushed.text()}`);
    await sleep(1_000);
  }
}

const root = mkdtempSync(join(tmpdir(), 'vigie-cluster-idle-'));
const nats = await startNatsServer();
const nodes: Node[] = [];
try {
  for (const name of ['node-a', 'node-b', 'node-c'])
    nodes.push(await startNode(root, name, { nats: nats.clusterNats(name), 'member-ttl': MEMBER_TTL }));
  nodes.push(await startNode(root, 'single', null));
  if (WITH_STREAM) for (const node of [nodes[0], nodes[3]] as Node[]) await idleStream(node);
  const natsPid = nats.process?.pid as number;
  await sleep(SETTLE_MS);
  const pids = nodes.map((node) => node.process.pid as number);
  const cpuBefore = pids.map(cpuSeconds);
  const natsBefore = cpuSeconds(natsPid);
  const wakeBefore = pids.map((pid) => wakeups(pid).get('main') ?? 0);
  await sleep(WINDOW_S * 1000);
  const perNode = nodes.map((node, i) => ({
    node: node.name,
    cpu_cores: round(((cpuSeconds(pids[i] as number) - (cpuBefore[i] as number)) / WINDOW_S) * 10_000) / 10_000,
    main_wakeups_per_s: round(((wakeups(pids[i] as number).get('main') ?? 0) - (wakeBefore[i] as number)) / WINDOW_S),
    rss_mb: Math.round(rssMb(pids[i] as number)),
  }));
  const result = {
    window_s: WINDOW_S,
    member_ttl: MEMBER_TTL,
    ...(WITH_STREAM ? { stream: STREAM, partitions: 64 } : {}),
    nodes: perNode,
    nats_server_cpu_cores: round(((cpuSeconds(natsPid) - natsBefore) / WINDOW_S) * 10_000) / 10_000,
  };
  for (const node of perNode)
    console.log(
      `${node.node}: ${node.cpu_cores} of a core, ${node.main_wakeups_per_s} main-thread wake-ups a second, RSS ${node.rss_mb} MB`,
    );
  console.log(`nats-server: ${result.nats_server_cpu_cores} of a core`);
  writeResult(WITH_STREAM ? 'cluster-idle-stream' : 'cluster-idle', result);
} finally {
  await Promise.all(nodes.map((node) => node.kill9()));
  await nats.stop();
}
