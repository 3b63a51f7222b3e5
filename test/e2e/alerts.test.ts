/**
 * Alerts end to end (docs/alerting.md): the real service, checks against a local HTTP server the test steers, and a
 * local webhook receiver as the notifier. A check failing one run in four sends nothing; three failures send one
 * message and two successes one recovery; a slow answer and a certificate 10 days from its expiry fire as `degraded`;
 * a router's failure sends one notification and its 30 dependants none; an acknowledged alert repeats no more (by
 * the API and by the signed link, which acknowledges its alert only).
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa } from '../helpers/certs.ts';
import { freePort } from '../helpers/ports.ts';
import { afterRuns } from '../helpers/runs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { about, told } from '../helpers/alerts.ts';
import { waitFor } from '../helpers/wait.ts';

describe('alerts in the running service', () => {
  let targets: HttpTarget;
  let https: HttpTarget;
  let receiver: HttpTarget;
  let server: TestServer;
  const answers = new Map<string, number>();
  let flaps = 0;

  beforeAll(async () => {
    receiver = await startHttpTarget();
    targets = await startHttpTarget({
      handler: (request, response: ServerResponse) => {
        if (request.path === '/flap') {
          flaps++;
          response.statusCode = flaps % 4 === 0 ? 500 : 200;
        } else if (request.path === '/slow') {
          setTimeout(() => response.end('slow'), 400);
          return;
        } else response.statusCode = answers.get(request.path) ?? 200;
        response.end(String(response.statusCode));
      },
    });
    const ca = createCa();
    https = await startHttpTarget({ tls: ca.issue('ten-days', { dns: ['localhost'], ips: ['127.0.0.1'], days: 10 }) });
    const check = (name: string, path: string, more: Record<string, unknown> = {}) => ({
      name,
      target: '127.0.0.1',
      port: targets.port,
      path,
      'valid-status': [200],
      interval: '1s',
      timeout: '900ms',
      ...more,
    });
    server = await startServer({
      config: {
        // A port of its own: the acknowledge links name the port the service listens on.
        http: { port: await freePort() },
        healthchecks: { 'start-tick': '100ms', 'write-delay': '1s' },
        notifiers: { ops: { type: 'webhook', url: `${receiver.origin}/hook`, retries: 0 } },
        alerting: { defaults: { notify: ['ops'] } },
        'http-checks': [
          check('flappy', '/flap', { interval: '300ms', timeout: '250ms' }),
          check('breaks', '/breaks'),
          check('slow', '/slow', { degraded: { 'response-time': '200ms' } }),
          {
            ...check('cert', '/', { degraded: { 'expiry-warning': '720h' } }),
            port: https.port,
            protocol: 'https',
            cacert: ca.cert,
          },
          check('router', '/router', { 'failure-threshold': 2 }),
          ...Array.from({ length: 30 }, (_, i) =>
            check(`behind-${i}`, '/behind', { 'failure-threshold': 2, 'depends-on': ['router'] }),
          ),
          check('nagging', '/nagging', { 'failure-threshold': 1, alerts: { 'repeat-interval': '1s' } }),
          check('linked', '/linked', { 'failure-threshold': 1, alerts: { 'repeat-interval': '1s' } }),
        ],
      },
    });
  }, 60_000);
  afterAll(async () => {
    await server?.kill9();
    await Promise.all([targets?.close(), https?.close(), receiver?.close()]);
  });

  it('a check failing one run in four sends nothing; three failures one message, two successes one recovery', async () => {
    answers.set('/breaks', 500);
    const firing = await waitFor(() => about(told(receiver), 'breaks', 'firing')[0] ?? false, { timeoutMs: 15_000 });
    expect(firing.checks[0]).toMatchObject({ name: 'breaks', state: 'down', message: expect.stringContaining('500') });
    expect(firing.ack_url).toMatch(/\/api\/v1\/alerts\/[0-9a-f]{16}\/ack\?token=/);
    answers.set('/breaks', 200);
    const resolved = await waitFor(() => about(told(receiver), 'breaks', 'resolved')[0] ?? false, {
      timeoutMs: 15_000,
    });
    expect(resolved.checks[0]).toMatchObject({ name: 'breaks', state: 'up', previous: 'down' });
    // Two more runs, up: a second recovery (or a repeat) had its chance.
    await afterRuns(server, 'breaks', 2);
    expect(about(told(receiver), 'breaks').map((one) => one.status)).toEqual(['firing', 'resolved']);
    // The flapping check ran some 30 times meanwhile, failing one in four: never down, never told.
    await waitFor(() => flaps >= 24, { timeoutMs: 20_000 });
    expect(about(told(receiver), 'flappy')).toEqual([]);
  }, 40_000);

  it('a slow answer and a certificate 10 days from its expiry fire as degraded', async () => {
    const slow = await waitFor(() => about(told(receiver), 'slow', 'firing')[0] ?? false, { timeoutMs: 15_000 });
    expect(slow.checks[0]).toMatchObject({ state: 'degraded', message: expect.stringMatching(/response time/i) });
    const cert = await waitFor(() => about(told(receiver), 'cert', 'firing')[0] ?? false, { timeoutMs: 15_000 });
    expect(cert.checks[0]).toMatchObject({ state: 'degraded', message: expect.stringMatching(/expir/i) });
  }, 40_000);

  it('the router failing sends one notification, its 30 dependants none; the alerts list shows them held back', async () => {
    answers.set('/router', 500);
    answers.set('/behind', 500);
    await waitFor(() => about(told(receiver), 'router', 'firing').length === 1, { timeoutMs: 15_000 });
    const listed = await waitFor(
      async () => {
        const alerts = (await (await server.request('/api/v1/alerts?state=suppressed')).json()) as {
          result: { check: string; suppressed: string }[];
        };
        return alerts.result.filter((one) => one.check.startsWith('behind-')).length === 30 && alerts.result;
      },
      { timeoutMs: 15_000 },
    );
    expect(new Set(listed.map((one) => one.suppressed))).toEqual(new Set(['depends-on']));
    // Each dependant runs twice more, down: what would notify had its chance.
    await afterRuns(server, /^behind-/, 60);
    expect(told(receiver).filter((one) => one.checks.some((c) => c.name.startsWith('behind-')))).toEqual([]);
    const metrics = await (await server.request('/metrics')).text();
    expect(metrics).toMatch(/notifications_suppressed_total\{reason="depends-on"\} 30/);
    expect(metrics).toMatch(/notifications_sent_total\{notifier="ops",outcome="sent"\} \d+/);
    expect(metrics).toMatch(/alerts_firing \d+/);
    // Everything comes back: the router's recovery is told, the dependants' never-told alerts close silently.
    answers.set('/router', 200);
    answers.set('/behind', 200);
    await waitFor(() => about(told(receiver), 'router', 'resolved').length === 1, { timeoutMs: 15_000 });
    await waitFor(async () => {
      const alerts = (await (await server.request('/api/v1/alerts?state=suppressed')).json()) as { result: unknown[] };
      return alerts.result.length === 0;
    });
    expect(told(receiver).filter((one) => one.checks.some((c) => c.name.startsWith('behind-')))).toEqual([]);
  }, 60_000);

  it('an acknowledged alert repeats no more; its link acknowledges that alert only', async () => {
    answers.set('/nagging', 500);
    answers.set('/linked', 500);
    await waitFor(() => about(told(receiver), 'nagging', 'firing').length >= 2, { timeoutMs: 15_000 });
    const alerts = (await (await server.request('/api/v1/alerts?state=firing')).json()) as {
      result: { id: string; check: string }[];
    };
    const nagging = alerts.result.find((one) => one.check === 'nagging') as { id: string };
    // One check's alert alone (the console's check page asks so, rather than for the whole list).
    const own = (await (await server.request('/api/v1/alerts?check=nagging')).json()) as { result: { id: string }[] };
    expect(own.result.map((one) => one.id)).toEqual([nagging.id]);
    const none = (await (await server.request('/api/v1/alerts?check=nagging&state=suppressed')).json()) as {
      result: unknown[];
    };
    expect(none.result).toEqual([]);
    const ack = await server.request(`/api/v1/alerts/${nagging.id}/ack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ comment: 'on it' }),
    });
    expect(ack.status, await ack.clone().text()).toBe(200);
    const after = about(told(receiver), 'nagging').length;
    // The link of another alert does not acknowledge this one; its own does.
    const link = about(told(receiver), 'linked', 'firing')[0]?.ack_url as string;
    const token = new URL(link).searchParams.get('token') as string;
    const wrong = await server.request(`/api/v1/alerts/${nagging.id}/ack?token=${token}&confirm=1`);
    expect(wrong.status).toBe(403);
    const page = await fetch(link);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Acknowledge');
    const confirmed = await fetch(`${link}&confirm=1`);
    expect(confirmed.status, await confirmed.clone().text()).toBe(200);
    const linkedAfter = about(told(receiver), 'linked').length;
    // Three runs each, more than three repeat-intervals of 1 s: an unacknowledged alert would have repeated.
    await afterRuns(server, /^(nagging|linked)$/, 6);
    expect(about(told(receiver), 'nagging').length).toBe(after);
    expect(about(told(receiver), 'linked').length).toBe(linkedAfter);
    const listed = (await (await server.request('/api/v1/alerts?state=acknowledged')).json()) as {
      result: { check: string; acknowledged: { by: string; comment: string } }[];
    };
    expect(
      listed.result.map((one) => [one.check, one.acknowledged.by.split(':')[0], one.acknowledged.comment]),
    ).toEqual(
      expect.arrayContaining([
        ['nagging', 'anonymous', 'on it'],
        ['linked', 'anonymous', ''],
      ]),
    );
    // The acknowledgement through the API is in the audit log (the API is open here: no credentials configured).
    const audit = (await (await server.request('/api/v1/audit')).json()) as {
      result: { method: string; route: string; outcome: number }[];
    };
    expect(audit.result).toContainEqual(
      expect.objectContaining({ method: 'POST', route: '/api/v1/alerts/:id/ack', outcome: 200 }),
    );
    // The recovery is still told, and the ack of an unknown or resolved alert is refused.
    answers.set('/nagging', 200);
    await waitFor(() => about(told(receiver), 'nagging', 'resolved').length === 1, { timeoutMs: 15_000 });
    const again = await server.request(`/api/v1/alerts/${nagging.id}/ack`, { method: 'POST' });
    expect(again.status).toBe(404);
    const bad = await server.request('/api/v1/alerts?state=gone');
    expect(bad.status).toBe(400);
    const comment = await server.request(`/api/v1/alerts/${nagging.id}/ack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ note: 'x' }),
    });
    expect(comment.status).toBe(400);
    // An API check naming an unknown notifier is refused, naming the field; nothing is created.
    const check = await server.request('/api/v1/healthcheck/tcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'api-one',
        target: '127.0.0.1',
        port: targets.port,
        interval: '10s',
        timeout: '1s',
        alerts: { notify: ['ops', 'nobody'] },
      }),
    });
    expect(check.status).toBe(400);
    expect(await check.json()).toMatchObject({
      message: 'Invalid healthcheck configuration: alerts.notify[1]: unknown notifier "nobody"',
      errors: [{ field: 'alerts.notify[1]', message: 'unknown notifier "nobody"' }],
    });
    expect((await server.request('/api/v1/healthcheck/api-one')).status).toBe(404);
  }, 60_000);
});
