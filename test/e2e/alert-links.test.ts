/**
 * The acknowledge link of a notification on a service that asks for credentials (docs/alerting.md, "Acknowledging"):
 * the link's token opens its page and acknowledges its alert without any other credential, and opens nothing else
 * (not the unack route, not another alert); the acknowledgement names the link.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { about, told } from '../helpers/alerts.ts';
import { freePort } from '../helpers/ports.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const READER = 'reader-secret-0123456789';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('acknowledge links with credentials', () => {
  let target: HttpTarget;
  let receiver: HttpTarget;
  let server: TestServer;

  beforeAll(async () => {
    receiver = await startHttpTarget();
    target = await startHttpTarget({
      handler: (_request, response: ServerResponse) => {
        response.statusCode = 500;
        response.end('down');
      },
    });
    const check = (name: string) => ({
      name,
      target: '127.0.0.1',
      port: target.port,
      path: '/',
      'valid-status': [200],
      interval: '1s',
      timeout: '900ms',
      'failure-threshold': 1,
    });
    server = await startServer({
      config: {
        http: { port: await freePort(), tokens: [{ name: 'reader', sha256: sha256(READER), scopes: ['read'] }] },
        healthchecks: { 'start-tick': '100ms' },
        notifiers: { ops: { type: 'webhook', url: `${receiver.origin}/hook`, retries: 0 } },
        alerting: { defaults: { notify: ['ops'] } },
        'http-checks': [check('one'), check('two')],
      },
    });
  }, 60_000);
  afterAll(async () => {
    await server?.kill9();
    await Promise.all([target?.close(), receiver?.close()]);
  });

  it('acknowledges its alert only, with no other credential', async () => {
    const link = (name: string) =>
      waitFor(() => about(told(receiver), name, 'firing')[0]?.ack_url ?? false, { timeoutMs: 15_000 });
    const one = new URL(await link('one'));
    const two = new URL(await link('two'));
    const idOf = (url: URL) => url.pathname.split('/')[4] as string;
    // Without the link's token: credentials needed.
    expect((await server.request(`/api/v1/alerts/${idOf(one)}/ack`, { method: 'POST' })).status).toBe(401);
    // Another alert's token opens nothing here.
    const crossed = await server.request(`/api/v1/alerts/${idOf(one)}/ack?token=${two.searchParams.get('token')}`);
    expect(crossed.status).toBe(401);
    // Its own: the page, then the acknowledgement.
    const page = await fetch(one);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const done = await fetch(`${one.href}&confirm=1`);
    expect(done.status, await done.clone().text()).toBe(200);
    // Not the unack route.
    const unack = await server.request(`/api/v1/alerts/${idOf(one)}/unack?token=${one.searchParams.get('token')}`, {
      method: 'POST',
    });
    expect(unack.status).toBe(401);
    const listed = (await (
      await server.request('/api/v1/alerts', { headers: { authorization: `Bearer ${READER}` } })
    ).json()) as { result: { check: string; status: string; acknowledged?: { by: string } }[] };
    const rows = listed.result.map((one) => [one.check, one.status, one.acknowledged?.by]);
    expect(rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
      ['one', 'acknowledged', `ack-link:${idOf(one)}`],
      ['two', 'firing', undefined],
    ]);
  }, 60_000);
});
