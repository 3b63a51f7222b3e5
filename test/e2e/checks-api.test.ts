/**
 * Network checks through the API are a reach into the network the service sits in (docs/hardening.md, "What an API
 * client can reach through checks"): an HTTP one-off answers the start of any internal URL. The API creates network
 * checks (HTTP, TCP, DNS, TLS; one-off or not; alone or in bulk) only as `healthchecks.checks-api` says, with
 * `command-checks-api`'s rule for `auto`. Heartbeat checks reach nothing and are not concerned; config-file checks
 * always run. The servers bind 0.0.0.0 and are called through 127.0.0.1: the decision is on the configured host.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const AUTH = { username: 'ops', password: 's3cret' };
const authorization = `Basic ${Buffer.from(`${AUTH.username}:${AUTH.password}`).toString('base64')}`;
const SECRET = 'internal-only-0123456789';

let internal: HttpTarget;
let open: TestServer;
let denied: TestServer;
let allowed: TestServer;

beforeAll(async () => {
  internal = await startHttpTarget({ handler: (_request, response) => response.end(SECRET) });
  const fromConfig = {
    name: 'from-config',
    target: '127.0.0.1',
    port: internal.port,
    path: '/config',
    'valid-status': [200],
    interval: '1s',
    timeout: '1s',
  };
  [open, denied, allowed] = await Promise.all([
    startServer({ config: { http: { host: '0.0.0.0' } } }),
    startServer({
      config: {
        http: { host: '0.0.0.0', 'basic-auth': AUTH },
        healthchecks: { 'checks-api': 'deny' },
        'http-checks': [fromConfig],
      },
    }),
    startServer({ config: { http: { host: '0.0.0.0' }, healthchecks: { 'checks-api': 'allow' } } }),
  ]);
});
afterAll(async () => {
  await Promise.all([open, denied, allowed].map((server) => server?.kill9()));
  await internal?.close();
});

async function post(server: TestServer, path: string, body: unknown, withAuth = false) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(withAuth ? { authorization } : {}),
  };
  const response = await server.request(path, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await response.text();
  return {
    status: response.status,
    text,
    body: JSON.parse(text) as { message: string; result?: { success: boolean; message: string } },
  };
}

const base = { interval: '10s', timeout: '1s' };
const httpOneOff = (name: string) => ({
  name,
  target: '127.0.0.1',
  port: internal.port,
  path: `/${name}`,
  'valid-status': [200],
  'one-off': true,
  ...base,
});
const NETWORK: [string, Record<string, unknown>][] = [
  ['http', { name: 'h', target: '127.0.0.1', port: 9, 'valid-status': [200], ...base }],
  ['tcp', { name: 't', target: '127.0.0.1', port: 9, ...base }],
  ['dns', { name: 'd', domain: 'localhost', ...base }],
  ['tls', { name: 's', target: '127.0.0.1', port: 9, ...base }],
];

describe('network checks through the API (healthchecks.checks-api)', () => {
  it('auto, on a non-loopback address without authentication: an HTTP one-off is refused with 403 and the target is never reached', async () => {
    const refused = await post(open, '/api/v1/healthcheck/http', httpOneOff('probe'));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      'Network checks (http, tcp, dns, tls, websocket, grpc, smtp, imap, pop3, domain, icmp) cannot be created through the API: the API listens on 0.0.0.0 without basic auth, tokens or mutual TLS ' +
        '(healthchecks.checks-api is "auto"); set http.basic-auth, http.tokens, mutual TLS (http.cacert), a loopback http.host, or healthchecks.checks-api: allow',
    );
    expect(refused.text).not.toContain(SECRET);
    expect(internal.requests.filter((request) => request.path === '/probe')).toHaveLength(0);
  });

  it('auto refuses every network kind, one-off or not, alone, under the Cabourotte path, and in bulk; heartbeat checks are not concerned', async () => {
    for (const [kind, def] of NETWORK) {
      for (const path of [`/api/v1/healthcheck/${kind}`, `/healthcheck/${kind}`]) {
        const refused = await post(open, path, def);
        expect(refused.status, `${path}: ${refused.text}`).toBe(403);
        expect(refused.body.message).toContain('healthchecks.checks-api is "auto"');
      }
      const bulk = await post(open, '/api/v1/healthcheck/bulk', { [`${kind}-checks`]: [def] });
      expect(bulk.status, `bulk ${kind}: ${bulk.text}`).toBe(403);
    }
    // A definition of the wrong shape is still a 400 naming the field.
    const wrongShape = await post(open, '/api/v1/healthcheck/tcp', { ...NETWORK[1]?.[1], timeout: 10 });
    expect(wrongShape.status).toBe(400);
    expect(wrongShape.body.message).toMatch(/^Invalid healthcheck configuration: timeout: /);
    expect((await post(open, '/api/v1/healthcheck/heartbeat', { name: 'cron', interval: '1h' })).status).toBe(201);
    expect(
      (
        await post(open, '/api/v1/healthcheck/bulk', {
          'heartbeat-checks': [{ name: 'cron', interval: '1h' }],
          'http-checks': [],
        })
      ).status,
    ).toBe(201);
    const names = (
      (await (await open.request('/api/v1/healthcheck')).json()) as { result: { name: string }[] }
    ).result.map((check) => check.name);
    expect(names).toEqual(['cron']);
  });

  it('says at start that the API listens beyond loopback without protection', async () => {
    const warning = await open.waitForLog(/listens on 0\.0\.0\.0 without basic auth, tokens or mutual TLS/);
    expect(JSON.parse(warning).level).toBe(40);
    expect(denied.logs.some((line) => /without basic auth, tokens or mutual TLS/.test(line))).toBe(false);
  });

  it('deny refuses even with authentication; config-file network checks run', async () => {
    const refused = await post(denied, '/api/v1/healthcheck/http', httpOneOff('denied'), true);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      'Network checks (http, tcp, dns, tls, websocket, grpc, smtp, imap, pop3, domain, icmp) cannot be created through the API: healthchecks.checks-api is "deny"; define them in the config file',
    );
    expect((await post(denied, '/api/v1/healthcheck/bulk', { 'tcp-checks': [NETWORK[1]?.[1]] }, true)).status).toBe(
      403,
    );
    expect(internal.requests.filter((request) => request.path === '/denied')).toHaveLength(0);
    await waitFor(() => internal.requests.some((request) => request.path === '/config'), {
      message: 'the config-file HTTP check to run',
    });
  });

  it('allow lets an unprotected API run an HTTP one-off', async () => {
    const ran = await post(allowed, '/api/v1/healthcheck/http', httpOneOff('allowed'));
    expect(ran.status).toBe(201);
    expect(ran.body.result?.success).toBe(true);
    expect(internal.requests.filter((request) => request.path === '/allowed')).toHaveLength(1);
  });
});
