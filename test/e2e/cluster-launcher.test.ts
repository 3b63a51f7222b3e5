/**
 * The launcher of a cluster node (docs/cluster.md, "Running a node"): bin/vigie-cluster.js runs the same service as
 * bin/vigie.js with a larger young generation for V8, and a cluster node started as a single node says how to
 * start it. Both read from outside: the executable run through its first line, and the node's own log.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../../bin/build.mjs';
import { ensureBundle, readLines, startServer, type TestServer } from '../helpers/server.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});

/** What an executable prints, run as a user runs it: through its `#!` line. */
function run(file: string, args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  readLines(child.stdout, (line) => lines.push(line));
  readLines(child.stderr, (line) => lines.push(line));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out: lines.join('\n') })));
}

// NATS is never reached here: the advice is given as the cluster part starts, before the node joins.
const cluster = {
  cluster: { node: 'node-a', nats: { servers: ['nats://127.0.0.1:1'], user: 'node-a', password: 'unused' } },
};
const ADVICE = /start cluster nodes with bin\/vigie-cluster\.js/;

describe('the launcher of a cluster node', () => {
  it('runs the same service as bin/vigie.js, through its own first line', async () => {
    await ensureBundle();
    const single = await run(join(ROOT, 'bin/vigie.js'), ['--version']);
    const clustered = await run(join(ROOT, 'bin/vigie-cluster.js'), ['--version']);
    expect(clustered).toEqual(single);
    expect(single.code).toBe(0);
  });

  it('says how to start a cluster node started with the single node flags, and nothing with its own', async () => {
    const asSingle = await startServer({ config: cluster, asService: true, launcher: 'single' });
    servers.push(asSingle);
    const line = await asSingle.waitForLog(ADVICE);
    expect(line).toContain('--max-semi-space-size=8');
    const asCluster = await startServer({ config: cluster, asService: true, launcher: 'cluster' });
    servers.push(asCluster);
    expect((await asCluster.request('/healthz')).status).toBe(200);
    expect(asCluster.logs.filter((entry) => ADVICE.test(entry))).toEqual([]);
    // A single node is told nothing.
    const alone = await startServer({ asService: true });
    servers.push(alone);
    expect(alone.logs.filter((entry) => ADVICE.test(entry))).toEqual([]);
  });
});
