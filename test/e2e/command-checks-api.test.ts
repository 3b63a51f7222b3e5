/**
 * Command checks are a privilege (docs/hardening.md): the API creates them only when it is protected or
 * listens on loopback, unless `healthchecks.command-checks-api` says otherwise; config-file command checks
 * always run. The servers bind 0.0.0.0 and are called through 127.0.0.1: the decision is on the configured host.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const AUTH = { username: 'ops', password: 's3cret' };
const authorization = `Basic ${Buffer.from(`${AUTH.username}:${AUTH.password}`).toString('base64')}`;

let open: TestServer;
let protectedApi: TestServer;
let denied: TestServer;
/** Tokens of scope `write` and `admin`, basic auth, and `command-checks-api: allow`. */
let scoped: TestServer;
const WRITE_TOKEN = 'write-token-secret-0123456789';
const ADMIN_TOKEN = 'admin-token-secret-0123456789';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

beforeAll(async () => {
  [open, protectedApi, denied, scoped] = await Promise.all([
    startServer({
      config: {
        http: { host: '0.0.0.0' },
        'command-checks': [{ name: 'from-config', command: 'true', interval: '1s', timeout: '1s' }],
      },
    }),
    startServer({ config: { http: { host: '0.0.0.0', 'basic-auth': AUTH } } }),
    startServer({
      config: { http: { host: '0.0.0.0', 'basic-auth': AUTH }, healthchecks: { 'command-checks-api': 'deny' } },
    }),
    startServer({
      config: {
        http: {
          'basic-auth': AUTH,
          tokens: [
            { name: 'ci', sha256: sha256(WRITE_TOKEN), scopes: ['read', 'write'] },
            { name: 'root', sha256: sha256(ADMIN_TOKEN), scopes: ['admin'] },
          ],
        },
        healthchecks: { 'command-checks-api': 'allow' },
      },
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([open, protectedApi, denied, scoped].map((server) => server?.kill9()));
});

async function post(server: TestServer, path: string, body: unknown, withAuth = false) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(withAuth ? { authorization } : {}),
  };
  const response = await server.request(path, { method: 'POST', headers, body: JSON.stringify(body) });
  return {
    status: response.status,
    body: (await response.json()) as { message: string; result?: { success: boolean } },
  };
}
const command = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  command: 'true',
  interval: '1s',
  timeout: '1s',
  ...extra,
});

