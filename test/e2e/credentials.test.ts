/**
 * Scoped credentials (docs/http-api.md, "Credentials"): each scope against each route family, a heartbeat
 * check's own token, public badges with the rest closed, tokens created and deleted through the API, `vigie token
 * create`, and the config errors of `http.tokens`.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { stringify } from 'yaml';
import { ROOT } from '../../bin/build.mjs';
import { loadConfig } from '../../src/config/load.ts';
import { ensureBundle, makeDataDir, startServer, type TestServer } from '../helpers/server.ts';

const exec = promisify(execFile);
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const SCOPES = ['read', 'write', 'ingest', 'heartbeat', 'admin'] as const;
const secretOf = (scope: string) => `${scope}-secret-for-the-scope-matrix`;
const HEARTBEAT_TOKEN = 'backup-job-own-token-0123456789';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const basic = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
const jsonBody = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const CONFIG = {
  http: {
    'basic-auth': { username: 'ops', password: 'pw' },
    tokens: SCOPES.map((scope) => ({ name: `${scope}-token`, sha256: sha256(secretOf(scope)), scopes: [scope] })),
    public: ['badges'],
    // The matrix presents hundreds of wrong credentials from one address (test/e2e/auth-failures.test.ts tests the
    // limit).
    'max-auth-failures': 100_000,
  },
  'heartbeat-checks': [
    // Public badges answer for checks that say so (test/e2e/public-pages.test.ts).
    { name: 'backup', interval: '1h', token: HEARTBEAT_TOKEN, badge: 'public' },
    { name: 'other', interval: '1h' },
  ],
};
let server: TestServer;
beforeAll(async () => {
  server = await startServer({ config: CONFIG });
});
afterAll(async () => {
  await server?.stop();
});

/** One request of each route family, and the scope it needs. */
const FAMILIES: { family: string; scope: (typeof SCOPES)[number]; path: string; init?: RequestInit }[] = [
  { family: 'read: a listing', scope: 'read', path: '/api/v1/healthcheck' },
  { family: 'read: results', scope: 'read', path: '/result' },
  { family: 'read: metrics', scope: 'read', path: '/metrics' },
  {
    family: 'read: an index search',
    scope: 'read',
    path: '/api/v1/index/default/search',
    init: jsonBody({ query: Buffer.from('true').toString('base64') }),
  },
  {
    family: "read: the dashboard's recent results",
    scope: 'read',
    path: '/api/v1/overview/recent-results',
    init: jsonBody({ names: ['backup'], limit: 5 }),
  },
  { family: 'admin: the audit log', scope: 'admin', path: '/api/v1/audit' },
  { family: 'write: a check', scope: 'write', path: '/api/v1/healthcheck/nope', init: { method: 'DELETE' } },
  { family: 'write: a stream', scope: 'write', path: '/api/v1/stream/nope', init: { method: 'DELETE' } },
  { family: 'write: maintenance', scope: 'write', path: '/api/v1/maintenance', init: jsonBody({}) },
  { family: 'write: a status page', scope: 'write', path: '/api/v1/status-page/nope', init: { method: 'DELETE' } },
  { family: 'write: an incident', scope: 'write', path: '/api/v1/incident', init: jsonBody({}) },
  { family: 'read: a status page (not public here)', scope: 'read', path: '/status/nope' },
  { family: 'read: the uptime report', scope: 'read', path: '/api/v1/report/uptime' },
  {
    family: 'ingest: events',
    scope: 'ingest',
    path: '/api/v1/stream/default',
    init: { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"events":[]}' },
  },
  { family: 'ingest: fluent bit', scope: 'ingest', path: '/api/v1/fluentbit/default', init: jsonBody([]) },
  { family: 'heartbeat: a report', scope: 'heartbeat', path: '/api/v1/heartbeat/other', init: { method: 'POST' } },
  { family: 'admin: tokens', scope: 'admin', path: '/api/v1/tokens' },
];

