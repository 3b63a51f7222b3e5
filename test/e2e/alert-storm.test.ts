/**
 * A storm (docs/alerting.md, "Groups"): 2,000 TCP checks in 4 label groups (`team`), all against one local port that
 * the test closes; they go down within a few seconds of each other, and the receiver gets exactly 4 notifications
 * (one per group, listing its 500 checks), then, once the port listens again, exactly 4 recoveries. The delay from
 * the port's closing to the last notification is printed (group-wait included).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Told, told } from '../helpers/alerts.ts';
import { freePort } from '../helpers/ports.ts';
import { afterRuns } from '../helpers/runs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const CHECKS = 2000;
const TEAMS = ['a', 'b', 'c', 'd'];
const GROUP_WAIT_S = 8;

describe('a storm of 2,000 checks in 4 groups', () => {
  let receiver: HttpTarget;
  let server: TestServer;
  let port: number;
  let listener: Server | null = null;
  const sockets = new Set<Socket>();

  const open = () =>
    new Promise<void>((resolve, reject) => {
      listener = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {});
      });
      listener.once('error', reject);
      listener.listen(port, '127.0.0.1', () => resolve());
    });
  const close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      listener?.close(() => resolve());
      listener = null;
    });

  beforeAll(async () => {
    receiver = await startHttpTarget();
    port = await freePort();
    await open();
    server = await startServer({
      config: {
        http: { port: await freePort() },
        healthchecks: { 'write-delay': '5s' },
        notifiers: { ops: { type: 'webhook', url: `${receiver.origin}/hook`, retries: 0 } },
        alerting: {
          defaults: { notify: ['ops'] },
          rules: [
            {
              labels: { storm: 'yes' },
              'group-by': ['team'],
              'group-wait': `${GROUP_WAIT_S}s`,
              'group-interval': '10s',
            },
          ],
        },
        'tcp-checks': Array.from({ length: CHECKS }, (_, i) => ({
          name: `storm-${i}`,
          target: '127.0.0.1',
          port,
          interval: '2s',
          timeout: '1s',
          'failure-threshold': 2,
          'success-threshold': 1,
          labels: { storm: 'yes', team: TEAMS[i % TEAMS.length] as string },
        })),
      },
      readyTimeoutMs: 60_000,
    });
    // Every check up before the storm.
    await waitFor(
      async () => {
        const metrics = await (await server.request('/metrics')).text();
        return (metrics.match(/healthcheck_state\{name="storm-\d+",state="up"\} 1/g) ?? []).length === CHECKS;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
  }, 120_000);
  afterAll(async () => {
    await server?.kill9();
    await close();
    await receiver?.close();
  });

  const byStatus = (status: string): Told[] => told(receiver).filter((one) => one.status === status);

  it('sends exactly 4 notifications, and 4 recoveries', async () => {
    const closedAt = Date.now();
    await close();
    await waitFor(() => byStatus('firing').length === 4, { timeoutMs: 60_000, intervalMs: 100 });
    const delayMs = Date.now() - closedAt;
    // Every check runs twice more (4 s at least): a straggler's or a duplicate's notification had its chance.
    await afterRuns(server, /^storm-/, 2 * CHECKS, { timeoutMs: 60_000 });
    const firing = byStatus('firing');
    expect(firing).toHaveLength(4);
    expect(firing.map((one) => one.group.team).sort()).toEqual(TEAMS);
    for (const one of firing) expect(one.checks).toHaveLength(CHECKS / TEAMS.length);
    console.log(
      `storm: ${CHECKS} checks down, 4 notifications ${delayMs} ms after the port closed (group-wait ${GROUP_WAIT_S}s)`,
    );

    const openedAt = Date.now();
    await open();
    await waitFor(() => byStatus('resolved').length === 4, { timeoutMs: 60_000, intervalMs: 100 });
    const recoveryMs = Date.now() - openedAt;
    await afterRuns(server, /^storm-/, 2 * CHECKS, { timeoutMs: 60_000 });
    const resolved = byStatus('resolved');
    expect(resolved).toHaveLength(4);
    for (const one of resolved) expect(one.checks).toHaveLength(CHECKS / TEAMS.length);
    expect(told(receiver)).toHaveLength(8);
    console.log(`storm: 4 recoveries ${recoveryMs} ms after the port listened again (group-interval 10s)`);
  }, 150_000);
});
