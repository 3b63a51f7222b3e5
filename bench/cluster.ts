/**
 * `cluster` benchmark (docs/performance.md "Cluster"): 12,000 checks (10,000 TCP + 2,000 HTTP at 10 s) on one
 * single node, then on three cluster nodes sharing one `nats-server` (all on this machine, with the targets in a
 * process of their own), in one run:
 * - CPU per node over a 40 s window after a 20 s warm-up (utime + stime from /proc), and the runs each made: in a
 *   cluster each node runs a third of the checks and stores every result;
 * - failover: a node killed with kill -9 under that load, and the time until every check it ran has a newer
 *   result from another node (bounded by member-ttl + interval: 10 s + 10 s here).
 * The machine's cores are shared by everything: three nodes, NATS and the targets.
 *
 *   node --import tsx bench/cluster.ts      bench/results/cluster.json
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../bin/build.mjs';
import { checksPayload, cpuSeconds, rssMb, startTargets, type Targets } from './check-load.ts';
import { startNatsServer } from '../test/helpers/nats.ts';
import { metric, type Node, startNode } from './cluster-nodes.ts';

const TCP = 10_000;
const HTTP = 2_000;
const WARMUP_S = 20;
const WINDOW_S = 40;
const MEMBER_TTL = '10s';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Result {
  name: string;
  'healthcheck-timestamp': number;
  node?: string;
}

async function results(node: Node): Promise<Result[]> {
  return ((await (await fetch(`${node.url}/api/v1/result`)).json()) as { result: Result[] }).result;
}


/** CPU share of one core and RSS of each node over the window, and the runs each made itself. */
async function measure(nodes: Node[], runsMetric: string): Promise<{ node: string; cpu_share_of_one_core: number; rss_mb: number; own_runs: number }[]> {
  await sleep(WARMUP_S * 1000);
  // The scrapes stay outside the CPU window: rendering 12,000 checks' series costs a node about 0.3 s of CPU, as
  // much for a cluster node as for the single node, which would push their ratio towards 1.
  const runsStart = await Promise.all(nodes.map(async (node) => metric(await (await fetch(`${node.url}/metrics`)).text(), runsMetric)));
  const cpuStart = nodes.map((node) => cpuSeconds(node.process.pid as number));
  const started = performance.now();
  await sleep(WINDOW_S * 1000);
  const elapsed = (performance.now() - started) / 1000;
  return Promise.all(
    nodes.map(async (node, i) => ({
      node: node.name,
      cpu_share_of_one_core: Number(((cpuSeconds(node.process.pid as number) - (cpuStart[i] as number)) / elapsed).toFixed(4)),
      rss_mb: Math.round(rssMb(node.process.pid as number)),
      own_runs: metric(await (await fetch(`${node.url}/metrics`)).text(), runsMetric) - (runsStart[i] as number),
    })),
  );
}

/** On a busy machine the JetStream write of the 12,000 definitions can time out (a 503): the bulk is sent again. */
async function bulk(node: Node, targets: Targets): Promise<void> {
  for (let tries = 1; ; tries++) {
    const answer = await fetch(`${node.url}/api/v1/healthcheck/bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(checksPayload(targets, TCP, HTTP)),
    });
    if (answer.status === 201) return;
    if (answer.status !== 503 || tries >= 20) throw new Error(`bulk: ${answer.status} ${await answer.text()}`);
    await sleep(1_000);
  }
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'vigie-bench-cluster-'));
  const targets = await startTargets();
  const nats = await startNatsServer({ storeDir: join(root, 'nats') });
  const nodes: Node[] = [];
  try {
    // One node, no cluster.
    const single = await startNode(root, 'single', null);
    await bulk(single, targets);
    const [alone] = await measure([single], 'healthcheck_scheduling_lag_seconds_count');
    await single.stop();
    console.log(`single node: ${alone?.cpu_share_of_one_core} of a core, ${alone?.own_runs} runs in ${WINDOW_S} s, RSS ${alone?.rss_mb} MB`);

    // Three cluster nodes on one NATS server.
    // Each node with its own user of the documented NATS config (docs/cluster.md, "Securing NATS").
    const cluster = (node: string) => ({ nats: nats.clusterNats(node), 'member-ttl': MEMBER_TTL });
    for (const name of ['node-a', 'node-b', 'node-c']) nodes.push(await startNode(root, name, cluster(name)));
    for (;;) {
      const views = await Promise.all(nodes.map(async (node) => (await (await fetch(`${node.url}/api/v1/cluster/members`)).json()) as { joined: boolean; result: unknown[] }));
      if (views.every((view) => view.joined && view.result.length === 3)) break;
      await sleep(200);
    }
    await bulk(nodes[0] as Node, targets);
    const perNode = await measure(nodes, 'cluster_results_published_total');
    for (const figure of perNode) console.log(`${figure.node}: ${figure.cpu_share_of_one_core} of a core, ${figure.own_runs} runs of its own in ${WINDOW_S} s, RSS ${figure.rss_mb} MB`);

    // Failover under that load: kill -9 node-c; every check it ran must get a newer result from another node.
    const survivor = nodes[0] as Node;
    const victim = nodes[2] as Node;
    const before = await results(survivor);
    const itsChecks = new Set(before.filter((result) => result.node === victim.name).map((result) => result.name));
    await victim.kill9();
    const killedAt = Date.now();
    let failoverS: number | null = null;
    while (Date.now() - killedAt < 60_000) {
      await sleep(250);
      const now = await results(survivor);
      const moved = now.filter((result) => itsChecks.has(result.name) && result.node !== victim.name && result['healthcheck-timestamp'] * 1000 >= killedAt - 1000).length;
      if (moved === itsChecks.size) {
        failoverS = (Date.now() - killedAt) / 1000;
        break;
      }
    }
    console.log(`failover: the ${itsChecks.size} checks of ${victim.name} all ran elsewhere ${failoverS ?? '> 60'} s after its kill -9 (member-ttl ${MEMBER_TTL}, interval 10s)`);
    await Promise.all(nodes.slice(0, 2).map((node) => node.stop()));

    const sum = perNode.reduce((total, figure) => total + figure.cpu_share_of_one_core, 0);
    const report = {
      cores: cpus().length,
      node_version: process.version,
      checks: TCP + HTTP,
      window_s: WINDOW_S,
      single_node: alone,
      cluster_nodes: perNode,
      cluster_cpu_sum: Number(sum.toFixed(4)),
      cluster_cpu_per_node_vs_single: alone ? Number((Math.max(...perNode.map((figure) => figure.cpu_share_of_one_core)) / alone.cpu_share_of_one_core).toFixed(3)) : null,
      failover: { member_ttl: MEMBER_TTL, interval: '10s', checks_moved: itsChecks.size, seconds: failoverS },
    };
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench/results/cluster.json'), `${JSON.stringify(report, null, 2)}\n`);
    console.log(`cluster: sum ${report.cluster_cpu_sum} of a core over three nodes, the busiest node ${report.cluster_cpu_per_node_vs_single} of the single node; ${cpus().length} cores`);
  } finally {
    await Promise.all(nodes.map((node) => node.kill9()));
    await nats.kill9();
    targets.process.kill('SIGKILL');
  }
}

await main();
