/**
 * `cluster-idle` benchmark (docs/cluster.md, "What a cluster costs at rest"): three cluster nodes on one
 * `nats-server`, with no checks, no streams and nobody calling, beside one single node started the same way, watched
 * for WINDOW_S after they settle. What a cluster node spends beyond the single node is the price of membership and of
 * following the buckets, paid whatever the load, and it is part of every node's share in bench/cluster.ts.
 * Figures: CPU of each node and of nats-server (share of one core, from /proc), each node's main-thread wake-ups a
 * second (voluntary context switches), and RSS.
 *
 *   node --import tsx bench/cluster-idle.ts      bench/results/cluster-idle.json
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

const root = mkdtempSync(join(tmpdir(), 'vigie-cluster-idle-'));
const nats = await startNatsServer();
const nodes: Node[] = [];
try {
  for (const name of ['node-a', 'node-b', 'node-c']) nodes.push(await startNode(root, name, { nats: nats.clusterNats(name), 'member-ttl': MEMBER_TTL }));
  nodes.push(await startNode(root, 'single', null));
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
    nodes: perNode,
    nats_server_cpu_cores: round(((cpuSeconds(natsPid) - natsBefore) / WINDOW_S) * 10_000) / 10_000,
  };
  for (const node of perNode) console.log(`${node.node}: ${node.cpu_cores} of a core, ${node.main_wakeups_per_s} main-thread wake-ups a second, RSS ${node.rss_mb} MB`);
  console.log(`nats-server: ${result.nats_server_cpu_cores} of a core`);
  writeResult('cluster-idle', result);
} finally {
  await Promise.all(nodes.map((node) => node.kill9()));
  await nats.stop();
}
