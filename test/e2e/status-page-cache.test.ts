/**
 * A public status page is read by many: each answer is rendered once per `healthchecks.status-page-cache` (5 s by
 * default) and served from memory meanwhile, so a crowd, or a flood, costs one render per page per period instead
 * of one per reader (docs/status-pages.md, "What a page costs"). A change of a page or an incident through the API
 * shows at once; a change of a check's state within the period. `0s` renders every request.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
});

const config = (cache: string) => ({
  http: { 'basic-auth': { username: 'ops', password: 'pw' }, public: ['status-pages'] },
  healthchecks: { 'status-page-cache': cache },
  'heartbeat-checks': [{ name: 'cron', interval: '1h' }],
  'status-pages': [{ slug: 'prod', title: 'Production', groups: [{ name: 'Jobs', checks: ['cron'] }] }],
});
const admin = {
  authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}`,
  'content-type': 'application/json',
};

async function renders(server: TestServer): Promise<Record<string, number>> {
  const text = await (await server.request('/metrics', { headers: admin })).text();
  const counts: Record<string, number> = {};
  for (const [, what, count] of text.matchAll(/^status_page_renders_total\{what="([a-z.]+)"\} (\d+)$/gm))
    counts[what as string] = Number(count);
  return counts;
}

describe('the render cache of public status pages', () => {
  it('renders a page, its summary.json and its feed once for many readers, and again at once after an incident changes', async () => {
    const server = await startServer({ config: config('1h') });
    servers.push(server);
    const bodies = new Set<string>();
    for (let i = 0; i < 20; i++) {
      for (const path of ['/status/prod', '/status/prod/summary.json', '/status/prod/feed.atom']) {
        const response = await server.request(path);
        expect(response.status, path).toBe(200);
        if (path === '/status/prod') bodies.add(await response.text());
        else await response.arrayBuffer();
      }
    }
    expect(bodies.size).toBe(1);
    expect(await renders(server)).toEqual({ page: 1, 'summary.json': 1, 'feed.atom': 1 });

    const created = await server.request('/api/v1/incident', {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ title: 'Backups late', status: 'investigating', message: 'looking', pages: ['prod'] }),
    });
    expect(created.status).toBe(201);
    expect(await (await server.request('/status/prod')).text()).toContain('Backups late');
    expect((await renders(server)).page).toBe(2);

    // Unknown pages are not kept: a flood of made-up slugs fills nothing.
    for (let i = 0; i < 50; i++) expect((await server.request(`/status/nope-${i}`)).status).toBe(404);
  });

  it('renders every request with 0s', async () => {
    const server = await startServer({ config: config('0s') });
    servers.push(server);
    for (let i = 0; i < 3; i++) expect((await server.request('/status/prod')).status).toBe(200);
    expect((await renders(server)).page).toBe(3);
  });
});
