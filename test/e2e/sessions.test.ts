/**
 * Sign-in sessions (docs/http-api.md, "Sessions"; docs/hardening.md, "Sessions, CSRF and origin"), through the real
 * server: `POST /api/v1/session` with basic-auth credentials or a token sets the `vigie_session` cookie (HttpOnly,
 * SameSite=Strict, Secure under TLS) and answers the CSRF token; a change through the cookie needs `X-Vigie-CSRF`
 * and a same-origin `Origin` (or `Referer`); bearer and basic-auth requests need neither. A session ends with its
 * sign-out, its expiry, the deletion of its token, and the cap on sessions. Every refusal changes nothing, is
 * counted and audited; failed sign-ins count in the authentication-failure limit.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createCa, readPem } from '../helpers/certs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const READER = 'reader-secret-for-the-session-tests';
const WRITER = 'writer-secret-for-the-session-tests';
const ADMIN = 'admin-secret-for-the-session-tests';
const basicHeader = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
const admin = { authorization: `Bearer ${ADMIN}` };
const CREDENTIALS = {
  'basic-auth': { username: 'ops', password: 'pw' },
  tokens: [
    { name: 'reader', sha256: sha256(READER), scopes: ['read'] },
    { name: 'writer', sha256: sha256(WRITER), scopes: ['write'] },
    { name: 'admin', sha256: sha256(ADMIN), scopes: ['admin'] },
  ],
};

interface SignedIn {
  cookie: string;
  setCookie: string;
  body: { principal: string; scopes: string[]; csrf: string; expires: string };
}

async function signIn(server: TestServer, credentials: Record<string, string>, headers = {}): Promise<SignedIn> {
  const response = await server.request('/api/v1/session', {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: server.url, ...headers },
    body: JSON.stringify(credentials),
  });
  const text = await response.text();
  expect(response.status, text).toBe(201);
  const setCookie = response.headers.getSetCookie()[0] ?? '';
  const value = /^vigie_session=([^;]*)/.exec(setCookie)?.[1] ?? '';
  return { cookie: `vigie_session=${value}`, setCookie, body: JSON.parse(text) as SignedIn['body'] };
}

const tcpCheck = (name: string) => ({ name, target: '127.0.0.1', port: 9, interval: '1h', timeout: '1s' });

/** A change through a session: the cookie, and whichever of CSRF, Origin and Referer are given. */
function changeThrough(
  session: SignedIn,
  extra: { csrf?: string; origin?: string; referer?: string },
  body: unknown,
): RequestInit {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      cookie: session.cookie,
      ...(extra.csrf !== undefined ? { 'x-vigie-csrf': extra.csrf } : {}),
      ...(extra.origin !== undefined ? { origin: extra.origin } : {}),
      ...(extra.referer !== undefined ? { referer: extra.referer } : {}),
    },
    body: JSON.stringify(body),
  };
}

async function checkExists(server: TestServer, name: string): Promise<boolean> {
  const response = await server.request(`/api/v1/healthcheck/${name}`, { headers: admin });
  return response.status === 200;
}

async function metric(server: TestServer, series: string): Promise<number> {
  const text = await (await server.request('/metrics', { headers: admin })).text();
  const escaped = series.replace(/[{}"=]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text)?.[1] ?? '0');
}

interface AuditRow {
  principal: string;
  method: string;
  route: string;
  name: string | null;
  outcome: number;
}

async function auditRows(server: TestServer, limit = 20): Promise<AuditRow[]> {
  const response = await server.request(`/api/v1/audit?limit=${limit}`, { headers: admin });
  return ((await response.json()) as { result: AuditRow[] }).result;
}

/** The rows of kind `sessions` in the service's SQLite file, read beside the running service. */
function storedSessions(server: TestServer): { key: string; value: string }[] {
  const db = new Database(join(server.dataDir, 'vigie.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare("select key, value from runtime_state where kind = 'sessions'").all() as {
      key: string;
      value: string;
    }[];
  } finally {
    db.close();
  }
}

/** A dispatcher whose requests come from another loopback address: the failure limit counts per address. */
const fromAddress = (localAddress: string) => new Agent({ localAddress });

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ config: { http: { ...CREDENTIALS, 'max-auth-failures': 3 } } });
});
afterAll(async () => {
  await server?.stop();
});

