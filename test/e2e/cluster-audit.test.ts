/**
 * The audit log of a whole cluster (docs/cluster.md, "Runtime state"; docs/http-api.md, "Audit log"): a real
 * nats-server with the shipped permissions and three Vigie nodes. Changes made through two nodes are listed by the
 * third, newest first, each with the node that took it; a node stopped while changes are made lists them once back;
 * what a message on `vigie.audit.<node>` lies about (another node in its payload, not JSON, strings past the caps) is
 * refused and counted, and the node keeps serving; a node's credential cannot publish on another node's subject.
 */
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { allJoined } from '../helpers/cluster.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const ADMIN = { authorization: `Basic ${Buffer.from('ops:secret').toString('base64')}` };

const servers: TestServer[] = [];
const connections: NatsConnection[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((nc) => nc.close()));
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(async () => {
  await stopAllNats();
});

async function startNode(nats: NatsServer, node: string, dataDir?: string): Promise<TestServer> {
  const config = {
    http: { 'basic-auth': { username: 'ops', password: 'secret' } },
    cluster: { node, nats: nats.clusterNats(node), 'member-ttl': '3s' },
  };
  const server = await startServer({ config, ...(dataDir ? { dataDir } : {}) });
  servers.push(server);
  return server;
}

interface AuditRow {
  id: number;
  time: number;
  node: string | null;
  method: string;
  route: string;
  name: string | null;
  outcome: number;
}

async function auditOf(server: TestServer, query = ''): Promise<{ result: AuditRow[]; next?: number }> {
  const response = await server.request(`/api/v1/audit${query}`, { headers: ADMIN });
  expect(response.status).toBe(200);
  return (await response.json()) as { result: AuditRow[]; next?: number };
}

/** The token creations a node lists, newest first: [node, token name]. */
async function tokenRows(server: TestServer): Promise<[string | null, string | null][]> {
  return (await auditOf(server)).result
    .filter((row) => row.route === '/api/v1/tokens' && row.method === 'POST')
    .map((row) => [row.node, row.name]);
}

async function makeToken(server: TestServer, name: string): Promise<void> {
  const response = await server.request('/api/v1/tokens', {
    method: 'POST',
    headers: { ...ADMIN, 'content-type': 'application/json' },
    body: JSON.stringify({ name, scopes: ['read'] }),
  });
  expect(response.status).toBe(201);
}

