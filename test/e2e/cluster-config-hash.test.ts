/**
 * The config hash a node announces (docs/cluster.md, "Config files") follows a reload: it is made of each part's
 * fingerprint of its own share of the config, which the process hands the cluster part at start and at every SIGHUP
 * (src/process/parts.ts). A change to what no part fingerprints (the listener's settings) leaves it be.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hasNatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(async () => {
  await stopAllNats();
});

async function announcedHash(server: TestServer): Promise<string | undefined> {
  const { result } = (await (await server.request('/api/v1/cluster/members')).json()) as {
    result: { self: boolean; 'config-hash': string }[];
  };
  return result.find((member) => member.self)?.['config-hash'];
}

describe.skipIf(!hasNatsServer())("cluster: a node's config hash", () => {
  it('changes at a reload that changes the checks, and not at one that changes the listener only', async () => {
    const nats = await startNatsServer();
    const cluster = { node: 'node-a', nats: nats.clusterNats('node-a') };
    const check = { name: 'db', target: '127.0.0.1', port: 1, interval: '5s', timeout: '1s' };
    const node = await startServer({ config: { cluster, 'tcp-checks': [check] } });
    servers.push(node);
    const first = await waitFor(() => announcedHash(node));

    node.writeConfig({ cluster, 'tcp-checks': [check], http: { 'body-limit': 2_000_000 } });
    node.process.kill('SIGHUP');
    await waitFor(() => node.logs.filter((line) => line.includes('config reloaded')).length === 1);
    expect(await announcedHash(node)).toBe(first);

    node.writeConfig({ cluster, 'tcp-checks': [{ ...check, port: 2 }], http: { 'body-limit': 2_000_000 } });
    node.process.kill('SIGHUP');
    await waitFor(async () => (await announcedHash(node)) !== first);
    expect(node.logs.filter((line) => line.includes('config reloaded'))).toHaveLength(2);
  });
});
