/**
 * Cluster mode, checks (docs/cluster.md), from outside: real `nats-server` processes and three Vigie processes on
 * loopback, HTTP checks against a local target that counts each check's hits (one path per check). Checks created
 * through one node are listed with fresh results on every node; each check's target is hit once per interval in
 * steady state, again within member-ttl + interval after a kill -9 of its owner, and still once per interval after
 * the node rejoins; an API change on any node reaches all; one NATS server of three killed stops nothing; the whole
 * NATS down for 30 s stops no check, and the results of the outage reach every node afterwards.
 */
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  type ClusterNatsConfig,
  hasNatsServer,
  type NatsServer,
  startNatsCluster,
  startNatsServer,
  stopAllNats,
} from '../helpers/nats.ts';
import { allJoined } from '../helpers/cluster.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const INTERVAL_S = 2;
const MEMBER_TTL_S = 2;

interface Result {
  name: string;
  success: boolean;
  'healthcheck-timestamp': number;
  node?: string;
}

interface Members {
  joined: boolean;
  result: { node: string; checks: number }[];
}

/** A target that remembers when each path was hit. */
async function countingTarget(): Promise<{ target: HttpTarget; hits: Map<string, number[]> }> {
  const hits = new Map<string, number[]>();
  const target = await startHttpTarget({
    handler: (request, response) => {
      const times = hits.get(request.path) ?? [];
      times.push(Date.now());
      hits.set(request.path, times);
      response.end('ok');
    },
  });
  return { target, hits };
}

function hitsBetween(hits: Map<string, number[]>, path: string, from: number, to: number): number {
  return (hits.get(path) ?? []).filter((at) => at >= from && at < to).length;
}

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(async () => {
  await stopAllNats();
});

/** `nats`: the node's `cluster.nats` (the documented server's credentials, test/helpers/nats.ts). */
async function startNode(node: string, nats: ClusterNatsConfig, dataDir?: string): Promise<TestServer> {
  // On a NATS cluster, JetStream pauses for leader elections when a server dies: a member-ttl of a few seconds
  // rides through them.
  const onCluster = nats.servers.length === 3;
  const memberTtl = onCluster ? '5s' : `${MEMBER_TTL_S}s`;
  const config = { cluster: { node, nats, 'member-ttl': memberTtl, ...(onCluster ? { replicas: 3 } : {}) } };
  const server = await startServer({ config, ...(dataDir ? { dataDir } : {}) });
  servers.push(server);
  return server;
}

async function members(server: TestServer): Promise<Members> {
  return (await (await server.request('/api/v1/cluster/members')).json()) as Members;
}

async function results(server: TestServer): Promise<Result[]> {
  return ((await (await server.request('/api/v1/result')).json()) as { result: Result[] }).result;
}

function httpChecks(target: HttpTarget, names: string[]) {
  return names.map((name) => ({
    name,
    target: '127.0.0.1',
    port: target.port,
    path: `/${name}`,
    'valid-status': [200],
    interval: `${INTERVAL_S}s`,
    timeout: '1s',
  }));
}

/** Every node lists exactly `names`, each with a result newer than `since` (unix s) that names the node that ran it. */
async function freshEverywhere(nodes: TestServer[], names: string[], since: number, timeoutMs = 30_000): Promise<void> {
  let missing = '';
  try {
    await waitFor(
      async () => {
        for (const node of nodes) {
          const list = await results(node);
          const fresh = new Set(
            list
              .filter((result) => result['healthcheck-timestamp'] >= since && result.node !== undefined)
              .map((result) => result.name),
          );
          const absent = names.filter((name) => !fresh.has(name));
          if (absent.length > 0) {
            const seen = list
              .filter((result) => absent.includes(result.name))
              .map((result) => `${result.name}@${result['healthcheck-timestamp'] - since}s/${result.node}`);
            missing = `${node.url}: no fresh result of ${absent.join(', ')} (latest: ${seen.join(', ') || 'none'})`;
            return false;
          }
        }
        return true;
      },
      { timeoutMs, intervalMs: 250, message: 'fresh results of every check on every node' },
    );
  } catch (error) {
    throw new Error(
      `${(error as Error).message}: ${missing}\n${nodes
        .map((node) =>
          node.logs
            .filter((line) => /cluster|NATS|results/.test(line))
            .slice(-12)
            .join('\n'),
        )
        .join('\n---\n')}`,
    );
  }
}

