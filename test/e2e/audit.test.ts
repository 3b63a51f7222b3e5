/**
 * The audit log (docs/http-api.md, "Audit log"): every API change through the real server, refused ones included,
 * as rows of `GET /api/v1/audit` (scope admin); reads, event pushes and heartbeat reports are not changes; the
 * rows are paged newest first and bounded by `http.audit.max-rows` and `http.audit.retention`.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const SCOPES = ['read', 'write', 'ingest', 'heartbeat', 'admin'] as const;
const secretOf = (scope: string) => `${scope}-secret-for-the-audit-log`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const basic = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
const send = (method: string, body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

const CONFIG = {
  http: {
    'basic-auth': { username: 'ops', password: 'pw' },
    tokens: SCOPES.map((scope) => ({ name: `${scope}-token`, sha256: sha256(secretOf(scope)), scopes: [scope] })),
  },
  'heartbeat-checks': [{ name: 'nightly', interval: '1h' }],
};

interface Row {
  id: number;
  time: number;
  principal: string;
  address: string;
  method: string;
  route: string;
  path: string;
  name: string | null;
  outcome: number;
}
interface Page {
  result: Row[];
  next?: number;
}

async function audit(server: TestServer, query = ''): Promise<Page> {
  const response = await server.request(`/api/v1/audit${query}`, { headers: bearer(secretOf('admin')) });
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as Page;
}

describe('the audit log', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ config: CONFIG });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('records a create and a delete through a token: principal, address, route, path, name and outcome', async () => {
    const write = bearer(secretOf('write'));
    const before = Date.now();
    const created = await server.request(
      '/api/v1/healthcheck/tcp',
      send('POST', { name: 'db', target: '127.0.0.1', port: 1, timeout: '1s', interval: '1h' }, write),
    );
    expect(created.status, await created.text()).toBe(201);
    expect((await server.request('/api/v1/healthcheck/db', { method: 'DELETE', headers: write })).status).toBe(200);
    const { result } = await audit(server, '?name=db');
    expect(result).toEqual([
      {
        id: expect.any(Number),
        time: expect.any(Number),
        principal: 'token:write-token',
        address: '127.0.0.1',
        method: 'DELETE',
        route: '/api/v1/healthcheck/:name',
        path: '/api/v1/healthcheck/db',
        name: 'db',
        outcome: 200,
      },
      {
        id: expect.any(Number),
        time: expect.any(Number),
        principal: 'token:write-token',
        address: '127.0.0.1',
        method: 'POST',
        route: '/api/v1/healthcheck/tcp',
        path: '/api/v1/healthcheck/tcp',
        name: 'db',
        outcome: 201,
      },
    ]);
    const [deleted, create] = result as [Row, Row];
    expect(deleted.id).toBeGreaterThan(create.id);
    expect(create.time).toBeGreaterThanOrEqual(before);
    expect(deleted.time).toBeLessThanOrEqual(Date.now());
  });

  it('records streams, maintenance windows and tokens, a bulk change without a name', async () => {
    const admin = bearer(secretOf('admin'));
    expect(
      (
        await server.request(
          '/api/v1/stream/audited',
          send('POST', { config: b64('{:actions {:action :index :params [[:host]]}}') }, admin),
        )
      ).status,
    ).toBe(200);
    expect((await server.request('/api/v1/stream/audited', { method: 'DELETE', headers: admin })).status).toBe(200);
    const window = { name: 'upgrade', start: '2030-01-01T00:00:00Z', duration: '1h', checks: ['nightly'] };
    expect((await server.request('/api/v1/maintenance', send('POST', window, basic))).status).toBe(201);
    expect((await server.request('/api/v1/tokens', send('POST', { name: 'ci', scopes: ['read'] }, admin))).status).toBe(
      201,
    );
    expect((await server.request('/api/v1/tokens/ci', { method: 'DELETE', headers: admin })).status).toBe(200);
    expect((await server.request('/healthcheck/bulk', send('POST', { 'tcp-checks': [] }, admin))).status).toBe(201);
    const { result } = await audit(server, '?limit=6');
    expect(
      result
        .map(({ principal, method, route, name, outcome }) => ({ principal, method, route, name, outcome }))
        .reverse(),
    ).toEqual([
      { principal: 'token:admin-token', method: 'POST', route: '/api/v1/stream/:name', name: 'audited', outcome: 200 },
      {
        principal: 'token:admin-token',
        method: 'DELETE',
        route: '/api/v1/stream/:name',
        name: 'audited',
        outcome: 200,
      },
      { principal: 'basic:ops', method: 'POST', route: '/api/v1/maintenance', name: 'upgrade', outcome: 201 },
      { principal: 'token:admin-token', method: 'POST', route: '/api/v1/tokens', name: 'ci', outcome: 201 },
      { principal: 'token:admin-token', method: 'DELETE', route: '/api/v1/tokens/:name', name: 'ci', outcome: 200 },
      { principal: 'token:admin-token', method: 'POST', route: '/healthcheck/bulk', name: null, outcome: 201 },
    ]);
  });

  it('records refused changes: without a credential, without the scope, an invalid body', async () => {
    expect((await server.request('/api/v1/healthcheck/victim', { method: 'DELETE' })).status).toBe(401);
    expect(
      (await server.request('/api/v1/healthcheck/victim', { method: 'DELETE', headers: bearer('not-a-token') })).status,
    ).toBe(401);
    expect(
      (await server.request('/api/v1/healthcheck/victim', { method: 'DELETE', headers: bearer(secretOf('read')) }))
        .status,
    ).toBe(403);
    expect(
      (await server.request('/api/v1/healthcheck/victim', { method: 'DELETE', headers: bearer(secretOf('write')) }))
        .status,
    ).toBe(404);
    const { result } = await audit(server, '?name=victim');
    expect(result.map(({ principal, outcome }) => ({ principal, outcome })).reverse()).toEqual([
      { principal: 'anonymous', outcome: 401 },
      { principal: 'anonymous', outcome: 401 },
      { principal: 'token:read-token', outcome: 403 },
      { principal: 'token:write-token', outcome: 404 },
    ]);
    const invalid = await server.request(
      '/api/v1/healthcheck/tcp',
      send('POST', { name: 'x'.repeat(5000), port: 'nope' }, bearer(secretOf('write'))),
    );
    expect(invalid.status).toBe(400);
    const [row] = (await audit(server, '?limit=1')).result;
    expect(row).toMatchObject({ route: '/api/v1/healthcheck/tcp', outcome: 400 });
    // A hostile client does not get kilobytes into a row.
    expect(row?.name).toBe('x'.repeat(512));
    // A wrong method on a check's path is an attempt too, under the route of that path.
    expect(
      (await server.request('/api/v1/healthcheck/victim', { method: 'PATCH', headers: bearer(secretOf('write')) }))
        .status,
    ).toBe(405);
    expect((await audit(server, '?limit=1')).result[0]).toMatchObject({
      principal: 'token:write-token',
      method: 'PATCH',
      route: '/api/v1/healthcheck/:name',
      path: '/api/v1/healthcheck/victim',
      name: 'victim',
      outcome: 405,
    });
  });

  it('does not record reads, event pushes, index searches, heartbeat reports, OPTIONS nor unknown routes', async () => {
    const newest = (await audit(server, '?limit=1')).result[0]?.id;
    const requests: [string, RequestInit][] = [
      ['/api/v1/healthcheck', { headers: basic }],
      ['/api/v1/healthcheck/nightly', { headers: bearer(secretOf('read')) }],
      ['/metrics', { headers: bearer(secretOf('read')) }],
      [
        '/api/v1/stream/default',
        send(
          'PUT',
          { events: [{ host: 'web-1', service: 'http', time: Date.now() * 1e6 }] },
          bearer(secretOf('ingest')),
        ),
      ],
      ['/api/v1/index/default/search', send('POST', { query: b64('true') }, bearer(secretOf('read')))],
      ['/api/v1/overview/recent-results', send('POST', { names: ['nightly'], limit: 5 }, bearer(secretOf('read')))],
      ['/api/v1/heartbeat/nightly', { method: 'POST', headers: bearer(secretOf('heartbeat')) }],
      ['/api/v1/healthcheck/nightly', { method: 'OPTIONS', headers: basic }],
      ['/api/v1/audit', { headers: basic }],
      // No route: not a change of anything.
      ['/api/v1/nowhere', { method: 'POST', headers: basic }],
    ];
    // Admitted, whatever their answer (the default stream has no index: its search is a 404, not a change either).
    for (const [path, init] of requests)
      expect([401, 403, 500], `${init.method ?? 'GET'} ${path}`).not.toContain(
        (await server.request(path, init)).status,
      );
    expect((await audit(server, '?limit=1')).result[0]?.id).toBe(newest);
  });

  it('answers GET /api/v1/audit to admin and basic auth only', async () => {
    expect((await server.request('/api/v1/audit')).status).toBe(401);
    for (const scope of ['read', 'write', 'ingest', 'heartbeat']) {
      const refused = await server.request('/api/v1/audit', { headers: bearer(secretOf(scope)) });
      expect(refused.status, scope).toBe(403);
      expect(await refused.json()).toEqual({ message: expect.stringContaining('needs the scope "admin"') });
    }
    expect((await server.request('/api/v1/audit', { headers: basic })).status).toBe(200);
    expect((await server.request('/api/v1/audit', { headers: bearer(secretOf('admin')) })).status).toBe(200);
  });

  it('pages newest first with before, and filters on principal', async () => {
    const all = (await audit(server, '?limit=1000')).result;
    expect(all.length).toBeGreaterThan(5);
    expect(all.map(({ id }) => id)).toEqual([...all.map(({ id }) => id)].sort((a, b) => b - a));
    const seen: Row[] = [];
    let query = '?limit=2';
    for (;;) {
      const page = await audit(server, query);
      expect(page.result.length).toBeLessThanOrEqual(2);
      seen.push(...page.result);
      if (page.next === undefined) break;
      expect(page.next).toBe(page.result.at(-1)?.id);
      query = `?limit=2&before=${page.next}`;
    }
    expect(seen).toEqual(all);
    const basicRows = (await audit(server, '?principal=basic:ops')).result;
    expect(basicRows.length).toBeGreaterThan(0);
    expect(basicRows.every((row) => row.principal === 'basic:ops')).toBe(true);
    expect((await audit(server, '?principal=nobody')).result).toEqual([]);
  });

  it('refuses a bad query naming the parameter', async () => {
    for (const [query, parameter] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
      ['before=0', 'before'],
      ['before=x', 'before'],
      // Past a double's range: Ajv coerces these to Infinity and lets them through its bounds.
      ['limit=1e309', 'limit'],
      [`limit=${'9'.repeat(400)}`, 'limit'],
      ['before=1e400', 'before'],
    ]) {
      const response = await server.request(`/api/v1/audit?${query}`, { headers: basic });
      expect(response.status, query).toBe(400);
      const { message } = (await response.json()) as { message: string };
      expect(message, query).toContain(parameter);
      // Ajv's wording, as docs/http-api.md gives it: the validator compiled on first use is fastify's own.
      if (query === 'limit=1001') expect(message).toBe('Invalid request: querystring/limit must be <= 1000');
      if (query === 'limit=1e309') expect(message).toBe('Invalid request: querystring/limit must be a finite number');
    }
  });

  it('exposes audit_write_failures_total', async () => {
    const metrics = await (await server.request('/metrics', { headers: basic })).text();
    expect(metrics).toMatch(/^audit_write_failures_total 0$/m);
  });
});

describe('the audit log bounds', () => {
  it('keeps at most max-rows rows, the newest, and drops those past the retention at startup', async () => {
    let server = await startServer({ config: { http: { audit: { 'max-rows': 3 } } } });
    try {
      for (const name of ['a', 'b', 'c', 'd', 'e']) {
        expect((await server.request(`/api/v1/stream/${name}`, { method: 'DELETE' })).status).toBe(404);
      }
      const kept = (await (await server.request('/api/v1/audit')).json()) as Page;
      expect(kept.result.map(({ name }) => name)).toEqual(['e', 'd', 'c']);
      expect(kept.next).toBeUndefined();
      await server.stop();
      server = await startServer({ config: { http: { audit: { retention: '1ms' } } }, dataDir: server.dataDir });
      expect(((await (await server.request('/api/v1/audit')).json()) as Page).result).toEqual([]);
    } finally {
      await server.stop();
    }
  });
});
