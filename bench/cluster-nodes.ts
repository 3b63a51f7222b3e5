/**
 * The Vigie nodes of the cluster benchmarks (bench/cluster.ts, bench/cluster-streams.ts), started from the bundle as
 * `npm start` starts them, each with its own data directory; their `nats-server` is the tests' (test/helpers/nats.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../test/helpers/ports.ts';
import { CLUSTER_YOUNG_GENERATION, ensureBundle, readLines, serviceCommand } from '../test/helpers/server.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Node {
  name: string;
  url: string;
  process: ChildProcess;
  logs: string[];
  stop(): Promise<void>;
  kill9(): Promise<void>;
}

/** `nodeFlags`: more `node` flags for this node (e.g. `--cpu-prof`). */
export async function startNode(
  root: string,
  name: string,
  cluster: Record<string, unknown> | null,
  extra: Record<string, unknown> = {},
  nodeFlags: string[] = [],
): Promise<Node> {
  await ensureBundle();
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const file = join(dir, 'vigie.yaml');
  writeFileSync(
    file,
    stringify({
      'data-dir': dir,
      http: { host: '127.0.0.1', port },
      ...extra,
      ...(cluster ? { cluster: { node: name, ...cluster } } : {}),
    }),
  );
  // BENCH_CPU_PROF=<dir>: each node writes a V8 CPU profile to <dir>/<name>/ when it stops (bench/profile.ts reads it).
  // BENCH_CPU_PROF_NODES=<name,...>: only these nodes (a profiler in each of three nodes sharing the cores skews them).
  const only = process.env.BENCH_CPU_PROF_NODES?.split(',');
  const profile =
    process.env.BENCH_CPU_PROF && (only === undefined || only.includes(name))
      ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF, name)}`]
      : [];
  // Both as `npm start` does (bin/vigie.js); a cluster node with room for its young generation, as docs/cluster.md
  // advises a node that takes events.
  const service = serviceCommand(
    ['serve', '--config', file, '--log-level', 'warn'],
    [...profile, ...(cluster === null ? [] : CLUSTER_YOUNG_GENERATION), ...nodeFlags],
  );
  const child = spawn(process.execPath, service.args, { env: service.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  readLines(child.stdout, (line) => logs.push(line));
  readLines(child.stderr, (line) => logs.push(line));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries++) {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${logs.slice(-5).join('\n')}`);
    try {
      await (await fetch(`${url}/healthz`)).text();
      break;
    } catch (error) {
      if (tries > 300) throw error;
      await sleep(100);
    }
  }
  return {
    name,
    url,
    process: child,
    logs,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
    async kill9() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The sum of a metric's samples (every label set) in a /metrics text. */
export function metric(text: string, name: string): number {
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(name) && (line[name.length] === ' ' || line[name.length] === '{'))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  return total;
}
