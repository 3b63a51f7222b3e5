/**
 * One node's credential is one node's voice (docs/cluster.md, "Securing NATS" and "Silent members"), from outside: a
 * real `nats-server` on the documented config (docs/examples/nats-server.conf), Vigie processes, and a raw NATS
 * client holding the credential of node-c, a node that is not running (what a stolen or leaked config file gives).
 * With it, the forger may publish results and put a member key only as node-c: another node's results subject, its
 * member key and its results consumer are refused by nats-server; a result naming another node on node-c's own
 * subject is refused (`impersonation`), one stamped beyond `cluster.max-clock-skew` too (`future`); a member key
 * that node-c refreshes while it publishes no result is reported silent and owns no check until it publishes again;
 * and a command check put into `vigie_checks` runs nowhere unless `cluster.command-checks: allow`.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { allJoined } from '../helpers/cluster.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const key = (name: string) => Buffer.from(name, 'utf8').toString('base64url');
const nowS = () => Math.floor(Date.now() / 1000);
// eslint-disable-next-line no-restricted-syntax -- a pause, for the tests below that prove nothing happens meanwhile
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MEMBER_TTL_MS = 2_000;

const servers: TestServer[] = [];
const connections: NatsConnection[] = [];
const timers: NodeJS.Timeout[] = [];
afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
  await Promise.all(connections.splice(0).map((nc) => nc.close()));
});
afterAll(async () => {
  await stopAllNats();
});

async function startNode(
  node: string,
  nats: NatsServer,
  cluster: Record<string, unknown> = {},
  config: Record<string, unknown> = {},
): Promise<TestServer> {
  const server = await startServer({
    config: {
      cluster: { node, nats: nats.clusterNats(node), 'member-ttl': `${MEMBER_TTL_MS}ms`, ...cluster },
      ...config,
    },
  });
  servers.push(server);
  return server;
}

/** A raw client with node-c's credential: node-c itself never runs. */
async function forger(nats: NatsServer): Promise<{ nc: NatsConnection; kv: (bucket: string) => Promise<KV> }> {
  const nc = await connect(nats.connectOptions('node-c'));
  connections.push(nc);
  const kvm = new Kvm(jetstream(nc));
  return { nc, kv: (bucket) => kvm.open(bucket) };
}

async function metric(server: TestServer, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await server.request('/metrics')).text();
  return text
    .split('\n')
    .filter(
      (line) =>
        line.startsWith(name) &&
        (line[name.length] === '{' || line[name.length] === ' ') &&
        Object.entries(labels).every(([label, value]) => line.includes(`${label}="${value}"`)),
    )
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

const refused = (server: TestServer, source: string, reason: string) =>
  metric(server, 'cluster_messages_refused_total', { source, reason });

interface Result {
  name: string;
  success: boolean;
  message: string;
  'healthcheck-timestamp': number;
  node?: string;
}

async function results(server: TestServer): Promise<Result[]> {
  return ((await (await server.request('/api/v1/result')).json()) as { result: Result[] }).result;
}

interface MemberView {
  node: string;
  checks: number;
  silent?: boolean;
}

async function members(server: TestServer): Promise<MemberView[]> {
  return ((await (await server.request('/api/v1/cluster/members')).json()) as { result: MemberView[] }).result;
}

function httpChecks(target: HttpTarget, names: string[], interval = '1s') {
  return names.map((name) => ({
    name,
    target: '127.0.0.1',
    port: target.port,
    path: `/${name}`,
    'valid-status': [200],
    interval,
    timeout: '1s',
  }));
}

/** Every node has a result of every named check newer than `since` (unix s). */
async function freshEverywhere(nodes: TestServer[], names: string[], since: number, timeoutMs = 30_000) {
  await waitFor(
    async () => {
      for (const node of nodes) {
        const fresh = new Set(
          (await results(node)).filter((r) => r['healthcheck-timestamp'] >= since).map((r) => r.name),
        );
        if (names.some((name) => !fresh.has(name))) return false;
      }
      return true;
    },
    { timeoutMs, intervalMs: 250, message: `fresh results of ${names.length} checks on every node` },
  );
}

