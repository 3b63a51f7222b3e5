/**
 * Alerts in a cluster (docs/alerting.md, "Restarts"): a real nats-server and three Vigie nodes, one check against a
 * local HTTP server the test steers, a local webhook receiver. The check's owner tells of its going down; it is killed
 * with SIGKILL between `down` and `up`; the next owner, which reads the alert from the runtime state every node shares,
 * tells nothing more while the check stays down and exactly one recovery when it comes back. An alert acknowledged
 * through a node that does not own its check repeats no more from its owner, and repeats again once unacknowledged.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { about, told } from '../helpers/alerts.ts';
import { allJoined } from '../helpers/cluster.ts';
import { hasNatsServer, type NatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const NODES = ['vigie-a', 'vigie-b', 'vigie-c'];
const servers: TestServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});
afterAll(async () => {
  await stopAllNats();
});

/** Resolves once the check ran `runs` more times, wherever: its target counts what reaches it. */
async function afterRuns(target: HttpTarget, runs: number): Promise<void> {
  const from = target.requests.length;
  await waitFor(() => target.requests.length >= from + runs, { timeoutMs: 30_000 });
}
/** Three nodes running one HTTP check of `target` every 500 ms, telling `receiver`'s /hook; resolves once joined. */
async function startCluster(
  nats: NatsServer,
  receiver: HttpTarget,
  target: HttpTarget,
  check: { check: string; failureThreshold: number; alerting: Record<string, unknown> },
): Promise<TestServer[]> {
  const config = (node: string) => ({
    healthchecks: { 'start-tick': '100ms', 'write-delay': '1s' },
    cluster: { node, nats: nats.clusterNats(node), 'member-ttl': '3s' },
    notifiers: { ops: { type: 'webhook', url: `${receiver.origin}/hook`, retries: 0 } },
    alerting: { defaults: check.alerting },
    'http-checks': [
      {
        name: check.check,
        target: '127.0.0.1',
        port: target.port,
        path: '/',
        'valid-status': [200],
        interval: '500ms',
        timeout: '400ms',
        'failure-threshold': check.failureThreshold,
      },
    ],
  });
  const nodes = await Promise.all(NODES.map((node) => startServer({ config: config(node) })));
  servers.push(...nodes);
  await allJoined(nodes);
  return nodes;
}

describe.skipIf(!hasNatsServer())('alerts in a cluster', () => {
  let target: HttpTarget | undefined;
  let receiver: HttpTarget | undefined;
  afterAll(async () => {
    await Promise.all([target?.close(), receiver?.close()]);
  });

  it('the owner killed between down and up: one firing, one recovery', async () => {
    const nats: NatsServer = await startNatsServer();
    let answer = 200;
    receiver = await startHttpTarget();
    target = await startHttpTarget({
      handler: (_request, response: ServerResponse) => {
        response.statusCode = answer;
        response.end(String(answer));
      },
    });
    const nodes = await startCluster(nats, receiver, target, {
      check: 'web',
      failureThreshold: 2,
      alerting: { notify: ['ops'] },
    });
    await waitFor(async () => {
      for (const node of nodes) expect((await node.request('/readyz')).status).toBe(200);
    });
    const statuses = () => about(told(receiver as HttpTarget), 'web').map((one) => one.status);

    answer = 500;
    await waitFor(() => statuses().length === 1, { timeoutMs: 20_000 });
    // The owner: the node whose result made the change.
    // (Changes of state are written with their results, up to `write-delay` later.)
    const owner = await waitFor(
      async () => {
        const events = (await (await nodes[0]!.request('/api/v1/healthcheck/web/events')).json()) as {
          result: { state: string; node?: string }[];
        };
        return events.result.filter((event) => event.state === 'down').at(-1)?.node ?? false;
      },
      { timeoutMs: 10_000 },
    );
    expect(NODES).toContain(owner);
    const ownerNode = nodes[NODES.indexOf(owner)] as TestServer;
    const others = nodes.filter((node) => node !== ownerNode);
    // Recorded as sent, on the others too (runtime state), before the kill.
    await waitFor(
      async () => {
        for (const node of others) {
          const open = (await (await node.request('/api/v1/alerts')).json()) as {
            result: { notifications_sent: number }[];
          };
          expect(open.result[0]?.notifications_sent).toBe(1);
        }
      },
      { timeoutMs: 10_000 },
    );
    await ownerNode.kill9();
    await allJoined(others, { timeoutMs: 30_000 });
    // Still down on the new owner for several runs: nothing more.
    await afterRuns(target as HttpTarget, 8);
    expect(statuses()).toEqual(['firing']);
    answer = 200;
    await waitFor(() => statuses().length === 2, { timeoutMs: 20_000 });
    await afterRuns(target as HttpTarget, 6);
    expect(statuses()).toEqual(['firing', 'resolved']);
  }, 120_000);

  it("acknowledged through a node that is not the check's owner, the owner's repeats stop; unacknowledged, they resume", async () => {
    const nats: NatsServer = await startNatsServer();
    receiver = await startHttpTarget();
    target = await startHttpTarget({
      handler: (_request, response: ServerResponse) => {
        response.statusCode = 500;
        response.end('500');
      },
    });
    const nodes = await startCluster(nats, receiver, target, {
      check: 'nagging',
      failureThreshold: 1,
      alerting: { notify: ['ops'], 'repeat-interval': '1s' },
    });
    const firing = () => about(told(receiver as HttpTarget), 'nagging', 'firing').length;
    // Repeats: the owner tells it again every second.
    await waitFor(() => firing() >= 2, { timeoutMs: 20_000 });
    const owner = await waitFor(
      async () => {
        const events = (await (await nodes[0]!.request('/api/v1/healthcheck/nagging/events')).json()) as {
          result: { state: string; node?: string }[];
        };
        return events.result.filter((event) => event.state === 'down').at(-1)?.node ?? false;
      },
      { timeoutMs: 10_000 },
    );
    const [ackOn, unackOn] = nodes.filter((_node, i) => NODES[i] !== owner) as [TestServer, TestServer];
    const alerts = (await (await ackOn.request('/api/v1/alerts?check=nagging')).json()) as { result: { id: string }[] };
    const id = alerts.result[0]?.id as string;
    const ack = await ackOn.request(`/api/v1/alerts/${id}/ack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ comment: 'on it' }),
    });
    expect(ack.status, await ack.clone().text()).toBe(200);
    // The owner reads the acknowledgement from the cluster's state.
    const ownerNode = nodes[NODES.indexOf(owner)] as TestServer;
    await waitFor(
      async () => {
        const listed = (await (await ownerNode.request('/api/v1/alerts?check=nagging')).json()) as {
          result: { acknowledged?: unknown }[];
        };
        return listed.result[0]?.acknowledged !== undefined;
      },
      { timeoutMs: 10_000 },
    );
    // A repeat already on its way may land: the count settles over three runs, then stays over eight (four repeat
    // intervals), during which an owner that ignored the acknowledgement would have told it again.
    await afterRuns(target as HttpTarget, 3);
    const settled = firing();
    await afterRuns(target as HttpTarget, 8);
    expect(firing()).toBe(settled);
    // Unacknowledged through the third node: the owner repeats again.
    const unack = await unackOn.request(`/api/v1/alerts/${id}/unack`, { method: 'POST' });
    expect(unack.status, await unack.clone().text()).toBe(200);
    await waitFor(() => firing() >= settled + 2, { timeoutMs: 10_000 });
  }, 120_000);
});