async function refused(server: TestServer, reason: string): Promise<number> {
  const text = await (await server.request('/metrics', { headers: ADMIN })).text();
  return text
    .split('\n')
    .filter(
      (line) =>
        line.startsWith('cluster_messages_refused_total{') &&
        line.includes('source="audit"') &&
        line.includes(`reason="${reason}"`),
    )
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

function forgedRow(node: string, id: number, overrides: Record<string, unknown> = {}) {
  return {
    node,
    id,
    time: Date.now(),
    principal: 'token:forged',
    address: '127.0.0.1',
    method: 'POST',
    route: '/api/v1/tokens',
    path: '/api/v1/tokens',
    name: 'forged',
    outcome: 201,
    ...overrides,
  };
}

describe.skipIf(!hasNatsServer())('the audit log of a whole cluster', () => {
  it("every node lists every node's changes in time order, with their node; a node away catches up", async () => {
    const nats = await startNatsServer();
    const [a, b, c] = await Promise.all(['vigie-a', 'vigie-b', 'vigie-c'].map((node) => startNode(nats, node)));
    const nodes = [a, b, c] as TestServer[];
    await allJoined(nodes, { headers: ADMIN });

    await makeToken(a as TestServer, 'one');
    await makeToken(b as TestServer, 'two');
    await makeToken(a as TestServer, 'three');
    const expected: [string, string][] = [
      ['vigie-a', 'three'],
      ['vigie-b', 'two'],
      ['vigie-a', 'one'],
    ];
    for (const node of nodes) {
      await waitFor(async () => expect(await tokenRows(node)).toEqual(expected), { timeoutMs: 5_000 });
    }
    const page = (await auditOf(c as TestServer)).result;
    const times = page.map((row) => row.time);
    expect(times).toEqual([...times].sort((x, y) => y - x));
    // Paged as on a single node: two pages of one row, then the third, in the same order.
    const first = await auditOf(c as TestServer, '?limit=1');
    const second = await auditOf(c as TestServer, `?limit=1&before=${first.next}`);
    expect([first.result[0]?.id, second.result[0]?.id]).toEqual([page[0]?.id, page[1]?.id]);

    // c away while a and b take changes: back, it lists them, once each.
    const dataDir = (c as TestServer).dataDir;
    await (c as TestServer).stop();
    servers.splice(servers.indexOf(c as TestServer), 1);
    await makeToken(b as TestServer, 'four');
    await makeToken(a as TestServer, 'five');
    const back = await startNode(nats, 'vigie-c', dataDir);
    await allJoined([a as TestServer, b as TestServer, back], { headers: ADMIN });
    await waitFor(
      async () => expect(await tokenRows(back)).toEqual([['vigie-a', 'five'], ['vigie-b', 'four'], ...expected]),
      { timeoutMs: 10_000 },
    );
    // A change on c itself is c's, and reaches the others.
    await makeToken(back, 'six');
    await waitFor(async () => expect((await tokenRows(a as TestServer))[0]).toEqual(['vigie-c', 'six']), {
      timeoutMs: 5_000,
    });
  }, 120_000);

  it('NATS away: the change is answered and recorded at once, and published once NATS is back', async () => {
    const nats = await startNatsServer();
    const a = await startNode(nats, 'vigie-a');
    const b = await startNode(nats, 'vigie-b');
    await allJoined([a, b], { headers: ADMIN });
    await nats.stop();
    // Once the node knows NATS is away (a write sent just before it does waits for JetStream's answer, 5 s).
    await waitFor(async () => (await a.request('/readyz')).status === 503, { timeoutMs: 20_000 });
    const started = Date.now();
    const refusedChange = await a.request('/api/v1/tokens', {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'while-away', scopes: ['read'] }),
    });
    // Tokens are runtime state: a 503 without NATS, answered at once and audited as any refusal.
    expect(refusedChange.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await tokenRows(a)).toEqual([['vigie-a', 'while-away']]);
    await nats.restart();
    await waitFor(async () => expect(await tokenRows(b)).toEqual([['vigie-a', 'while-away']]), {
      timeoutMs: 20_000,
    });
    expect((await auditOf(b)).result.find((row) => row.name === 'while-away')?.outcome).toBe(503);
  }, 120_000);

  it('a lying message is refused and counted, the node keeps serving; a credential cannot speak for another node', async () => {
    const nats = await startNatsServer();
    const a = await startNode(nats, 'vigie-a');
    const b = await startNode(nats, 'vigie-b');
    await allJoined([a, b], { headers: ADMIN });

    // The forger has vigie-c's rights (the shipped permissions): vigie-a's subject is refused by nats-server.
    const nc = await connect(nats.connectOptions('vigie-c'));
    connections.push(nc);
    const js = jetstream(nc);
    await expect(
      js.publish('vigie.audit.vigie-a', JSON.stringify(forgedRow('vigie-a', 1)), { timeout: 2_000 }),
    ).rejects.toThrow();

    // On its own subject: another node named, not JSON, a string past the caps, a row that is not one.
    await js.publish('vigie.audit.vigie-c', JSON.stringify(forgedRow('vigie-a', 2)));
    await js.publish('vigie.audit.vigie-c', '{"node": "vigie-c", "seq":');
    await js.publish('vigie.audit.vigie-c', JSON.stringify(forgedRow('vigie-c', 3, { path: 'x'.repeat(600) })));
    // A flood of big messages stops at the stream: 16 KiB a message at most.
    await expect(
      js.publish('vigie.audit.vigie-c', JSON.stringify(forgedRow('vigie-c', 6, { path: 'x'.repeat(100_000) }))),
    ).rejects.toThrow(/maximum/);
    await js.publish('vigie.audit.vigie-c', JSON.stringify(forgedRow('vigie-c', 4, { outcome: 'ok' })));
    for (const node of [a, b]) {
      await waitFor(
        async () => {
          expect(await refused(node, 'impersonation')).toBe(1);
          expect(await refused(node, 'not_json')).toBe(1);
          expect(await refused(node, 'shape')).toBe(2);
        },
        { timeoutMs: 10_000 },
      );
      expect((await auditOf(node)).result.filter((row) => row.name === 'forged')).toEqual([]);
    }
    // A true message of c's subject is taken; the nodes kept serving and recording.
    await js.publish('vigie.audit.vigie-c', JSON.stringify(forgedRow('vigie-c', 5, { name: 'honest' })));
    await makeToken(a, 'after');
    for (const node of [a, b]) {
      await waitFor(
        async () => {
          const rows = await tokenRows(node);
          expect(rows).toContainEqual(['vigie-c', 'honest']);
          expect(rows).toContainEqual(['vigie-a', 'after']);
        },
        { timeoutMs: 5_000 },
      );
    }
  }, 120_000);
});
