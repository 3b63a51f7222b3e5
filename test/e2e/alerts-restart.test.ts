/**
 * An alert's state survives kill -9 (docs/alerting.md, "Restarts"): the service is killed with SIGKILL between a
 * check's `down` and its `up`, with results still unwritten (`write-delay` 30 s), and started again on the same data
 * directory. Whether the check is still down after the restart or came back while the service was dead, the receiver
 * gets exactly one firing notification and one recovery.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.ts';
import { afterRuns } from '../helpers/runs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';
import { about, told } from '../helpers/alerts.ts';

describe('alerts across kill -9', () => {
  let target: HttpTarget;
  let receiver: HttpTarget;
  let server: TestServer | undefined;
  let answer = 200;
  let config: Record<string, unknown>;

  beforeAll(async () => {
    receiver = await startHttpTarget();
    target = await startHttpTarget({
      handler: (_request, response: ServerResponse) => {
        response.statusCode = answer;
        response.end(String(answer));
      },
    });
    config = {
      http: { port: await freePort() },
      // Results wait 30 s to be written: the restart restores states older than the alert.
      healthchecks: { 'start-tick': '100ms', 'write-delay': '30s' },
      notifiers: { ops: { type: 'webhook', url: `${receiver.origin}/hook`, retries: 0 } },
      alerting: { defaults: { notify: ['ops'] } },
      'http-checks': [
        {
          name: 'web',
          target: '127.0.0.1',
          port: target.port,
          path: '/',
          'valid-status': [200],
          interval: '500ms',
          timeout: '400ms',
          'failure-threshold': 2,
          'success-threshold': 2,
        },
      ],
    };
  });
  afterAll(async () => {
    await server?.kill9();
    await Promise.all([target?.close(), receiver?.close()]);
  });

  const statuses = () => about(told(receiver), 'web').map((one) => one.status);
  /** The service recorded that it sent the firing notification (killed before, it sends it again: nothing lost). */
  const recorded = () =>
    waitFor(async () => {
      const open = (await (await (server as TestServer).request('/api/v1/alerts')).json()) as {
        result: { notifications_sent: number }[];
      };
      return open.result[0]?.notifications_sent === 1;
    });

  it('still down after the restart: no second firing, one recovery', async () => {
    server = await startServer({ config });
    answer = 500;
    await waitFor(() => statuses().length === 1, { timeoutMs: 15_000 });
    await recorded();
    await server.kill9();
    server = await startServer({ config, dataDir: server.dataDir });
    // It keeps failing for several runs after the restart: nothing more is told.
    await afterRuns(server, 'web', 6);
    expect(statuses()).toEqual(['firing']);
    answer = 200;
    await waitFor(() => statuses().length === 2, { timeoutMs: 15_000 });
    await afterRuns(server, 'web', 4);
    expect(statuses()).toEqual(['firing', 'resolved']);
  }, 60_000);

  it('back while the service was dead: one recovery after the restart', async () => {
    answer = 500;
    await waitFor(() => statuses().length === 3, { timeoutMs: 15_000 });
    expect(statuses()[2]).toBe('firing');
    await recorded();
    await (server as TestServer).kill9();
    answer = 200;
    server = await startServer({ config, dataDir: (server as TestServer).dataDir });
    await waitFor(() => statuses().length === 4, { timeoutMs: 15_000 });
    await afterRuns(server, 'web', 5);
    expect(statuses()).toEqual(['firing', 'resolved', 'firing', 'resolved']);
    const open = (await (await server.request('/api/v1/alerts')).json()) as { result: unknown[] };
    expect(open.result).toEqual([]);
  }, 60_000);
});
