/**
 * Who may join a cluster (docs/cluster.md, "Securing NATS"), from outside: real `nats-server` processes and Vigie
 * processes on loopback. A node whose config names no credential and no client certificate does not start; a node
 * the server refuses, and a node on a server that asks for no authentication, stop with exit code 1 and say why,
 * unless `cluster.nats.insecure: true` (a warning and `cluster_nats_insecure 1`); a password, a token, an NKey and a
 * TLS client certificate each get a node in, with the documented permissions where the server has users.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hasNatsServer, type NatsSecurityKind, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { runCli, startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(async () => {
  await stopAllNats();
});

async function startNode(nats: Record<string, unknown>, node = 'node-a'): Promise<TestServer> {
  const server = await startServer({ config: { cluster: { node, nats, 'member-ttl': '2s' } } });
  servers.push(server);
  return server;
}

function exitCode(server: TestServer): Promise<number | null> {
  if (server.process.exitCode !== null) return Promise.resolve(server.process.exitCode);
  return new Promise((resolve) => server.process.once('exit', (code) => resolve(code)));
}

async function joined(server: TestServer): Promise<void> {
  try {
    await waitFor(
      async () => ((await (await server.request('/api/v1/cluster/members')).json()) as { joined: boolean }).joined,
      { timeoutMs: 60_000 },
    );
  } catch {
    throw new Error(
      `the node did not join its cluster within 60 s; its cluster log:\n${server.logs.filter((line) => /cluster|NATS/.test(line)).join('\n')}`,
    );
  }
}

async function metric(server: TestServer, name: string): Promise<number | undefined> {
  const text = await (await server.request('/metrics')).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe.skipIf(!hasNatsServer())('cluster: who may join', () => {
  it('refuses to start with no credential and no client certificate, naming cluster.nats.insecure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-auth-'));
    const file = join(dir, 'vigie.yaml');
    writeFileSync(
      file,
      stringify({
        'data-dir': dir,
        http: { host: '127.0.0.1', port: 0 },
        cluster: { node: 'a', nats: { servers: ['nats://127.0.0.1:4222'] } },
      }),
    );
    const { code, stderr } = await runCli(['serve', '--config', file]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/cluster\.nats\.insecure: no credential .* and no client certificate/);
  }, 60_000);

  it('stops with exit code 1 when the server refuses its credentials, saying so', async () => {
    const nats = await startNatsServer();
    const stranger = await startNode({ servers: [nats.url], insecure: true });
    expect(await exitCode(stranger)).toBe(1);
    expect(stranger.logs.join('\n')).toMatch(
      /cannot join the cluster: NATS refused this node \(no credential\): Authorization Violation/,
    );

    const wrong = await startNode({ ...nats.clusterNats('node-a'), password: 'not-the-password' });
    expect(await exitCode(wrong)).toBe(1);
    expect(wrong.logs.join('\n')).toMatch(/NATS refused this node \(user node-a\): Authorization Violation/);
  }, 120_000);

  it('stops with exit code 1 on a server that requires no authentication, unless cluster.nats.insecure: true', async () => {
    const open = await startNatsServer({ security: 'open' });
    const careful = await startNode({ servers: [open.url], user: 'vigie-a', password: 'secret' });
    expect(await exitCode(careful)).toBe(1);
    expect(careful.logs.join('\n')).toMatch(
      /the NATS server .* requires no authentication: .*cluster\.nats\.insecure: true/,
    );

    const insecure = await startNode({ servers: [open.url], insecure: true });
    await joined(insecure);
    expect(insecure.logs.join('\n')).toMatch(/"level":40.*cluster\.nats\.insecure is true/);
    expect(await metric(insecure, 'cluster_nats_insecure')).toBe(1);
  }, 120_000);

  for (const security of ['users', 'token', 'nkey', 'tls'] satisfies NatsSecurityKind[]) {
    it(`joins with ${security === 'users' ? 'a user and password' : security === 'tls' ? 'a TLS client certificate' : `a${security === 'nkey' ? 'n NKey' : ' token'}`}, and cluster_nats_insecure 0`, async () => {
      const nats = await startNatsServer({ security });
      const a = await startNode(nats.clusterNats('node-a'), 'node-a');
      const b = await startNode(nats.clusterNats('node-b'), 'node-b');
      await joined(a);
      await joined(b);
      // The two see each other: they read and write the members' bucket through the server's permissions.
      await waitFor(
        async () =>
          ((await (await a.request('/api/v1/cluster/members')).json()) as { result: unknown[] }).result.length === 2,
        {
          timeoutMs: 60_000,
          message: 'both members seen',
        },
      );
      expect(await metric(a, 'cluster_nats_insecure')).toBe(0);
      expect(a.logs.join('\n')).not.toMatch(/Permissions Violation/);
    }, 120_000);
  }
});