describe('the scope matrix', () => {
  it('lets each scope through its own family (admin and basic auth through all), 403 otherwise, 401 without a credential', async () => {
    for (const { family, scope, path, init } of FAMILIES) {
      const as = async (headers: Record<string, string>) =>
        (await server.request(path, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }))
          .status;
      expect(await as({}), `${family} without a credential`).toBe(401);
      expect(await as(bearer('not-a-token')), `${family} with an unknown token`).toBe(401);
      expect(await as(basic), `${family} with basic auth`).not.toSatisfy(
        (status: number) => status === 401 || status === 403,
      );
      for (const held of SCOPES) {
        const status = await as(bearer(secretOf(held)));
        if (held === scope || held === 'admin') expect([401, 403], `${family} as ${held}`).not.toContain(status);
        else expect(status, `${family} as ${held}`).toBe(403);
      }
    }
  });

  it('names the scope needed in a 403, in the part of the route body shape', async () => {
    const healthchecks = await server.request('/api/v1/healthcheck/nope', {
      method: 'DELETE',
      headers: bearer(secretOf('read')),
    });
    expect(await healthchecks.json()).toEqual({ message: expect.stringContaining('needs the scope "write"') });
    const streams = await server.request('/api/v1/stream/default', {
      method: 'PUT',
      headers: { ...bearer(secretOf('read')), 'content-type': 'application/json' },
      body: '{}',
    });
    expect(await streams.json()).toEqual({ error: expect.stringContaining('needs the scope "ingest"') });
  });

  it('refuses a websocket subscribe without read and accepts it with read', async () => {
    const open = (headers: Record<string, string>) =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/channel/alerts`, { headers });
        socket.once('open', () => {
          socket.close();
          resolve(101);
        });
        socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.once('error', () => undefined);
      });
    expect(await open({})).toBe(401);
    expect(await open(bearer(secretOf('write')))).toBe(403);
    expect(await open(bearer(secretOf('read')))).toBe(101);
  });
});

describe("a heartbeat check's own token", () => {
  it('opens its own report URLs, as a bearer or ?token=, and nothing else', async () => {
    expect(
      (await server.request('/api/v1/heartbeat/backup', { method: 'POST', headers: bearer(HEARTBEAT_TOKEN) })).status,
    ).toBe(200);
    expect(
      (
        await server.request(`/api/v1/heartbeat/backup/fail?token=${HEARTBEAT_TOKEN}`, {
          method: 'POST',
          body: 'disk full',
        })
      ).status,
    ).toBe(200);
    expect((await server.request(`/api/v1/heartbeat/backup?token=${HEARTBEAT_TOKEN}`)).status).toBe(200);
    expect((await server.request('/api/v1/heartbeat/backup?token=wrong-token-0123456789')).status).toBe(401);
    expect((await server.request(`/api/v1/heartbeat/other?token=${HEARTBEAT_TOKEN}`)).status).toBe(401);
    expect((await server.request('/api/v1/heartbeat/other', { headers: bearer(HEARTBEAT_TOKEN) })).status).toBe(401);
    expect((await server.request('/api/v1/result/backup', { headers: bearer(HEARTBEAT_TOKEN) })).status).toBe(401);
    expect((await server.request(`/api/v1/result/backup?token=${HEARTBEAT_TOKEN}`)).status).toBe(401);
  });

  it('is taken by the API too, as the secret or its SHA-256, not both', async () => {
    const write = { ...bearer(secretOf('write')), 'content-type': 'application/json' };
    const create = (body: unknown) =>
      server.request('/api/v1/healthcheck/heartbeat', { ...jsonBody(body), headers: write });
    expect((await create({ name: 'api-job', interval: '1h', token: 'api-job-own-token-0123' })).status).toBe(201);
    expect((await server.request('/api/v1/heartbeat/api-job?token=api-job-own-token-0123')).status).toBe(200);
    expect((await server.request('/api/v1/heartbeat/backup?token=api-job-own-token-0123')).status).toBe(401);
    const both = await create({
      name: 'both',
      interval: '1h',
      token: 'api-job-own-token-0123',
      'token-sha256': sha256('x'),
    });
    expect(both.status).toBe(400);
    expect(await both.json()).toEqual({
      message: expect.stringContaining('token'),
      errors: [{ field: 'token', message: 'give the token or its token-sha256, not both' }],
    });
  });

  it('is listed as its SHA-256 to admin credentials, never as the secret, and not at all to read ones', async () => {
    const asAdmin = await (await server.request('/api/v1/healthcheck/backup', { headers: basic })).text();
    expect(asAdmin).not.toContain(HEARTBEAT_TOKEN);
    expect(JSON.parse(asAdmin)).toMatchObject({ name: 'backup', 'token-sha256': sha256(HEARTBEAT_TOKEN) });
    const asReader = await (
      await server.request('/api/v1/healthcheck/backup', { headers: bearer(secretOf('read')) })
    ).text();
    expect(asReader).not.toContain(HEARTBEAT_TOKEN);
    expect(asReader).not.toContain('token-sha256');
  });
});

describe('a 401', () => {
  it("challenges with Basic, but not a fetch() of this server's own page, which shows its sign-in form", async () => {
    const plain = await server.request('/api/v1/healthcheck');
    expect(plain.status).toBe(401);
    expect(plain.headers.get('www-authenticate')).toMatch(/^Basic realm="vigie"/);
    // The Sec-Fetch-* headers are set by the browser, never by a page's script (fetch() here sends mode cors).
    const fromOtherSite = await server.request('/api/v1/healthcheck', { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(fromOtherSite.headers.get('www-authenticate')).toMatch(/^Basic/);
    const fromOwnPage = await server.request('/api/v1/healthcheck', { headers: { 'sec-fetch-site': 'same-origin' } });
    expect(fromOwnPage.status).toBe(401);
    expect(fromOwnPage.headers.get('www-authenticate')).toBeNull();
  });
});

describe('http.public', () => {
  it('serves the badges without credentials while the rest stays closed', async () => {
    const badge = await server.request('/api/v1/badge/backup/status.svg');
    expect(badge.status).toBe(200);
    expect(badge.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    // Served to anyone, so never sniffed into something else nor allowed to run anything.
    expect(badge.headers.get('x-content-type-options')).toBe('nosniff');
    expect(badge.headers.get('content-security-policy')).toBe("default-src 'none'; style-src 'unsafe-inline'");
    expect((await server.request('/api/v1/badge/backup/uptime-24h.svg')).status).toBe(200);
    for (const path of ['/api/v1/result/backup', '/api/v1/healthcheck', '/metrics', '/api/v1/overview/healthchecks']) {
      expect((await server.request(path)).status, path).toBe(401);
    }
    // The dashboard's own files hold no data: they load, and the page asks for credentials with its sign-in form.
    expect((await server.request('/frontend/', { redirect: 'manual' })).status).toBe(302);
  });
});

describe('the probes', () => {
  it('answer without credentials (load balancers send none), a wrong one changing nothing, and say nothing else', async () => {
    for (const path of ['/healthz', '/health', '/readyz']) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }] as Record<string, string>[]) {
        const response = await server.request(path, { headers });
        expect(response.status, path).toBe(200);
        expect(Object.keys((await response.json()) as object), path).toEqual(['message']);
      }
    }
    expect(await (await server.request('/readyz')).json()).toEqual({ message: 'ready' });
    // Only the probes: the method or a neighbour path still needs a credential.
    expect((await server.request('/readyz', { method: 'DELETE' })).status).toBe(401);
    expect((await server.request('/readyz/x')).status).toBe(401);
  });
});

describe('tokens through the API', () => {
  it('creates a token whose secret is shown once, lists it without secret, and refuses it once deleted', async () => {
    const admin = bearer(secretOf('admin'));
    const created = await server.request('/api/v1/tokens', {
      ...jsonBody({ name: 'ci', scopes: ['write'] }),
      headers: { ...admin, 'content-type': 'application/json' },
    });
    expect(created.status).toBe(201);
    const body = (await created.json()) as {
      name: string;
      scopes: string[];
      token: string;
      sha256: string;
      created: number;
    };
    expect(body).toMatchObject({ name: 'ci', scopes: ['write'], source: 'api' });
    expect(body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.sha256).toBe(sha256(body.token));

    const listing = await (await server.request('/api/v1/tokens', { headers: basic })).text();
    expect(listing).not.toContain(body.token);
    expect(listing).not.toContain(body.sha256);
    const { tokens } = JSON.parse(listing) as { tokens: { name: string }[] };
    expect(tokens.find((token) => token.name === 'ci')).toEqual({
      name: 'ci',
      scopes: ['write'],
      created: body.created,
      source: 'api',
    });
    expect(tokens.find((token) => token.name === 'read-token')).toEqual({
      name: 'read-token',
      scopes: ['read'],
      source: 'config',
    });

    const asCi = (path: string, init: RequestInit = {}) =>
      server.request(path, { ...init, headers: bearer(body.token) });
    expect((await asCi('/api/v1/healthcheck/nope', { method: 'DELETE' })).status).toBe(404);
    expect((await asCi('/api/v1/healthcheck')).status).toBe(403);

    const again = await server.request('/api/v1/tokens', {
      ...jsonBody({ name: 'ci', scopes: ['read'] }),
      headers: { ...admin, 'content-type': 'application/json' },
    });
    expect(again.status).toBe(409);
    expect((await server.request('/api/v1/tokens/read-token', { method: 'DELETE', headers: admin })).status).toBe(409);
    const bad = await server.request('/api/v1/tokens', {
      ...jsonBody({ name: 'x', scopes: ['root'] }),
      headers: { ...admin, 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(
      (
        await server.request('/api/v1/tokens', {
          ...jsonBody({ name: 'y', scopes: ['read'] }),
          headers: { ...bearer(secretOf('write')), 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(403);

    const deleted = await server.request('/api/v1/tokens/ci', { method: 'DELETE', headers: admin });
    expect(deleted.status).toBe(200);
    expect((await asCi('/api/v1/healthcheck/nope', { method: 'DELETE' })).status).toBe(401);
    expect((await server.request('/api/v1/tokens/ci', { method: 'DELETE', headers: admin })).status).toBe(404);
  });
});

describe('tokens through the API, across a restart', () => {
  it('keeps working: only the SHA-256 was stored, and that is all it takes', async () => {
    const admin = { ...bearer(secretOf('admin')), 'content-type': 'application/json' };
    const created = await server.request('/api/v1/tokens', {
      ...jsonBody({ name: 'kept', scopes: ['read'] }),
      headers: admin,
    });
    const { token } = (await created.json()) as { token: string };
    await server.stop();
    server = await startServer({ config: CONFIG, dataDir: server.dataDir });
    expect((await server.request('/api/v1/healthcheck', { headers: bearer(token) })).status).toBe(200);
    const { tokens } = (await (await server.request('/api/v1/tokens', { headers: basic })).json()) as {
      tokens: { name: string }[];
    };
    expect(tokens.map(({ name }) => name)).toContain('kept');
  });
});

describe('vigie token create', () => {
  it('prints a secret and the http.tokens entry holding its sha256', async () => {
    await ensureBundle();
    const { stdout } = await exec(process.execPath, [
      join(ROOT, 'bin/vigie.js'),
      'token',
      'create',
      '--name',
      'cron',
      '--scopes',
      'heartbeat,ingest',
    ]);
    const secret = /^token: (\S+)$/m.exec(stdout)?.[1] ?? '';
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(stdout).toContain(`sha256: ${sha256(secret)}`);
    expect(stdout).toMatch(/- name: cron\n\s+sha256: [0-9a-f]{64}\n\s+scopes:\n\s+- heartbeat\n\s+- ingest/);
    await expect(
      exec(process.execPath, [join(ROOT, 'bin/vigie.js'), 'token', 'create', '--name', 'cron', '--scopes', 'root']),
    ).rejects.toMatchObject({ code: 2 });
  });
});

describe('http.tokens in the config', () => {
  const load = (http: unknown) => {
    const file = join(makeDataDir(), 'vigie.yaml');
    writeFileSync(file, stringify({ http }));
    return () => loadConfig(file);
  };
  it('names the key of each mistake', () => {
    const token = { name: 'ci', sha256: sha256('x'), scopes: ['read'] };
    expect(load({ tokens: [{ ...token, sha256: 'the-secret' }] })).toThrow(
      /http\.tokens\[0\]\.sha256: must be the SHA-256 of the secret/,
    );
    expect(load({ tokens: [token, { ...token, name: 'other', scopes: ['read', 'root'] }] })).toThrow(
      /http\.tokens\[1\]\.scopes\[1\]: "root" is not one of read, write, ingest, heartbeat, admin/,
    );
    expect(load({ tokens: [token, token] })).toThrow(/http\.tokens\[1\]\.name: the token name "ci" is used twice/);
    expect(load({ tokens: [{ ...token, scopes: [] }] })).toThrow(/http\.tokens\[0\]\.scopes: needs at least one/);
    expect(load({ public: ['badges', 'everything'] })).toThrow(
      /http\.public\[1\]: "everything" is not one of badges, status-pages/,
    );
    expect(load({ tokens: [token], public: ['badges', 'status-pages'] })).not.toThrow();
  });
});