function forgedResult(name: string, node: string, stampedS: number) {
  return {
    name,
    summary: 'forged',
    success: false,
    'healthcheck-timestamp': stampedS,
    message: 'forged',
    duration: 1,
    source: 'api',
    node,
  };
}

/** A request that nats-server refuses to let through: it rejects (a permissions violation, or no answer in time). */
async function deniedByNats(attempt: Promise<unknown>): Promise<string> {
  try {
    await attempt;
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('nats-server let it through');
}

describe.skipIf(!hasNatsServer())("cluster: one node's credential is one node's voice", () => {
  it("with node-c's credential, another node's results subject, member key and results consumer are refused by the documented permissions", async () => {
    const nats = await startNatsServer();
    const target = await startHttpTarget({ handler: (_request, response) => response.end('ok') });
    const a = await startNode('node-a', nats);
    const b = await startNode('node-b', nats);
    await allJoined([a, b]);
    const names = ['web-0', 'web-1', 'web-2', 'web-3'];
    expect(
      (await a.request('/api/v1/healthcheck/bulk', json('POST', { 'http-checks': httpChecks(target, names) }))).status,
    ).toBe(201);
    await freshEverywhere([a, b], names, nowS());

    const { nc, kv } = await forger(nats);
    const js = jetstream(nc);
    const memberKv = await kv('vigie_members');
    // node-a's voice: a failed result of each check stamped ahead (it would hold over node-a's real runs), its member
    // key, ghosts, and node-b's results consumer.
    const ahead = nowS() + 290;
    const violations = [
      await deniedByNats(
        js.publish('vigie.results.node-a', JSON.stringify(names.map((name) => forgedResult(name, 'node-a', ahead))), {
          timeout: 2_000,
        }),
      ),
      await deniedByNats(
        memberKv.put('node-a', JSON.stringify({ node: 'node-a', configHash: 'x', version: '1', startedAtMs: 1 })),
      ),
      await deniedByNats(
        memberKv.put('ghost-1', JSON.stringify({ node: 'ghost-1', configHash: 'x', version: '1', startedAtMs: 1 })),
      ),
      await deniedByNats(js.consumers.get('vigie_results', 'results_node-b').then((c) => c.next({ expires: 2_000 }))),
    ];
    expect(violations).toHaveLength(4);
    expect(nats.logs.filter((line) => /Publish Violation/i.test(line)).length).toBeGreaterThanOrEqual(3);

    // eslint-disable-next-line no-restricted-syntax -- proves no forged result is shown
    await sleep(2_000);
    for (const node of [a, b]) {
      const forged = (await results(node)).filter((result) => result.message === 'forged');
      expect(forged, 'no forged result shown').toEqual([]);
      expect((await members(node)).map((member) => member.node)).toEqual(['node-a', 'node-b']);
    }
    // node-a still announces itself: its key was not overwritten.
    // eslint-disable-next-line no-restricted-syntax -- proves node-a's key was not overwritten: it stays a member past two member-ttl
    await sleep(MEMBER_TTL_MS * 2);
    await allJoined([a, b]);
    await target.close();
  }, 120_000);

  it("on node-c's own subject, a result naming another node is refused as impersonation, one stamped beyond cluster.max-clock-skew as future", async () => {
    const nats = await startNatsServer();
    const target = await startHttpTarget({ handler: (_request, response) => response.end('ok') });
    const a = await startNode('node-a', nats);
    const b = await startNode('node-b', nats);
    await allJoined([a, b]);
    const names = ['web-0', 'web-1'];
    expect(
      (await a.request('/api/v1/healthcheck/bulk', json('POST', { 'http-checks': httpChecks(target, names) }))).status,
    ).toBe(201);
    await freshEverywhere([a, b], names, nowS());

    const { nc } = await forger(nats);
    const js = jetstream(nc);
    await js.publish('vigie.results.node-c', JSON.stringify([forgedResult('web-0', 'node-a', nowS())]));
    // A minute ahead: within the old bound of 5 minutes, beyond the skew of 5 s.
    await js.publish('vigie.results.node-c', JSON.stringify([forgedResult('web-1', 'node-c', nowS() + 60)]));
    for (const node of [a, b]) {
      await waitFor(async () => (await refused(node, 'results', 'impersonation')) === 1, {
        timeoutMs: 10_000,
        message: 'the result naming node-a refused as impersonation',
      });
      await waitFor(async () => (await refused(node, 'results', 'future')) === 1, {
        timeoutMs: 10_000,
        message: 'the result a minute ahead refused as future',
      });
      expect(node.logs.some((line) => line.includes('impersonation') && line.includes('node-a'))).toBe(true);
      expect((await results(node)).filter((result) => result.message === 'forged')).toEqual([]);
    }
    // Within the skew, node-c's own result is node-c's.
    await js.publish('vigie.results.node-c', JSON.stringify([forgedResult('web-1', 'node-c', nowS() + 2)]));
    await waitFor(
      async () => (await results(a)).some((result) => result.name === 'web-1' && result.node === 'node-c'),
      { timeoutMs: 10_000, message: "node-c's result within the skew taken" },
    );
    await target.close();
  }, 120_000);

  it('a member that announces itself and publishes no result is reported silent and owns no check after 3 × member-ttl beyond their interval; it owns its share again once it publishes', async () => {
    const nats = await startNatsServer();
    const target = await startHttpTarget({ handler: (_request, response) => response.end('ok') });
    const a = await startNode('node-a', nats);
    const b = await startNode('node-b', nats);
    await allJoined([a, b]);
    const names = Array.from({ length: 12 }, (_, i) => `web-${i}`);
    expect(
      (await a.request('/api/v1/healthcheck/bulk', json('POST', { 'http-checks': httpChecks(target, names) }))).status,
    ).toBe(201);
    await freshEverywhere([a, b], names, nowS());

    // node-c's credential announces node-c, as a live node would, and runs nothing.
    const { nc, kv } = await forger(nats);
    const memberKv = await kv('vigie_members');
    const announce = () =>
      memberKv.put(
        'node-c',
        JSON.stringify({ node: 'node-c', configHash: 'forged', version: '1', startedAtMs: Date.now() }),
      );
    await announce();
    timers.push(setInterval(() => void announce().catch(() => undefined), 600));
    const announcedAt = Date.now();
    await waitFor(async () => (await members(a)).some((member) => member.node === 'node-c' && member.checks > 0), {
      timeoutMs: 10_000,
      message: 'node-c a member owning checks',
    });

    // 3 × member-ttl beyond the checks' interval and timeout (1 s + 1 s): then every check runs again on a or b.
    const boundMs = 3 * MEMBER_TTL_MS + 2_000;
    for (const node of [a, b]) {
      await waitFor(async () => (await metric(node, 'cluster_member_silent', { node: 'node-c' })) === 1, {
        timeoutMs: boundMs + 10_000,
        message: 'node-c reported silent',
      });
    }
    const reportedAfterMs = Date.now() - announcedAt;
    expect(reportedAfterMs).toBeGreaterThanOrEqual(boundMs);
    expect(a.logs.some((line) => line.includes('node-c') && line.includes('silent'))).toBe(true);
    for (const node of [a, b]) {
      const view = await members(node);
      expect(view.find((member) => member.node === 'node-c')).toMatchObject({ checks: 0, silent: true });
    }
    const since = nowS() + 1;
    await freshEverywhere([a, b], names, since, 15_000);

    // node-c publishes a result of its own: it is heard, and owns its share again.
    await jetstream(nc).publish('vigie.results.node-c', JSON.stringify([forgedResult('web-0', 'node-c', nowS())]));
    for (const node of [a, b]) {
      await waitFor(async () => (await metric(node, 'cluster_member_silent', { node: 'node-c' })) === 0, {
        timeoutMs: 10_000,
        message: 'node-c heard again',
      });
      await waitFor(async () => ((await members(node)).find((member) => member.node === 'node-c')?.checks ?? 0) > 0, {
        timeoutMs: 10_000,
        message: 'node-c owning checks again',
      });
    }
    await target.close();
  }, 150_000);

  it('no member is reported silent for owning no check, or only a check with a long interval', async () => {
    const nats = await startNatsServer();
    const target = await startHttpTarget({ handler: (_request, response) => response.end('ok') });
    const a = await startNode('node-a', nats);
    const b = await startNode('node-b', nats);
    await allJoined([a, b]);
    // One check, every minute: one node owns it and publishes once a minute, the other owns nothing.
    expect(
      (
        await a.request(
          '/api/v1/healthcheck/bulk',
          json('POST', { 'http-checks': httpChecks(target, ['slow'], '60s') }),
        )
      ).status,
    ).toBe(201);
    await freshEverywhere([a, b], ['slow'], nowS() - 1);
    // Well past 3 × member-ttl: nothing happens (a sleep to prove it).
    // eslint-disable-next-line no-restricted-syntax -- proves no member is judged silent
    await sleep(3 * MEMBER_TTL_MS + 6_000);
    for (const node of [a, b]) {
      expect(await metric(node, 'cluster_member_silent')).toBe(0);
      expect((await members(node)).map((member) => member.silent)).toEqual([false, false]);
      expect(node.logs.filter((line) => line.includes('silent'))).toEqual([]);
    }
    await target.close();
  }, 120_000);

  it("a node connected with another node's user cannot join, and says why", async () => {
    const nats = await startNatsServer();
    const server = await startServer({
      config: { cluster: { node: 'node-d', nats: nats.clusterNats('node-a'), 'member-ttl': `${MEMBER_TTL_MS}ms` } },
    });
    servers.push(server);
    await waitFor(
      () =>
        server.logs.some(
          (line) => line.includes('cannot join the cluster') && line.includes('made for its cluster.node'),
        ),
      { timeoutMs: 20_000, message: 'the refusal explained' },
    );
    const view = (await (await server.request('/api/v1/cluster/members')).json()) as { joined: boolean };
    expect(view.joined).toBe(false);
  }, 60_000);

  it('a command check put into vigie_checks runs nowhere unless cluster.command-checks: allow, whatever the HTTP policy says', async () => {
    const nats = await startNatsServer();
    // The HTTP listener is on loopback: command-checks-api (auto) lets the API create command checks.
    const a = await startNode('node-a', nats);
    const b = await startNode('node-b', nats);
    await allJoined([a, b]);
    const { kv } = await forger(nats);
    const checks = await kv('vigie_checks');
    const proof = join(mkdtempSync(join(tmpdir(), 'vigie-pwn-')), 'pwned');
    const pwn = { name: 'pwn', command: 'sh', arguments: ['-c', `touch ${proof}`], interval: '1s', timeout: '1s' };
    await checks.put(key('pwn'), JSON.stringify({ kind: 'command', definition: pwn }));
    for (const node of [a, b]) {
      await waitFor(async () => (await refused(node, 'checks', 'forbidden')) >= 1, {
        timeoutMs: 10_000,
        message: 'the command check refused',
      });
      // Logged as it is counted: the log line is read from the process's pipe, perhaps a moment after the metric.
      await waitFor(() => node.logs.some((line) => line.includes('cluster.command-checks')), {
        timeoutMs: 5_000,
        message: 'the refusal logged',
      });
    }
    // eslint-disable-next-line no-restricted-syntax -- proves the command check runs nowhere (interval 1 s)
    await sleep(3_000);
    expect(existsSync(proof)).toBe(false);
    // Through the API of a cluster node, it would be stored in vigie_checks: refused before anything is written.
    const api = await a.request('/api/v1/healthcheck/command', json('POST', { ...pwn, name: 'api-pwn' }));
    expect(api.status).toBe(403);
    expect(await api.text()).toContain('cluster.command-checks');
    const bulk = await a.request('/api/v1/healthcheck/bulk', json('POST', { 'command-checks': [pwn] }));
    expect(bulk.status).toBe(403);
    const stored: string[] = [];
    for await (const name of await checks.keys()) stored.push(name);
    expect(stored).toEqual([key('pwn')]);

    // With allow on every node, the same entry runs.
    await Promise.all(servers.splice(0).map((server) => server.kill9()));
    const a2 = await startNode('node-a', nats, { 'command-checks': 'allow' });
    const b2 = await startNode('node-b', nats, { 'command-checks': 'allow' });
    await allJoined([a2, b2]);
    await waitFor(() => existsSync(proof), { timeoutMs: 15_000, message: 'the command check ran under allow' });
  }, 120_000);
});