describe('signing in', () => {
  it('with basic-auth credentials sets an HttpOnly, SameSite=Strict cookie, answers the CSRF token, and stores only a hash', async () => {
    const before = Date.now();
    const session = await signIn(server, { username: 'ops', password: 'pw' });
    expect(session.body).toEqual({
      principal: 'basic:ops',
      scopes: ['admin'],
      csrf: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      expires: expect.any(String),
    });
    const expires = Date.parse(session.body.expires);
    expect(expires).toBeGreaterThanOrEqual(before + 12 * 3600_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 12 * 3600_000 + 1000);
    const id = session.cookie.slice('vigie_session='.length);
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const attributes = session.setCookie.split(';').map((part) => part.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/', 'max-age=43200']));
    expect(attributes).not.toContain('secure');

    const rows = storedSessions(server);
    const row = rows.find((stored) => stored.key === sha256(id));
    expect(row).toBeDefined();
    expect(row?.value).not.toContain(id);
    expect(row?.value).not.toContain(session.body.csrf);
    expect(rows.some((stored) => stored.key.includes(id) || stored.value.includes(id))).toBe(false);

    const who = await server.request('/api/v1/session', { headers: { cookie: session.cookie } });
    expect(who.status).toBe(200);
    expect(await who.json()).toEqual({
      principal: 'basic:ops',
      scopes: ['admin'],
      open: false,
      csrf: session.body.csrf,
      expires: session.body.expires,
    });
    const listing = await server.request('/api/v1/healthcheck', { headers: { cookie: session.cookie } });
    expect(listing.status).toBe(200);
  });

  it('with a token gives that token its scopes; a bearer request says who it is without a session', async () => {
    const session = await signIn(server, { token: WRITER });
    expect(session.body).toMatchObject({ principal: 'token:writer', scopes: ['write'] });
    const bearer = await server.request('/api/v1/session', { headers: { authorization: `Bearer ${READER}` } });
    expect(await bearer.json()).toEqual({ principal: 'token:reader', scopes: ['read'], open: false });
    const nobody = await server.request('/api/v1/session');
    expect(nobody.status).toBe(401);
    // The page shows its own form: no challenge that would open the browser's.
    expect(nobody.headers.get('www-authenticate')).toBeNull();
    expect(await nobody.json()).toEqual({ message: 'Not signed in' });
  });

  it('refuses a body that is neither, naming every problem, and a foreign Origin', async () => {
    const post = (body: unknown, origin = server.url) =>
      server.request('/api/v1/session', {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin },
        body: JSON.stringify(body),
      });
    const empty = await post({});
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual({
      message: expect.stringMatching(/^Invalid sign-in: /),
      errors: [{ field: '', message: 'give either username and password, or token' }],
    });
    const both = await post({ username: 'ops', token: 'x', extra: 1 });
    expect(both.status).toBe(400);
    const { errors } = (await both.json()) as { errors: { field: string }[] };
    expect(errors.map((error) => error.field).sort()).toEqual(['extra', 'password', 'token']);
    const foreign = await post({ username: 'ops', password: 'pw' }, 'http://evil.example');
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { message: string }).message).toMatch(/Origin http:\/\/evil\.example/);
    expect(foreign.headers.getSetCookie()).toEqual([]);
  });
});

