/**
 * One cluster to the people using it (docs/cluster.md, "Runtime state"): a real nats-server with credentials and the
 * shipped permissions (docs/examples/nats-server.conf), three Vigie nodes, and a client that sends each request to the
 * next node in turn, as a load balancer would. A token made on one node works on the others and, deleted, stops
 * working everywhere within a second; a session opened on one node is open on all, and closed on all once signed out
 * on another; a maintenance window and a pause made on one node are applied by every node; a status page made on one
 * node is served by all, and an incident posted on one is on every node's page and summary.json within 2 s (their kept
 * renders emptied), two posted at once on two nodes taking two ids; a node killed meanwhile
 * comes back with all of it. `/readyz` answers without credentials, 503 naming the cause until
 * the node can write every store it writes through; the members list shows who is ready.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { allJoined } from '../helpers/cluster.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { freePorts } from '../helpers/ports.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const ADMIN = { authorization: `Basic ${Buffer.from('ops:secret').toString('base64')}` };
const NODES = ['vigie-a', 'vigie-b', 'vigie-c'];

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(async () => {
  await stopAllNats();
});

function nodeConfig(nats: NatsServer, node: string, target: TcpTarget): Record<string, unknown> {
  return {
    http: { 'basic-auth': { username: 'ops', password: 'secret' } },
    // A page's renders kept for a minute: a change made on another node must empty them, not wait for them to age.
    healthchecks: { 'start-tick': '100ms', 'write-delay': '1s', 'status-page-cache': '1m' },
    cluster: { node, nats: nats.clusterNats(node), 'member-ttl': '3s' },
    'tcp-checks': [{ name: 'db', target: '127.0.0.1', port: target.port, interval: '500ms', timeout: '400ms' }],
  };
}

async function startNode(config: Record<string, unknown>, dataDir?: string): Promise<TestServer> {
  const server = await startServer({ config, ...(dataDir ? { dataDir } : {}) });
  servers.push(server);
  return server;
}

const jsonBody = (method: string, body: unknown, headers: Record<string, string> = ADMIN): RequestInit => ({
  method,
  headers: { ...headers, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

interface Summary {
  incidents: { id: string; name: string; status: string; incident_updates: unknown[] }[];
}

async function summaryOf(node: TestServer): Promise<Summary> {
  const response = await node.request('/status/ops/summary.json', { headers: ADMIN });
  expect(response.status).toBe(200);
  return (await response.json()) as Summary;
}

describe.skipIf(!hasNatsServer())('one cluster: runtime state on every node', () => {
  it('a token, a maintenance window and a pause made through any node hold on all, a killed node included', async () => {
    const nats = await startNatsServer();
    const target = await startTcpTarget();
    const configs = NODES.map((node) => nodeConfig(nats, node, target));
    const nodes = await Promise.all(configs.map((config) => startNode(config)));
    await allJoined(nodes, { headers: ADMIN });
    // Ready, said without credentials; and in the members list.
    await waitFor(async () => {
      for (const node of nodes) expect((await node.request('/readyz')).status).toBe(200);
    });
    await waitFor(async () => {
      const members = (await (await nodes[0]!.request('/api/v1/cluster/members', { headers: ADMIN })).json()) as {
        result: { node: string; ready: boolean }[];
      };
      expect(members.result.map((member) => [member.node, member.ready])).toEqual(NODES.map((node) => [node, true]));
    });

    // The load balancer: each request to the next node.
    let turn = 0;
    const next = () => nodes[turn++ % nodes.length] as TestServer;
    const live = () => nodes.filter((node) => node.process.exitCode === null && node.process.signalCode === null);

    // A token made on one node works on the others at once.
    const created = await next().request('/api/v1/tokens', jsonBody('POST', { name: 'ci', scopes: ['read', 'write'] }));
    expect(created.status).toBe(201);
    const bearer = { authorization: `Bearer ${((await created.json()) as { token: string }).token}` };
    for (let i = 0; i < 3; i++) {
      await waitFor(
        async () => expect((await next().request('/api/v1/healthcheck', { headers: bearer })).status).toBe(200),
        {
          timeoutMs: 2_000,
        },
      );
    }

    // Signed in on one node is signed in on all; signed out on another, signed out everywhere within a second.
    const signer = next();
    const signedIn = await signer.request(
      '/api/v1/session',
      jsonBody('POST', { username: 'ops', password: 'secret' }, { origin: signer.url }),
    );
    expect(signedIn.status).toBe(201);
    const { csrf } = (await signedIn.json()) as { csrf: string };
    const cookie = { cookie: (signedIn.headers.get('set-cookie') ?? '').split(';', 1)[0] as string };
    for (const node of nodes) {
      await waitFor(async () => expect((await node.request('/api/v1/session', { headers: cookie })).status).toBe(200), {
        timeoutMs: 2_000,
      });
    }
    const outOn = next();
    const signedOut = await outOn.request('/api/v1/session', {
      method: 'DELETE',
      headers: { ...cookie, 'x-vigie-csrf': csrf, origin: outOn.url },
    });
    expect(signedOut.status).toBe(200);
    for (const node of nodes) {
      await waitFor(async () => expect((await node.request('/api/v1/session', { headers: cookie })).status).toBe(401), {
        timeoutMs: 1_000,
      });
    }

    // A status page made through one node's API is served by every node (each keeps its summary.json rendered).
    const pageMade = await next().request(
      '/api/v1/status-page',
      jsonBody('POST', { slug: 'ops', title: 'Ops', groups: [{ name: 'Data', checks: ['db'] }] }),
    );
    expect(pageMade.status).toBe(201);
    for (const node of nodes) {
      await waitFor(async () => expect((await summaryOf(node)).incidents).toEqual([]), { timeoutMs: 2_000 });
    }
    // An incident posted on one node is on every node's page and summary.json within 2 s.
    const posted = await next().request(
      '/api/v1/incident',
      jsonBody('POST', { title: 'Database slow', status: 'investigating', message: 'Looking.', pages: ['ops'] }),
    );
    expect(posted.status).toBe(201);
    const postedAt = Date.now();
    const incident = ((await posted.json()) as { result: { id: number } }).result.id;
    for (const node of nodes) {
      await waitFor(
        async () => {
          const summary = await summaryOf(node);
          expect(summary.incidents.map((one) => [one.id, one.name, one.status])).toEqual([
            [String(incident), 'Database slow', 'investigating'],
          ]);
          expect(await (await node.request('/status/ops', { headers: ADMIN })).text()).toContain('Database slow');
        },
        { timeoutMs: 2_000 },
      );
    }
    expect(Date.now() - postedAt).toBeLessThan(2_000);
    // Two incidents posted at once on two nodes take two ids, and every node holds both.
    const [one, two] = await Promise.all(
      [nodes[0], nodes[1]].map(async (node) => {
        const made = await (node as TestServer).request(
          '/api/v1/incident',
          jsonBody('POST', { title: 'Internal', status: 'identified', message: 'Noted.' }),
        );
        expect(made.status).toBe(201);
        return ((await made.json()) as { result: { id: number } }).result.id;
      }),
    );
    expect(one).not.toBe(two);
    for (const node of nodes) {
      await waitFor(
        async () => {
          const listed = (await (await node.request('/api/v1/incident', { headers: ADMIN })).json()) as {
            result: { id: number }[];
          };
          expect(listed.result.map((listedOne) => listedOne.id).sort()).toEqual([incident, one, two].sort());
        },
        { timeoutMs: 2_000 },
      );
    }

    // Kill a node meanwhile: what follows must reach it when it comes back.
    const killed = nodes[2] as TestServer;
    await killed.kill9();
    nodes.splice(2, 1);
    const nextLive = () => live()[turn++ % live().length] as TestServer;

    // A maintenance window and a pause, made through the token on one node, applied by every node.
    const start = new Date(Date.now() - 60_000).toISOString();
    const window = await nextLive().request(
      '/api/v1/maintenance',
      jsonBody('POST', { name: 'upgrade', start, duration: '1h', checks: ['db'] }, bearer),
    );
    expect(window.status).toBe(201);
    for (const node of live()) {
      await waitFor(
        async () => expect((await node.request('/api/v1/maintenance/upgrade', { headers: bearer })).status).toBe(200),
        { timeoutMs: 2_000 },
      );
    }
    const paused = await nextLive().request(
      '/api/v1/healthcheck/db/pause',
      jsonBody('POST', { reason: 'moving' }, bearer),
    );
    expect(paused.status).toBe(200);
    for (const node of live()) {
      await waitFor(
        async () => {
          const state = (await (await node.request('/api/v1/healthcheck/db/state', { headers: bearer })).json()) as {
            state: string;
            pause?: { by: string; reason: string };
          };
          expect(state).toMatchObject({ state: 'paused', pause: { by: 'token:ci', reason: 'moving' } });
        },
        { timeoutMs: 2_000 },
      );
    }
    // Paused everywhere: its owner, whichever node it is, no longer runs it.
    // eslint-disable-next-line no-restricted-syntax -- lets a run started before the pause end, then counts from there
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const connections = target.connections;
    // eslint-disable-next-line no-restricted-syntax -- proves the paused check runs nowhere
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(target.connections).toBe(connections);

    // The incident updated on a live node: every live node shows its new status.
    const updated = await nextLive().request(
      `/api/v1/incident/${incident}/update`,
      jsonBody('POST', { status: 'monitoring', message: 'Fix deployed.' }, bearer),
    );
    expect(updated.status).toBe(201);
    for (const node of live()) {
      await waitFor(async () => expect((await summaryOf(node)).incidents[0]?.status).toBe('monitoring'), {
        timeoutMs: 2_000,
      });
    }

    // A second token, then the first deleted: refused on every node within a second.
    const second = await nextLive().request('/api/v1/tokens', jsonBody('POST', { name: 'deploy', scopes: ['read'] }));
    expect(second.status).toBe(201);
    const deployBearer = { authorization: `Bearer ${((await second.json()) as { token: string }).token}` };
    expect((await nextLive().request('/api/v1/tokens/ci', { method: 'DELETE', headers: ADMIN })).status).toBe(200);
    const deletedAt = Date.now();
    for (const node of live()) {
      await waitFor(
        async () => expect((await node.request('/api/v1/healthcheck', { headers: bearer })).status).toBe(401),
        {
          timeoutMs: 1_000,
        },
      );
    }
    expect(Date.now() - deletedAt).toBeLessThan(1_000 * live().length);

    // The killed node comes back on its data directory and has all of it.
    const back = await startNode(configs[2] as Record<string, unknown>, killed.dataDir);
    nodes.push(back);
    await allJoined(nodes, { headers: ADMIN });
    await waitFor(async () => expect((await back.request('/readyz')).status).toBe(200));
    expect((await back.request('/api/v1/healthcheck', { headers: bearer })).status).toBe(401);
    expect((await back.request('/api/v1/healthcheck', { headers: deployBearer })).status).toBe(200);
    expect((await back.request('/api/v1/maintenance/upgrade', { headers: ADMIN })).status).toBe(200);
    const state = (await (await back.request('/api/v1/healthcheck/db/state', { headers: ADMIN })).json()) as {
      state: string;
    };
    expect(state.state).toBe('paused');
    const backSummary = await summaryOf(back);
    expect(backSummary.incidents.map((shown) => [shown.id, shown.status, shown.incident_updates.length])).toEqual([
      [String(incident), 'monitoring', 2],
    ]);
    expect((await back.request('/status/ops', { headers: ADMIN })).status).toBe(200);
    await target.close();
  }, 180_000);

  it('refuses an incident too long for the cluster store with 400 naming the cap, and keeps the one before', async () => {
    const nats = await startNatsServer();
    const target = await startTcpTarget();
    const config = nodeConfig(nats, 'vigie-a', target);
    const node = await startNode({
      ...config,
      cluster: { ...(config.cluster as Record<string, unknown>), 'max-state-value-bytes': 2048 },
    });
    await allJoined([node], { headers: ADMIN });
    const posted = await node.request(
      '/api/v1/incident',
      jsonBody('POST', { title: 'Slow', status: 'investigating', message: 'Looking.' }),
    );
    expect(posted.status).toBe(201);
    const { id } = ((await posted.json()) as { result: { id: number } }).result;
    const long = await node.request(
      `/api/v1/incident/${id}/update`,
      jsonBody('POST', { status: 'identified', message: 'x'.repeat(3000) }),
    );
    expect(long.status).toBe(400);
    expect(((await long.json()) as { message: string }).message).toMatch(
      new RegExp(`^Invalid incident: incidents/${id} is past cluster.max-state-value-bytes \\(2048\\)`),
    );
    const kept = (await (await node.request(`/api/v1/incident/${id}`, { headers: ADMIN })).json()) as {
      status: string;
      updates: unknown[];
    };
    expect([kept.status, kept.updates.length]).toEqual(['investigating', 1]);
    await target.close();
  }, 60_000);

  it('is not ready while NATS is unreachable: /readyz and changes say so, reads go on', async () => {
    const [deadPort] = await freePorts(1);
    const node = await startNode({
      http: { 'basic-auth': { username: 'ops', password: 'secret' } },
      cluster: {
        node: 'vigie-a',
        nats: { servers: [`nats://127.0.0.1:${deadPort}`], user: 'vigie-a', password: 'nope' },
      },
    });
    const ready = await node.request('/readyz');
    expect(ready.status).toBe(503);
    const why = ((await ready.json()) as { message: string }).message;
    expect(why).toBe('this node has not joined its cluster yet: NATS is unreachable');
    const change = await node.request('/api/v1/tokens', jsonBody('POST', { name: 'ci', scopes: ['read'] }));
    expect(change.status).toBe(503);
    expect(((await change.json()) as { message: string }).message).toMatch(/NATS is unreachable \(nats:\/\/127/);
    expect((await node.request('/api/v1/tokens', { headers: ADMIN })).status).toBe(200);
  }, 60_000);
});
