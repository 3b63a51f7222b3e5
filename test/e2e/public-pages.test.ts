/**
 * What public status pages and badges tell a reader without credentials (docs/hardening.md, "Public pages and
 * badges"): states, never failure messages (a target URL with its query string, a command's stdout), unless the page
 * says `show-messages: true`; badges only of the checks a public page shows or that say `badge: public`, the others
 * answering as an unknown check does. A `read` credential still sees everything.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const READ_TOKEN = 'read-token-secret-0123456789';
const read = { authorization: `Bearer ${READ_TOKEN}` };
const SECRETS = ['SECRET123', '/admin', 'DB_PASSWORD', 'hunter2'];

let pagesPublic: TestServer;
let badgesOnly: TestServer;

beforeAll(async () => {
  const port = await closedPort();
  const config = (publicFamilies: string[]) => ({
    http: {
      'basic-auth': { username: 'ops', password: 'pw' },
      tokens: [{ name: 'reader', sha256: createHash('sha256').update(READ_TOKEN).digest('hex'), scopes: ['read'] }],
      public: publicFamilies,
    },
    'http-checks': [
      {
        name: 'admin-api',
        target: '127.0.0.1',
        port,
        path: '/admin?key=SECRET123',
        'valid-status': [200],
        interval: '1s',
        timeout: '1s',
        // Down at its first failure, rather than pending (shown operational) for two more runs.
        'failure-threshold': 1,
      },
    ],
    'command-checks': [
      {
        name: 'db',
        command: 'sh',
        arguments: ['-c', 'echo DB_PASSWORD=hunter2; exit 1'],
        interval: '1s',
        timeout: '1s',
        'failure-threshold': 1,
      },
      { name: 'hidden', command: 'true', interval: '1s', timeout: '1s' },
      { name: 'badged', command: 'true', interval: '1s', timeout: '1s', badge: 'public' },
    ],
    'status-pages': [
      { slug: 'public', title: 'Public', groups: [{ name: 'All', checks: ['admin-api', 'db'] }] },
      { slug: 'verbose', title: 'Verbose', 'show-messages': true, groups: [{ name: 'All', checks: ['db'] }] },
    ],
  });
  pagesPublic = await startServer({ config: config(['status-pages', 'badges']) });
  badgesOnly = await startServer({ config: config(['badges']) });
  for (const server of [pagesPublic, badgesOnly]) {
    await waitFor(
      async () => {
        const response = await server.request('/api/v1/result', { headers: read });
        return ((await response.json()) as { result: unknown[] }).result.length === 4;
      },
      { timeoutMs: 15_000 },
    );
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([pagesPublic?.kill9(), badgesOnly?.kill9()]);
});

async function text(server: TestServer, path: string, headers: Record<string, string> = {}) {
  const response = await server.request(path, { headers });
  return { status: response.status, body: await response.text() };
}

describe('public status pages', () => {
  it('show each check down, without its failure message, in the page, summary.json and the feed', async () => {
    for (const path of ['/status/public', '/status/public/summary.json', '/status/public/feed.atom']) {
      const answer = await text(pagesPublic, path);
      expect(answer.status, path).toBe(200);
      for (const secret of SECRETS) expect(answer.body, `${path} shows ${secret}`).not.toContain(secret);
    }
    const page = (await text(pagesPublic, '/status/public')).body;
    expect(page).toContain('data-name="admin-api" data-state="down"');
    expect(page).toContain('data-name="db" data-state="down"');
  });

  it('show the messages to a read credential, and to anyone on a page with show-messages: true', async () => {
    const withToken = (await text(pagesPublic, '/status/public', read)).body;
    expect(withToken).toContain('SECRET123');
    expect(withToken).toContain('DB_PASSWORD=hunter2');
    // The anonymous answer, rendered and kept first, is not what a read credential gets, nor the reverse.
    expect((await text(pagesPublic, '/status/public')).body).not.toContain('DB_PASSWORD');
    expect((await text(pagesPublic, '/status/verbose')).body).toContain('DB_PASSWORD=hunter2');
  });

  it('refuse a wrong credential rather than serve it as anonymous', async () => {
    expect((await text(pagesPublic, '/status/public', { authorization: 'Bearer wrong-token-0123456789' })).status).toBe(
      401,
    );
  });
});

describe('public badges', () => {
  const unknown = async (server: TestServer, name: string) => text(server, `/api/v1/badge/${name}/status.svg`);

  it('answer for the checks of a public page and those with badge: public; the others are unknown checks', async () => {
    for (const name of ['admin-api', 'db', 'badged']) {
      expect((await text(pagesPublic, `/api/v1/badge/${name}/status.svg`)).status, name).toBe(200);
      expect((await text(pagesPublic, `/api/v1/badge/${name}/uptime-24h.svg`)).status, name).toBe(200);
    }
    for (const path of ['/api/v1/badge/hidden/status.svg', '/api/v1/badge/hidden/uptime-30d.svg']) {
      expect(await text(pagesPublic, path), path).toEqual({
        status: 404,
        body: JSON.stringify({ message: 'Healthcheck hidden not found' }),
      });
    }
    expect((await unknown(pagesPublic, 'nope')).body).toBe(JSON.stringify({ message: 'Healthcheck nope not found' }));
  });

  it('without public pages, answer only for badge: public', async () => {
    expect((await unknown(badgesOnly, 'badged')).status).toBe(200);
    for (const name of ['admin-api', 'db', 'hidden']) expect((await unknown(badgesOnly, name)).status, name).toBe(404);
  });

  it('answer for every check to a read credential', async () => {
    expect((await text(badgesOnly, '/api/v1/badge/hidden/status.svg', read)).status).toBe(200);
    expect((await text(pagesPublic, '/api/v1/badge/hidden/uptime-7d.svg', read)).status).toBe(200);
  });

  it('list badge: public with the definition', async () => {
    const listed = (await (await badgesOnly.request('/api/v1/healthcheck/badged', { headers: read })).json()) as {
      badge?: string;
    };
    expect(listed.badge).toBe('public');
  });
});