describe('a change through a session', () => {
  it('needs X-Vigie-CSRF and a same-origin Origin or Referer; each refusal changes nothing, is counted and audited', async () => {
    const session = await signIn(server, { username: 'ops', password: 'pw' });
    const other = await signIn(server, { username: 'ops', password: 'pw' });
    const csrfBefore = await metric(server, 'http_session_refusals_total{reason="csrf"}');
    const originBefore = await metric(server, 'http_session_refusals_total{reason="origin"}');
    const { csrf } = session.body;
    const refusals: [string, { csrf?: string; origin?: string; referer?: string }, RegExp][] = [
      ['no CSRF header', { origin: server.url }, /X-Vigie-CSRF/],
      ['a forged CSRF header', { csrf: 'A'.repeat(43), origin: server.url }, /X-Vigie-CSRF/],
      ["another session's CSRF", { csrf: other.body.csrf, origin: server.url }, /X-Vigie-CSRF/],
      ['a foreign Origin', { csrf, origin: 'http://evil.example' }, /Origin http:\/\/evil\.example/],
      ['Origin null', { csrf, origin: 'null' }, /Origin null/],
      ['another port', { csrf, origin: server.url.replace(/:(\d+)$/, ':1') }, /Origin/],
      ['neither Origin nor Referer', { csrf }, /Origin or Referer/],
      ['a foreign Referer', { csrf, referer: 'http://evil.example/page' }, /Referer/],
    ];
    for (const [what, extra, message] of refusals) {
      const name = `refused-${refusals.findIndex(([other]) => other === what)}`;
      const response = await server.request('/api/v1/healthcheck/tcp', changeThrough(session, extra, tcpCheck(name)));
      expect(response.status, what).toBe(403);
      expect(((await response.json()) as { message: string }).message, what).toMatch(message);
      expect(await checkExists(server, name), what).toBe(false);
    }
    expect(await metric(server, 'http_session_refusals_total{reason="csrf"}')).toBe(csrfBefore + 3);
    expect(await metric(server, 'http_session_refusals_total{reason="origin"}')).toBe(originBefore + 5);
    // Refused before their body was read: the rows name no check, but who tried and what.
    const rows = await auditRows(server, refusals.length);
    for (const row of rows)
      expect(row).toMatchObject({
        principal: 'basic:ops',
        method: 'POST',
        route: '/api/v1/healthcheck/tcp',
        outcome: 403,
      });

    const byReferer = await server.request(
      '/api/v1/healthcheck/tcp',
      changeThrough(session, { csrf, referer: `${server.url}/frontend/` }, tcpCheck('through-referer')),
    );
    expect(byReferer.status).toBe(201);
    const byOrigin = await server.request(
      '/api/v1/healthcheck/tcp',
      changeThrough(session, { csrf, origin: server.url }, tcpCheck('through-origin')),
    );
    expect(byOrigin.status).toBe(201);
    expect(await checkExists(server, 'through-referer')).toBe(true);
    expect(await checkExists(server, 'through-origin')).toBe(true);
    const deleted = await server.request('/api/v1/healthcheck/through-origin', {
      method: 'DELETE',
      headers: { cookie: session.cookie, 'x-vigie-csrf': csrf, origin: server.url },
    });
    expect(deleted.status).toBe(200);
  });

  it('is not asked of bearer and basic-auth requests, which no browser sends on its own', async () => {
    const bearer = await server.request('/api/v1/healthcheck/tcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${WRITER}`, origin: 'http://evil.example' },
      body: JSON.stringify(tcpCheck('by-bearer')),
    });
    expect(bearer.status).toBe(201);
    const basic = await server.request('/api/v1/healthcheck/tcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...basicHeader },
      body: JSON.stringify(tcpCheck('by-basic')),
    });
    expect(basic.status).toBe(201);
  });

  it('is refused to a session without the scope (403), with the CSRF header and Origin right', async () => {
    const session = await signIn(server, { token: READER });
    const response = await server.request(
      '/api/v1/healthcheck/tcp',
      changeThrough(session, { csrf: session.body.csrf, origin: server.url }, tcpCheck('by-reader')),
    );
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ message: expect.stringContaining('needs the scope "write"') });
    expect(await checkExists(server, 'by-reader')).toBe(false);
  });

  it('through a websocket upgrade needs a same-origin Origin', async () => {
    const session = await signIn(server, { token: READER });
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
    expect(await open({ cookie: session.cookie, origin: 'http://evil.example' })).toBe(403);
    expect(await open({ cookie: session.cookie })).toBe(403);
    expect(await open({ cookie: session.cookie, origin: server.url })).toBe(101);
  });
});