describe.skipIf(!hasNatsServer())('cluster: checks on one NATS server', () => {
  it('runs each check once per interval on its owner, fails over a kill -9 within member-ttl + interval, and takes checks back without double runs', async () => {
    const nats = await startNatsServer();
    const { target, hits } = await countingTarget();
    try {
      const [a, b, c] = [
        await startNode('node-a', nats.clusterNats('node-a')),
        await startNode('node-b', nats.clusterNats('node-b')),
        await startNode('node-c', nats.clusterNats('node-c')),
      ] as TestServer[] as [TestServer, TestServer, TestServer];
      await allJoined([a, b, c]);
      const names = Array.from({ length: 24 }, (_, i) => `web-${i}`);
      const created = await a.request(
        '/api/v1/healthcheck/bulk',
        json('POST', { 'http-checks': httpChecks(target, names) }),
      );
      expect(created.status, await created.text()).toBe(201);
      await freshEverywhere([a, b, c], names, Math.floor(Date.now() / 1000));

      // Spread: every node owns some, and all three agree on who owns what.
      const views = await Promise.all([a, b, c].map(members));
      for (const view of views) {
        expect(view.result.reduce((sum, member) => sum + member.checks, 0)).toBe(24);
        expect(view.result.every((member) => member.checks > 0)).toBe(true);
      }
      expect(views[1]?.result).toEqual(
        views[0]?.result.map((member) => ({ ...member, self: member.node === 'node-b' })),
      );

      // Steady state: 12 s is six intervals; each check's path is hit 6 times, give or take the window's edges.
      const windowStart = Date.now();
      // eslint-disable-next-line no-restricted-syntax -- measures each check's pace: none runs twice, none stops
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      for (const name of names) {
        const count = hitsBetween(hits, `/${name}`, windowStart, windowStart + 12_000);
        expect(count, name).toBeGreaterThanOrEqual(5);
        expect(count, name).toBeLessThanOrEqual(7);
      }

      // Which checks node-c runs: the node named in their latest results.
      const onC = (await results(a)).filter((result) => result.node === 'node-c').map((result) => result.name);
      expect(onC.length).toBeGreaterThan(0);
      await c.kill9();
      const killedAt = Date.now();
      await waitFor(() => onC.every((name) => hitsBetween(hits, `/${name}`, killedAt, Infinity) > 0), {
        timeoutMs: 15_000,
        message: "node-c's checks run again",
      });
      for (const name of onC) {
        const first = (hits.get(`/${name}`) ?? []).find((at) => at >= killedAt) as number;
        expect(first - killedAt, name).toBeLessThanOrEqual((MEMBER_TTL_S + INTERVAL_S) * 1000 + 1_500);
      }
      // The survivors show the new owners in the results, and run each check once per interval.
      await waitFor(
        async () =>
          (await results(b)).filter((result) => onC.includes(result.name)).every((result) => result.node !== 'node-c'),
        { timeoutMs: 10_000 },
      );
      const afterFailover = Date.now();
      // eslint-disable-next-line no-restricted-syntax -- measures each check's pace: none runs twice
      await new Promise((resolve) => setTimeout(resolve, 8_000));
      for (const name of names)
        expect(hitsBetween(hits, `/${name}`, afterFailover, afterFailover + 8_000), name).toBeLessThanOrEqual(5);

      // node-c comes back (same data directory): it takes its checks back, and nothing runs twice.
      const back = await startServer({ dataDir: c.dataDir, config: readFileSync(c.configFile, 'utf8') });
      servers.push(back);
      await allJoined([a, b, back]);
      await waitFor(
        async () =>
          (await results(a)).some(
            (result) => result.node === 'node-c' && result['healthcheck-timestamp'] * 1000 >= Date.now() - 3_000,
          ),
        { timeoutMs: 15_000 },
      );
      const rejoined = Date.now();
      // eslint-disable-next-line no-restricted-syntax -- measures each check's pace: none runs twice, none stops
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      for (const name of names) {
        const count = hitsBetween(hits, `/${name}`, rejoined, rejoined + 10_000);
        expect(count, name).toBeGreaterThanOrEqual(4);
        expect(count, name).toBeLessThanOrEqual(6);
      }
    } finally {
      await target.close();
    }
  }, 150_000);

  it('applies an API change made on any node on every node, and keeps running through a 30 s NATS outage whose results arrive afterwards', async () => {
    const nats = await startNatsServer();
    const { target, hits } = await countingTarget();
    try {
      const a = await startNode('node-a', nats.clusterNats('node-a'));
      const b = await startNode('node-b', nats.clusterNats('node-b'));
      await allJoined([a, b]);
      expect(
        (await b.request('/api/v1/healthcheck/http', json('POST', httpChecks(target, ['made-on-b'])[0]))).status,
      ).toBe(201);
      expect(
        (
          await a.request(
            '/api/v1/healthcheck/bulk',
            json('POST', { 'http-checks': httpChecks(target, ['x1', 'x2', 'x3', 'x4']) }),
          )
        ).status,
      ).toBe(201);
      // The bulk made the API checks exactly x1..x4 on every node: made-on-b is gone everywhere.
      const names = ['x1', 'x2', 'x3', 'x4'];
      await freshEverywhere([a, b], names, Math.floor(Date.now() / 1000));
      for (const node of [a, b]) {
        await waitFor(
          async () =>
            ((await (await node.request('/api/v1/healthcheck')).json()) as { result: { name: string }[] }).result
              .map((check) => check.name)
              .join() === names.join(),
          {
            timeoutMs: 10_000,
          },
        );
      }
      expect((await b.request('/api/v1/healthcheck/x4', { method: 'DELETE' })).status).toBe(200);
      await waitFor(async () => (await a.request('/api/v1/healthcheck/x4')).status === 404, {
        timeoutMs: 10_000,
        message: 'the delete made on b reaches a',
      });
      const kept = ['x1', 'x2', 'x3'];

      // NATS down for about 30 s: every check keeps being run (by the node that owned it), and API changes answer 503.
      await nats.kill9();
      const downAt = Date.now();
      await waitFor(async () => /^cluster_nats_connected 0$/m.test(await (await a.request('/metrics')).text()), {
        timeoutMs: 10_000,
        message: 'node-a sees NATS gone',
      });
      const refused = await a.request(
        '/api/v1/healthcheck/http',
        json('POST', httpChecks(target, ['during-outage'])[0]),
      );
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { message: string }).message).toMatch(/vigie_checks/);
      // The outage lasts until every check has run 12 times (every 2 s: about 25 s), the node owning each.
      await waitFor(() => kept.every((name) => hitsBetween(hits, `/${name}`, downAt, Infinity) >= 12), {
        timeoutMs: 40_000,
        intervalMs: 250,
        message: 'every check run 12 times while NATS is down',
      });
      await nats.restart();

      // Afterwards each node holds a result of every check from the middle of the outage: its own run, or the
      // other node's, which can only have come through NATS once it was back; and some did.
      const middle = Math.floor((downAt + 15_000) / 1000);
      let missing = '';
      let replicated = 0;
      await waitFor(
        async () => {
          replicated = 0;
          for (const [reader, self] of [
            [a, 'node-a'],
            [b, 'node-b'],
          ] as const) {
            for (const name of kept) {
              const history = (
                (await (await reader.request(`/api/v1/result/${name}/history`)).json()) as { result: Result[] }
              ).result;
              const during = history.filter((entry) => Math.abs(entry['healthcheck-timestamp'] - middle) <= INTERVAL_S);
              if (during.length === 0) {
                missing = `${self} has no result of ${name} from the middle of the outage (${history.map((entry) => `${entry['healthcheck-timestamp'] - middle}/${entry.node}`).join(', ')})`;
                return false;
              }
              if (during.some((entry) => entry.node !== self)) replicated++;
            }
          }
          return replicated > 0;
        },
        { timeoutMs: 60_000, intervalMs: 500, message: 'the results of the outage reach the other node' },
      ).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}: ${missing || 'no result of the outage ran by the other node'}`);
      });
      expect(replicated).toBeGreaterThan(0);
    } finally {
      await target.close();
    }
  }, 150_000);
});

describe.skipIf(!hasNatsServer())('cluster: checks on a 3-server NATS cluster', () => {
  it('lists fresh results everywhere and loses nothing when one NATS server of three is killed', async () => {
    const cluster = await startNatsCluster(3);
    const { target, hits } = await countingTarget();
    try {
      // Each Vigie node prefers a different NATS server (the client picks among the list at random otherwise).
      const rotate = (node: string, i: number) => ({
        ...cluster.clusterNats(node),
        servers: [...cluster.urls.slice(i), ...cluster.urls.slice(0, i)],
      });
      const nodes = [
        await startNode('node-a', rotate('node-a', 0)),
        await startNode('node-b', rotate('node-b', 1)),
        await startNode('node-c', rotate('node-c', 2)),
      ];
      await allJoined(nodes);
      const names = Array.from({ length: 12 }, (_, i) => `api-${i}`);
      expect(
        (
          await (nodes[1] as TestServer).request(
            '/api/v1/healthcheck/bulk',
            json('POST', { 'http-checks': httpChecks(target, names) }),
          )
        ).status,
      ).toBe(201);
      await freshEverywhere(nodes, names, Math.floor(Date.now() / 1000));

      await (cluster.servers[0] as NatsServer).kill9();
      const killedAt = Date.now();
      // Nothing stops: every check keeps its pace, results keep reaching every node, the API keeps working.
      await waitFor(() => names.every((name) => hitsBetween(hits, `/${name}`, killedAt, Infinity) >= 3), {
        timeoutMs: 8_000,
        intervalMs: 250,
        message: 'every check run 3 times in the 8 s after the kill',
      });
      // JetStream itself recovers first (nats-server 2.9 re-elects the leaders of the lost server's streams and
      // consumers: measured up to about 25 s on this machine), then results flow to every node again.
      await freshEverywhere(nodes, names, Math.floor(Date.now() / 1000) - 1, 60_000);
      await waitFor(
        async () =>
          (
            await (nodes[2] as TestServer).request(
              '/api/v1/healthcheck/http',
              json('POST', httpChecks(target, ['late'])[0]),
            )
          ).status === 201,
        {
          timeoutMs: 30_000,
          message: 'an API change after the loss of a NATS server',
        },
      );
      await freshEverywhere(nodes, [...names, 'late'], Math.floor(Date.now() / 1000), 60_000);
      // Every node sees every member once JetStream answers it again (a node whose watch of the members cannot be
      // made again judges nobody meanwhile: src/cluster/bucket-watch.ts).
      for (const node of nodes) {
        await waitFor(async () => (await members(node)).result.length === 3, {
          timeoutMs: 30_000,
          message: `every member seen by ${node.url}`,
        }).catch((error: unknown) => {
          throw new Error(
            `${(error as Error).message}; its membership log:\n${node.logs
              .filter((line) => /member|watching/.test(line))
              .slice(-12)
              .join('\n')}`,
          );
        });
      }
    } finally {
      await target.close();
      await cluster.stop();
    }
  }, 180_000);
});