describe('command checks through the API', () => {
  it('refused: a definition of the wrong shape is still a 400 naming the field, a well-shaped one a 403, alone or in bulk', async () => {
    const wrongShape = await post(open, '/api/v1/healthcheck/command', command('shape', { timeout: 10 }));
    expect(wrongShape).toEqual({
      status: 400,
      body: {
        message:
          'Invalid healthcheck configuration: timeout: must be a duration string such as "10s" or "1m30s", got the number 10',
        errors: [
          { field: 'timeout', message: 'must be a duration string such as "10s" or "1m30s", got the number 10' },
        ],
      },
    });
    expect(
      (await post(open, '/api/v1/healthcheck/command', command('misspelt', { comand: 'true' }))).body.message,
    ).toMatch(/^Invalid healthcheck configuration: unknown key "comand"/);
    expect((await post(open, '/api/v1/healthcheck/command', null)).body).toEqual({
      message: 'Invalid healthcheck configuration: the definition must be a JSON object',
      errors: [{ field: '', message: 'the definition must be a JSON object' }],
    });
    // Well shaped but a bad value: the policy speaks first.
    expect((await post(open, '/api/v1/healthcheck/command', command('bad-value', { timeout: '0s' }))).status).toBe(403);
    const bulkShape = await post(open, '/api/v1/healthcheck/bulk', {
      'command-checks': [command('in-bulk', { timeout: 10 })],
    });
    expect(bulkShape.status).toBe(400);
    expect(bulkShape.body.message).toMatch(
      /^Invalid healthcheck configuration: check "in-bulk" \(command-checks\[0\]\): timeout: must be a duration string/,
    );
    expect(
      (await post(open, '/api/v1/healthcheck/bulk', { 'command-checks': [command('in-bulk', { timeout: '0s' })] }))
        .status,
    ).toBe(403);
  });

  it('auto, on a non-loopback address without authentication: refused with 403 naming the setting; config-file ones run', async () => {
    for (const path of ['/api/v1/healthcheck/command', '/healthcheck/command']) {
      const refused = await post(open, path, command('from-api'));
      expect(refused.status).toBe(403);
      expect(refused.body.message).toContain('healthchecks.command-checks-api is "auto"');
      expect(refused.body.message).toContain('the API listens on 0.0.0.0 without basic auth, tokens or mutual TLS');
    }
    expect((await post(open, '/api/v1/healthcheck/command', command('one-off', { 'one-off': true }))).status).toBe(403);
    const bulk = await post(open, '/api/v1/healthcheck/bulk', { 'command-checks': [command('in-bulk')] });
    expect(bulk.status).toBe(403);
    expect(bulk.body.message).toContain('healthchecks.command-checks-api');
    // A bulk body with an empty command list is not concerned (network kinds have their own setting,
    // healthchecks.checks-api: test/e2e/checks-api.test.ts).
    const heartbeat = { name: 'cron-fine', interval: '1h' };
    expect(
      (await post(open, '/api/v1/healthcheck/bulk', { 'heartbeat-checks': [heartbeat], 'command-checks': [] })).status,
    ).toBe(201);

    const names = ((await (await open.request('/api/v1/healthcheck')).json()) as { result: { name: string }[] }).result
      .map((check) => check.name)
      .sort();
    expect(names).toEqual(['cron-fine', 'from-config']);
    await waitFor(
      async () =>
        ((await (await open.request('/api/v1/result/from-config')).json()) as { success?: boolean }).success === true,
      {
        message: 'the config-file command check to succeed',
      },
    );
  });

  it('auto, with basic auth: accepted, and the check runs', async () => {
    expect((await post(protectedApi, '/api/v1/healthcheck/command', command('from-api'))).status).toBe(401);
    expect((await post(protectedApi, '/api/v1/healthcheck/command', command('from-api'), true)).status).toBe(201);
    const oneOff = await post(protectedApi, '/api/v1/healthcheck/command', command('once', { 'one-off': true }), true);
    expect(oneOff.status).toBe(201);
    expect(oneOff.body.result?.success).toBe(true);
    await waitFor(
      async () =>
        (
          (await (await protectedApi.request('/api/v1/result/from-api', { headers: { authorization } })).json()) as {
            success?: boolean;
          }
        ).success === true,
      { message: 'the API command check to succeed' },
    );
    // A bulk body replaces the API checks (as upstream's does): from-api gives way to in-bulk.
    expect(
      (await post(protectedApi, '/api/v1/healthcheck/bulk', { 'command-checks': [command('in-bulk')] }, true)).status,
    ).toBe(201);
    await waitFor(
      async () =>
        (
          (await (await protectedApi.request('/api/v1/result/in-bulk', { headers: { authorization } })).json()) as {
            success?: boolean;
          }
        ).success === true,
      { message: 'the bulk command check to succeed' },
    );
  });

  it('deny refuses even with authentication', async () => {
    const refused = await post(denied, '/api/v1/healthcheck/command', command('from-api'), true);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(
      'Command checks cannot be created through the API: healthchecks.command-checks-api is "deny"; define them in the config file',
    );
    expect(
      (await post(denied, '/api/v1/healthcheck/bulk', { 'command-checks': [command('in-bulk')] }, true)).status,
    ).toBe(403);
  });
});

describe('the scope a command check needs', () => {
  const as = (token: string) => `Bearer ${token}`;
  async function postAs(credential: string, path: string, body: unknown) {
    const response = await scoped.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: credential },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { message: string } };
  }

  it('a write token may not create, bulk or run one-off command checks, whatever command-checks-api says', async () => {
    const message = 'Command checks through the API need the scope "admin", which token:ci does not have';
    for (const path of ['/api/v1/healthcheck/command', '/healthcheck/command']) {
      for (const body of [command('by-ci'), command('by-ci-once', { 'one-off': true, command: 'id' })]) {
        expect(await postAs(as(WRITE_TOKEN), path, body)).toEqual({ status: 403, body: { message } });
      }
    }
    expect(
      await postAs(as(WRITE_TOKEN), '/api/v1/healthcheck/bulk', { 'command-checks': [command('bulk-ci')] }),
    ).toEqual({ status: 403, body: { message } });
    // Nothing ran or was stored; other kinds are still the write scope's.
    const listed = await scoped.request('/api/v1/healthcheck', { headers: { authorization: as(ADMIN_TOKEN) } });
    expect(((await listed.json()) as { result: unknown[] }).result).toEqual([]);
    expect(
      (await postAs(as(WRITE_TOKEN), '/api/v1/healthcheck/heartbeat', { name: 'cron', interval: '1h' })).status,
    ).toBe(201);
  });

  it('an admin token and basic auth (Cabourotte clients) may', async () => {
    expect((await postAs(as(ADMIN_TOKEN), '/api/v1/healthcheck/command', command('by-root'))).status).toBe(201);
    expect((await postAs(authorization, '/healthcheck/command', command('by-ops', { 'one-off': true }))).status).toBe(
      201,
    );
  });
});