describe('a session ends', () => {
  it('at its sign-out, which needs the CSRF header too and clears the cookie', async () => {
    const session = await signIn(server, { username: 'ops', password: 'pw' });
    const id = session.cookie.slice('vigie_session='.length);
    const forged = await server.request('/api/v1/session', {
      method: 'DELETE',
      headers: { cookie: session.cookie, origin: server.url },
    });
    expect(forged.status).toBe(403);
    expect((await server.request('/api/v1/session', { headers: { cookie: session.cookie } })).status).toBe(200);

    const out = await server.request('/api/v1/session', {
      method: 'DELETE',
      headers: { cookie: session.cookie, origin: server.url, 'x-vigie-csrf': session.body.csrf },
    });
    expect(out.status).toBe(200);
    expect(await out.json()).toEqual({ message: 'Signed out' });
    expect(out.headers.getSetCookie()[0]).toMatch(/^vigie_session=; .*Expires=Thu, 01 Jan 1970/);
    expect(storedSessions(server).some((row) => row.key === sha256(id))).toBe(false);
    const after = await server.request('/api/v1/healthcheck', { headers: { cookie: session.cookie } });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toBeNull();
    expect(await after.json()).toEqual({ message: 'Session unknown or ended: sign in again' });
    const rows = await auditRows(server, 5);
    expect(rows[0]).toMatchObject({ principal: 'basic:ops', method: 'DELETE', route: '/api/v1/session', outcome: 200 });
  });

  it('when the token it was made from is deleted', async () => {
    const created = await server.request('/api/v1/tokens', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...admin },
      body: JSON.stringify({ name: 'short-lived', scopes: ['read', 'write'] }),
    });
    const { token } = (await created.json()) as { token: string };
    const session = await signIn(server, { token });
    expect((await server.request('/api/v1/healthcheck', { headers: { cookie: session.cookie } })).status).toBe(200);
    const revokedBefore = await metric(server, 'http_session_refusals_total{reason="revoked"}');
    expect((await server.request('/api/v1/tokens/short-lived', { method: 'DELETE', headers: admin })).status).toBe(200);
    const after = await server.request(
      '/api/v1/healthcheck/tcp',
      changeThrough(session, { csrf: session.body.csrf, origin: server.url }, tcpCheck('after-revoke')),
    );
    expect(after.status).toBe(401);
    expect(await checkExists(server, 'after-revoke')).toBe(false);
    expect(await metric(server, 'http_session_refusals_total{reason="revoked"}')).toBe(revokedBefore + 1);
    const id = session.cookie.slice('vigie_session='.length);
    await waitFor(() => !storedSessions(server).some((row) => row.key === sha256(id)));
  });
});

