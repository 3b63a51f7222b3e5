/**
 * `cluster` benchmark (docs/performance.md "Cluster"): 12,000 checks (10,000 TCP + 2,000 HTTP at 10 s) on one
 * single node and, at the same time, on three cluster nodes sharing one `nats-server` (all on this machine, with the
 * targets in a process of their own), in one run:
 * - CPU per node over BENCH_ROUNDS (3) windows of 40 s after a 20 s warm-up (utime + stime from /proc), the single
 *   node and the cluster measured in the same windows: measured one after the other, the single node's figure and
 *   the cluster's moved by a fifth from run to run with the machine's other load, and their ratio read anywhere
 *   from 0.53 to 0.88 within an hour. The round with the median ratio is reported, with every round. A cluster
 *   node runs a third of the checks and stores every result;
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
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
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

interface Figure {
  node: string;
  cpu_share_of_one_core: number;
  rss_mb: number;
  own_runs: number;
}

/** The counter of a node's own runs: every run on a single node, the results it published in a cluster. */
const runsMetric = (node: Node) =>
  node.name === 'single' ? 'healthcheck_scheduling_lag_seconds_count' : 'cluster_results_published_total';

/** CPU share of one core and RSS of each node over one window, and the runs each made itself. */
async function measure(nodes: Node[]): Promise<Figure[]> {
  // The scrapes stay outside the CPU window: rendering 12,000 checks' series costs a node about 0.3 s of CPU, as
  // much for a cluster node as for the single node, which would push their ratio towards 1.
  const runsStart = await Promise.all(
    nodes.map(async (node) => metric(await (await fetch(`${node.url}/metrics`)).text(), runsMetric(node))),
  );
  const cpuStart = nodes.map((node) => cpuSeconds(node.process.pid as number));
  const started = performance.now();
  await sleep(WINDOW_S * 1000);
  const elapsed = (performance.now() - started) / 1000;
  return Promise.all(
    nodes.map(async (node, i) => ({
      node: node.name,
      cpu_share_of_one_core: Number(
        ((cpuSeconds(node.process.pid as number) - (cpuStart[i] as number)) / elapsed).toFixed(4),
      ),
      rss_mb: Math.round(rssMb(node.process.pid as number)),
      own_runs: metric(await (await fetch(`${node.url}/metrics`)).text(), runsMetric(node)) - (runsStart[i] as number),
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
    // One node, no cluster, and three cluster nodes on one NATS server, each with its own user of the documented
    // NATS config (docs/cluster.md, "Securing NATS").
    const single = await startNode(root, 'single', null);
    const cluster = (node: string) => ({ nats: nats.clusterNats(node), 'member-ttl': MEMBER_TTL });
    for (const name of ['node-a', 'node-b', 'node-c']) nodes.push(await startNode(root, name, cluster(name)));
    for (;;) {
      const views = await Promise.all(
        nodes.map(
          async (node) =>
            (await (await fetch(`${node.url}/api/v1/cluster/members`)).json()) as {
              joined: boolean;
              result: unknown[];
            },
        ),
      );
      if (views.every((view) => view.joined && view.result.length === 3)) break;
      await sleep(200);
    }
    await bulk(single, targets);
    await bulk(nodes[0] as Node, targets);
    await sleep(WARMUP_S * 1000);
    const rounds: { single: Figure; nodes: Figure[]; ratio: number }[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const [alone, ...perNode] = await measure([single, ...nodes]);
      const ratio =
        Math.max(...perNode.map((figure) => figure.cpu_share_of_one_core)) / (alone as Figure).cpu_share_of_one_core;
      rounds.push({ single: alone as Figure, nodes: perNode, ratio: Number(ratio.toFixed(3)) });
      console.log(
        `round ${round}: single node ${alone?.cpu_share_of_one_core} of a core (${alone?.own_runs} runs); ${perNode.map((figure) => `${figure.node} ${figure.cpu_share_of_one_core} (${figure.own_runs} runs of its own)`).join(', ')}; busiest node ${ratio.toFixed(3)} of the single node`,
      );
    }
    await single.stop();
    const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[
      Math.floor(rounds.length / 2)
    ] as (typeof rounds)[number];
    const alone = median.single;
    const perNode = median.nodes;
    console.log(
      `single node: ${alone.cpu_share_of_one_core} of a core, ${alone.own_runs} runs in ${WINDOW_S} s, RSS ${alone.rss_mb} MB`,
    );
    for (const figure of perNode)
      console.log(
        `${figure.node}: ${figure.cpu_share_of_one_core} of a core, ${figure.own_runs} runs of its own in ${WINDOW_S} s, RSS ${figure.rss_mb} MB`,
      );

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
      const moved = now.filter(
        (result) =>
          itsChecks.has(result.name) &&
          result.node !== victim.name &&
          result['healthcheck-timestamp'] * 1000 >= killedAt - 1000,
      ).length;
      if (moved === itsChecks.size) {
        failoverS = (Date.now() - killedAt) / 1000;
        break;
      }
    }
    console.log(
      `failover: the ${itsChecks.size} checks of ${victim.name} all ran elsewhere ${failoverS ?? '> 60'} s after its kill -9 (member-ttl ${MEMBER_TTL}, interval 10s)`,
    );
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
      cluster_cpu_per_node_vs_single: median.ratio,
      rounds: rounds.map((round) => ({
        single: round.single.cpu_share_of_one_core,
        nodes: round.nodes.map((figure) => figure.cpu_share_of_one_core),
        busiest_vs_single: round.ratio,
      })),
      failover: { member_ttl: MEMBER_TTL, interval: '10s', checks_moved: itsChecks.size, seconds: failoverS },
    };
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench/results/cluster.json'), `${JSON.stringify(report, null, 2)}\n`);
    console.log(
      `cluster: sum ${report.cluster_cpu_sum} of a core over three nodes, the busiest node ${report.cluster_cpu_per_node_vs_single} of the single node (median of ${rounds.length} rounds); ${cpus().length} cores`,
    );
  } finally {
    await Promise.all(nodes.map((node) => node.kill9()));
    await nats.kill9();
    targets.process.kill('SIGKILL');
  }
}

await main();
