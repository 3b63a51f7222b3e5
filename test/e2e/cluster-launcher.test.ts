/**
 * One launcher starts any node (docs/cluster.md, "Running a node"): bin/vigie.js, whose first line has a single
 * node's flags, starts a cluster node too, which tunes itself from its config (src/process/node-tuning.ts) and says
 * how to give its young generation the room V8 fixes at start. Read from outside: the package's commands, and the
 * node's own log.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../../bin/build.mjs';
import { CLUSTER_YOUNG_GENERATION, startServer, type TestServer } from '../helpers/server.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});

// NATS is never reached here: the advice is given as the cluster part is built, before the node joins.
const cluster = {
  cluster: { node: 'node-a', nats: { servers: ['nats://127.0.0.1:1'], user: 'node-a', password: 'unused' } },
};
const ADVICE = /under event load a node started with room for 32 spends less CPU an event/;

describe('the one launcher', () => {
  it('is the only command the package gives, and npm start its only start script', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
      scripts: Record<string, string>;
    };
    expect(manifest.bin).toEqual({ vigie: 'bin/vigie.js' });
    expect(Object.keys(manifest.scripts).filter((name) => name.startsWith('start'))).toEqual(['start']);
  });

  it('starts a cluster node, which says how to give its young generation room (given it, or alone: nothing)', async () => {
    const asLaunched = await startServer({ config: cluster, asService: true });
    servers.push(asLaunched);
    const line = await asLaunched.waitForLog(ADVICE);
    expect(line).toContain('--max-semi-space-size=8');
    expect(line).toContain('node --min-semi-space-size=8 --max-semi-space-size=32 bin/vigie.js serve');
    const withRoom = await startServer({ config: cluster, asService: true, nodeArgs: CLUSTER_YOUNG_GENERATION });
    servers.push(withRoom);
    expect((await withRoom.request('/healthz')).status).toBe(200);
    expect(withRoom.logs.filter((entry) => ADVICE.test(entry))).toEqual([]);
    // A single node is told nothing.
    const alone = await startServer({ asService: true });
    servers.push(alone);
    expect(alone.logs.filter((entry) => ADVICE.test(entry))).toEqual([]);
  });
});