describe('sign-in attempts', () => {
  it('that fail answer 401, are audited, and count in the failure limit: past it even the right password is 429', async () => {
    const dispatcher = fromAddress('127.0.0.77');
    const attempt = (body: unknown) =>
      undiciFetch(`${server.url}/api/v1/session`, {
        dispatcher,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const wrongPassword = await attempt({ username: 'ops', password: 'guess' });
    expect(wrongPassword.status).toBe(401);
    expect(wrongPassword.headers.get('www-authenticate')).toBeNull();
    expect(await wrongPassword.json()).toEqual({ message: 'Sign-in refused: wrong user name or password' });
    const wrongToken = await attempt({ token: 'not-a-token' });
    expect(await wrongToken.json()).toEqual({ message: 'Sign-in refused: unknown token' });
    expect((await attempt({ username: 'nobody', password: 'pw' })).status).toBe(401);
    const limited = await attempt({ username: 'ops', password: 'pw' });
    expect(limited.status).toBe(429);
    expect(limited.headers.getSetCookie()).toEqual([]);
    const refused = (await auditRows(server)).filter((row) => row.route === '/api/v1/session' && row.outcome === 401);
    expect(refused.length).toBeGreaterThanOrEqual(3);
    for (const row of refused) expect(row).toMatchObject({ principal: 'anonymous', method: 'POST' });
  });

  it('that succeed are audited with the principal', async () => {
    await signIn(server, { token: WRITER });
    expect((await auditRows(server, 1))[0]).toMatchObject({
      principal: 'token:writer',
      method: 'POST',
      route: '/api/v1/session',
      outcome: 201,
    });
  });
});

describe('session limits', () => {
  let limited: TestServer;
  let capped: TestServer;
  beforeAll(async () => {
    [limited, capped] = await Promise.all([
      startServer({ config: { http: { ...CREDENTIALS, 'session-ttl': '1s' } } }),
      startServer({ config: { http: { ...CREDENTIALS, 'max-sessions': 2 } } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([limited?.stop(), capped?.stop()]);
  });

  it('an expired session is refused and its row purged', async () => {
    const session = await signIn(limited, { username: 'ops', password: 'pw' });
    expect(session.setCookie.toLowerCase()).toContain('max-age=1');
    const response = await waitFor(async () => {
      const answer = await limited.request('/api/v1/healthcheck', { headers: { cookie: session.cookie } });
      return answer.status === 401 ? answer : false;
    });
    expect(await response.json()).toEqual({ message: 'Session expired: sign in again' });
    expect(response.headers.getSetCookie()[0]).toMatch(/^vigie_session=;/);
    await waitFor(() => storedSessions(limited).length === 0);
    expect(await metric(limited, 'http_session_refusals_total{reason="expired"}')).toBeGreaterThanOrEqual(1);
  });

  it('past http.max-sessions, the oldest session is ended, counted', async () => {
    const first = await signIn(capped, { username: 'ops', password: 'pw' });
    const second = await signIn(capped, { username: 'ops', password: 'pw' });
    const third = await signIn(capped, { token: READER });
    expect(storedSessions(capped)).toHaveLength(2);
    const id = first.cookie.slice('vigie_session='.length);
    expect(storedSessions(capped).some((row) => row.key === sha256(id))).toBe(false);
    expect((await capped.request('/api/v1/healthcheck', { headers: { cookie: first.cookie } })).status).toBe(401);
    for (const kept of [second, third])
      expect((await capped.request('/api/v1/healthcheck', { headers: { cookie: kept.cookie } })).status).toBe(200);
    expect(await metric(capped, 'http_sessions_evicted_total{reason="cap"}')).toBe(1);
  });
});

describe('a session across a restart', () => {
  it('lives on, until the basic-auth password it was made with changes', async () => {
    const restarted = await startServer({ config: { http: CREDENTIALS } });
    let current = restarted;
    try {
      const session = await signIn(current, { username: 'ops', password: 'pw' });
      await current.stop();
      // A row the service cannot read (edited by hand, or damaged) costs that row only.
      const db = new Database(join(restarted.dataDir, 'vigie.db'), { fileMustExist: true });
      try {
        db.prepare('insert into runtime_state (kind, key, value, updated_at_ms) values (?, ?, ?, 0)').run(
          'sessions',
          sha256('forged'),
          JSON.stringify({ principal: 'basic:ops', scopes: ['admin'], createdMs: 0, expiresMs: 9e15 }),
        );
      } finally {
        db.close();
      }
      current = await startServer({ dataDir: restarted.dataDir, config: { http: CREDENTIALS } });
      expect((await current.request('/api/v1/healthcheck', { headers: { cookie: session.cookie } })).status).toBe(200);
      expect(
        (await current.request('/api/v1/healthcheck', { headers: { cookie: 'vigie_session=forged' } })).status,
      ).toBe(401);
      expect(await metric(current, 'runtime_state_skipped_total{kind="sessions"}')).toBe(1);
      await current.stop();
      current = await startServer({
        dataDir: restarted.dataDir,
        config: { http: { ...CREDENTIALS, 'basic-auth': { username: 'ops', password: 'changed' } } },
      });
      const after = await current.request('/api/v1/healthcheck', { headers: { cookie: session.cookie } });
      expect(after.status).toBe(401);
    } finally {
      await current.stop();
    }
  });
});

describe('without credentials configured', () => {
  it('the API is open: the session route says so, and there is nothing to sign in to', async () => {
    const open = await startServer();
    try {
      const who = await open.request('/api/v1/session');
      expect(who.status).toBe(200);
      expect(await who.json()).toEqual({
        principal: null,
        open: true,
        scopes: ['read', 'write', 'ingest', 'heartbeat', 'admin'],
      });
      const post = await open.request('/api/v1/session', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'ops', password: 'pw' }),
      });
      expect(post.status).toBe(400);
      expect(await post.json()).toMatchObject({ message: expect.stringContaining('the API is open') });
    } finally {
      await open.stop();
    }
  });
});

describe('under TLS', () => {
  it('the cookie is Secure', async () => {
    const ca = createCa();
    const leaf = ca.issue('server', { dns: ['localhost'], ips: ['127.0.0.1'] });
    const tls = await startServer({ config: { http: { ...CREDENTIALS, key: leaf.key, cert: leaf.cert } } });
    try {
      const dispatcher = new Agent({ connect: { ca: readPem(ca.cert) } });
      const response = await undiciFetch(`${tls.url}/api/v1/session`, {
        dispatcher,
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: tls.url },
        body: JSON.stringify({ username: 'ops', password: 'pw' }),
      });
      expect(response.status).toBe(201);
      const attributes = (response.headers.getSetCookie()[0] ?? '').split(';').map((part) => part.trim());
      expect(attributes).toContain('Secure');
      const cookie = attributes[0] ?? '';
      const change = await undiciFetch(`${tls.url}/api/v1/healthcheck/tcp`, {
        dispatcher,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          cookie,
          origin: tls.url.replace(/^https/, 'http'),
          'x-vigie-csrf': ((await response.json()) as { csrf: string }).csrf,
        },
        body: JSON.stringify(tcpCheck('plain-origin')),
      });
      // http://host:port is another origin than https://host:port.
      expect(change.status).toBe(403);
    } finally {
      await tls.stop();
    }
  });
});
