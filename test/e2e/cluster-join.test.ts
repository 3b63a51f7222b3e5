/**
 * Joining (docs/cluster.md, "Membership"), from outside: a node that reaches NATS but cannot set up its buckets and
 * streams (here JetStream is off, as on a misconfigured server; under load it is a JetStream request that times out)
 * serves its API, says why, and tries again until it joins: one failed attempt must not leave it out for good.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { allJoined } from '../helpers/cluster.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(async () => {
  await stopAllNats();
});

async function startNode(node: string, nats: NatsServer): Promise<TestServer> {
  const server = await startServer({ config: { cluster: { node, nats: nats.clusterNats(node), 'member-ttl': '2s' } } });
  servers.push(server);
  return server;
}

async function joined(server: TestServer): Promise<boolean> {
  return ((await (await server.request('/api/v1/cluster/members')).json()) as { joined: boolean }).joined;
}

describe.skipIf(!hasNatsServer())('cluster: joining', () => {
  it('tries again after a failed join, and joins once JetStream answers', async () => {
    const nats = await startNatsServer({ jetstream: false });
    const a = await startNode('node-a', nats);
    await a.waitForLog(/cannot join the cluster/, 20_000);
    expect((await a.request('/healthz')).status).toBe(200);
    expect(await joined(a)).toBe(false);

    await nats.restart({ jetstream: true });
    const b = await startNode('node-b', nats);
    await allJoined([a, b]);
  }, 90_000);
});
