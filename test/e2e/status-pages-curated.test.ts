/**
 * Public pages that say what the company chooses (docs/status-pages.md), from outside against the real server:
 * entries under their own names and descriptions (never a check id nor a failure message), internal pages for
 * `read` credentials only, incidents naming no page kept internal, every check a page shows listed by its API and by
 * `vigie check-config`, states read as Statuspage's components (pending operational, degraded
 * `degraded_performance`), summary.json's fields meaning what Statuspage's mean, and unknown checks refused.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseFeed } from '@rowanmanning/feed-parser';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DomUtils, parseDocument } from 'htmlparser2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { quietFor, waitFor } from '../helpers/wait.ts';

const ADMIN = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
const post = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { ...ADMIN, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const When = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$' });
/** A scheduled maintenance of Statuspage's summary.json (https://developer.statuspage.io, "Summary"). */
const ScheduledMaintenance = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: Type.Union(['scheduled', 'in_progress', 'verifying', 'completed'].map((value) => Type.Literal(value))),
  created_at: When,
  updated_at: When,
  monitoring_at: Type.Null(),
  resolved_at: Type.Null(),
  impact: Type.Literal('maintenance'),
  shortlink: Type.String(),
  page_id: Type.String(),
  scheduled_for: When,
  scheduled_until: When,
  incident_updates: Type.Array(
    Type.Object({
      id: Type.String(),
      status: Type.String(),
      body: Type.String(),
      incident_id: Type.String(),
      created_at: When,
      updated_at: When,
      display_at: When,
    }),
  ),
  components: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), status: Type.String() })),
});

interface Component {
  id: string;
  name: string;
  status: string;
  description: string | null;
  created_at: string;
  updated_at: string;
  group: boolean;
  group_id: string | null;
}
interface Summary {
  status: { indicator: string; description: string };
  components: Component[];
  incidents: { id: string; name: string; impact: string; components: Component[] }[];
  scheduled_maintenances: {
    name: string;
    status: string;
    impact: string;
    scheduled_for: string;
    scheduled_until: string;
    components: Component[];
  }[];
}

let server: TestServer;
let tcp: TcpTarget;
let closed: number;

const tcpCheck = (name: string, port: number, more: Record<string, unknown> = {}) => ({
  name,
  target: '127.0.0.1',
  port,
  interval: '300ms',
  timeout: '300ms',
  ...more,
});

const config = () => ({
  http: { 'basic-auth': { username: 'ops', password: 'pw' }, public: ['status-pages'] },
  // Every answer rendered anew: these tests read changes of checks at once.
  healthchecks: { 'status-page-cache': '0s' },
  'tcp-checks': [
    tcpCheck('shop-web', tcp.port, { labels: { team: 'web' } }),
    tcpCheck('shop-db', closed, { 'failure-threshold': 1 }),
    tcpCheck('batch', tcp.port),
  ],
  'command-checks': [
    // Fails, fewer times than its failure-threshold: pending, which a page shows as operational.
    { name: 'flaky', command: 'false', interval: '300ms', timeout: '300ms', 'failure-threshold': 100 },
    // Succeeds, slower than its `degraded.response-time`.
    {
      name: 'slow',
      command: 'sleep',
      arguments: ['0.05'],
      interval: '2s',
      timeout: '2s',
      degraded: { 'response-time': '10ms' },
    },
  ],
  'status-pages': [
    {
      slug: 'shop',
      title: 'Acme Shop',
      groups: [
        {
          name: 'Shop',
          checks: [
            { check: 'shop-web', name: 'Web shop', description: 'Where customers buy.' },
            { check: 'shop-db', name: 'Orders' },
          ],
        },
        { name: 'Back office', checks: ['flaky', 'slow', 'batch'] },
      ],
    },
    { slug: 'ops', title: 'Ops', visibility: 'internal', groups: [{ name: 'All', checks: ['shop-db'] }] },
    { slug: 'team', title: 'Team', groups: [{ name: 'Web', labels: { team: 'web' } }] },
  ],
});

async function summary(slug: string, headers: Record<string, string> = {}): Promise<Summary> {
  const response = await server.request(`/status/${slug}/summary.json`, { headers });
  expect(response.status).toBe(200);
  return (await response.json()) as Summary;
}

async function html(slug: string, headers: Record<string, string> = {}) {
  const response = await server.request(`/status/${slug}`, { headers });
  return { status: response.status, text: await response.text() };
}

beforeAll(async () => {
  [tcp, closed] = await Promise.all([startTcpTarget(), closedPort()]);
  server = await startServer({ config: config() });
  await waitFor(
    async () => {
      const states = await Promise.all(
        ['shop-db', 'flaky', 'slow'].map(async (name) => {
          const response = await server.request(`/api/v1/healthcheck/${name}/state`, { headers: ADMIN });
          return ((await response.json()) as { state?: string }).state;
        }),
      );
      return states.join() === 'down,pending,degraded';
    },
    { timeoutMs: 15_000 },
  );
}, 60_000);

afterAll(async () => {
  await server?.kill9();
  await tcp?.close();
});

describe('curated status pages', () => {
  it('shows each entry under the name and description the page gives, never the check id nor its failure', async () => {
    const { status, text } = await html('shop');
    expect(status).toBe(200);
    const document = parseDocument(text);
    const checks = DomUtils.findAll((element) => element.attribs.class === 'check', document.children);
    expect(checks.map((check) => [check.attribs['data-name'], check.attribs['data-state']])).toEqual([
      ['Web shop', 'operational'],
      ['Orders', 'down'],
      ['flaky', 'operational'],
      ['slow', 'degraded'],
      ['batch', 'operational'],
    ]);
    expect(DomUtils.textContent(checks[0] as never)).toContain('Where customers buy.');
    expect(text).not.toContain('shop-web');
    expect(text).not.toContain('shop-db');
    expect(text).not.toContain(`127.0.0.1:${closed}`);
    expect(text).not.toMatch(/refused/i);
  });

  it('serves an internal page to `read` credentials only, with the failure messages', async () => {
    for (const path of ['/status/ops', '/status/ops/summary.json', '/status/ops/feed.atom']) {
      const response = await server.request(path);
      expect(response.status, path).toBe(401);
      expect(((await response.json()) as { message: string }).message).toMatch(/internal/);
    }
    const { status, text } = await html('ops', ADMIN);
    expect(status).toBe(200);
    expect(text).toMatch(/refused/i);
  });

  it('keeps an incident naming no page internal, and says so; an incident on a page lists its components', async () => {
    const internal = await server.request(
      '/api/v1/incident',
      post({ title: 'Disk filling on db-3', status: 'investigating', message: 'Team only.', checks: ['shop-db'] }),
    );
    expect(internal.status).toBe(201);
    const answer = (await internal.json()) as { message: string; result: { internal: boolean } };
    expect(answer.message).toMatch(/internal: it names no status page, so only the dashboard shows it/);
    expect(answer.result.internal).toBe(true);

    const shown = await server.request(
      '/api/v1/incident',
      post({ title: 'Orders delayed', status: 'identified', message: 'Fixing.', pages: ['shop'], checks: ['shop-db'] }),
    );
    expect(shown.status).toBe(201);
    const minor = await server.request(
      '/api/v1/incident',
      post({ title: 'Slow search', status: 'monitoring', message: 'Watching.', pages: ['shop'], impact: 'minor' }),
    );
    expect(minor.status).toBe(201);
    expect(
      (
        await server.request(
          '/api/v1/incident',
          post({ title: 't', status: 'identified', message: 'm', impact: 'huge' }),
        )
      ).status,
    ).toBe(400);

    for (const slug of ['shop', 'team']) {
      expect((await html(slug)).text).not.toContain('Disk filling');
      expect(await (await server.request(`/status/${slug}/feed.atom`)).text()).not.toContain('Disk filling');
    }
    const { incidents, components } = await summary('shop');
    const orders = components.find((component) => component.name === 'Orders') as Component;
    expect(incidents.map((one) => [one.name, one.impact, one.components.map((component) => component.id)])).toEqual([
      ['Slow search', 'minor', []],
      // Its impact is its components': Orders is in major outage.
      ['Orders delayed', 'critical', [orders.id]],
    ]);
    expect(incidents[1]?.components[0]).toEqual(orders);

    // The feed, read by a feed reader's parser: the page's incidents, the internal one not among them.
    const feed = parseFeed(await (await server.request('/status/shop/feed.atom')).text());
    expect(feed.meta).toEqual({ type: 'atom', version: '1.0' });
    expect(feed.title).toBe('Acme Shop');
    expect(feed.self).toBe(`${server.url}/status/shop/feed.atom`);
    expect(feed.items.map((item) => item.title)).toEqual(['Slow search: Monitoring', 'Orders delayed: Identified']);
    for (const item of feed.items) {
      expect(item.url).toMatch(new RegExp(`^${server.url}/status/shop#incident-\\d+$`));
      expect(item.updated).toBeInstanceOf(Date);
    }
  });

  it('lists every check each page shows, through the API and `vigie check-config`', async () => {
    const page = (await (await server.request('/api/v1/status-page/team', { headers: ADMIN })).json()) as {
      shows: unknown;
    };
    expect(page.shows).toEqual([{ group: 'Web', checks: ['shop-web'] }]);
    // A new check with the labels joins the group: the listing says so at once.
    const created = await server.request(
      '/api/v1/healthcheck/tcp',
      post(tcpCheck('web-2', tcp.port, { labels: { team: 'web' } })),
    );
    expect(created.status, await created.clone().text()).toBe(201);
    const after = (await (await server.request('/api/v1/status-page/team', { headers: ADMIN })).json()) as {
      shows: unknown;
    };
    expect(after.shows).toEqual([{ group: 'Web', checks: ['shop-web', 'web-2'] }]);

    const file = join(server.dataDir, 'check.yaml');
    writeFileSync(file, JSON.stringify({ 'data-dir': server.dataDir, ...config() }));
    const described = await runCli(['check-config', file]);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toContain('status page shop (public): Acme Shop\n  Shop: shop-web, shop-db\n');
    expect(described.stdout).toContain('status page ops (internal): Ops\n  All: shop-db\n');
    expect(described.stdout).toMatch(/ {2}Web \(labels team=web\): shop-web, and every check of the API/);
  });

  it("reads check states as Statuspage's components, and the banner from them", async () => {
    const { components, status } = await summary('shop');
    const byName = new Map(components.map((component) => [component.name, component]));
    expect(['Web shop', 'Orders', 'flaky', 'slow', 'batch'].map((name) => [name, byName.get(name)?.status])).toEqual([
      ['Web shop', 'operational'],
      ['Orders', 'major_outage'],
      ['flaky', 'operational'],
      ['slow', 'degraded_performance'],
      ['batch', 'operational'],
    ]);
    expect(byName.get('Shop')?.status).toBe('major_outage');
    expect(byName.get('Back office')?.status).toBe('degraded_performance');
    // Some component in major outage: Statuspage's partial system outage.
    expect(status).toEqual({ indicator: 'major', description: 'Partial System Outage' });
    const banner = DomUtils.findOne(
      (element) => element.attribs.class === 'banner',
      parseDocument((await html('shop')).text).children,
    );
    expect(banner && DomUtils.textContent(banner)).toBe('Partial System Outage');
  });

  it('dates components by the check (created_at) and its last change of state (updated_at)', async () => {
    const before = Math.floor(Date.now() / 1000) * 1000;
    const created = await server.request('/api/v1/healthcheck/tcp', post(tcpCheck('new-one', tcp.port)));
    expect(created.status).toBe(201);
    const after = Date.now();
    expect(
      (
        await server.request(
          '/api/v1/status-page',
          post({
            slug: 'dated',
            title: 'Dated',
            groups: [{ name: 'g', checks: [{ check: 'new-one', description: 'New.' }, 'shop-db'] }],
          }),
        )
      ).status,
    ).toBe(201);
    const first = await summary('dated');
    const component = first.components.find((one) => one.name === 'new-one') as Component;
    expect(Date.parse(component.created_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(component.created_at)).toBeLessThanOrEqual(after);
    expect(component.description).toBe('New.');
    const db = first.components.find((one) => one.name === 'shop-db') as Component;
    expect(db.description).toBeNull();
    const state = (await (await server.request('/api/v1/healthcheck/shop-db/state', { headers: ADMIN })).json()) as {
      'state-since': number;
    };
    // The state API says it in seconds.
    expect(Math.floor(Date.parse(db.updated_at) / 1000)).toBe(state['state-since']);
    // Read again later: the times are the checks', not the render's.
    await quietFor(1100, "lets the clock pass a second: a time taken at the render would change, the checks' do not");
    const again = await summary('dated');
    expect(again.components.find((one) => one.name === 'shop-db')).toEqual(db);
    // Deleted and created again: a new check, a new creation.
    expect((await server.request('/api/v1/healthcheck/new-one', { method: 'DELETE', headers: ADMIN })).status).toBe(
      200,
    );
    expect((await server.request('/api/v1/healthcheck/tcp', post(tcpCheck('new-one', tcp.port)))).status).toBe(201);
    const recreated = (await summary('dated')).components.find((one) => one.name === 'new-one') as Component;
    expect(Date.parse(recreated.created_at)).toBeGreaterThan(Date.parse(component.created_at));
  });

  it('lists maintenance in progress and starting within 7 days, with their components', async () => {
    const now = Date.now();
    const windows = [
      { name: 'batch-move', start: new Date(now - 60_000).toISOString(), duration: '1h', checks: ['batch'] },
      { name: 'db-upgrade', start: new Date(now + 2 * 86_400_000).toISOString(), duration: '2h', checks: ['shop-db'] },
      { name: 'far-away', start: new Date(now + 10 * 86_400_000).toISOString(), duration: '2h', checks: ['shop-db'] },
      { name: 'elsewhere', start: new Date(now + 86_400_000).toISOString(), duration: '2h', checks: ['new-one'] },
    ];
    for (const window of windows) expect((await server.request('/api/v1/maintenance', post(window))).status).toBe(201);
    await waitFor(async () => (await summary('shop')).scheduled_maintenances.length === 2, { timeoutMs: 5000 });
    const { scheduled_maintenances: listed, components } = await summary('shop');
    const id = (name: string) => components.find((one) => one.name === name)?.id;
    expect(
      listed.map((one) => [one.name, one.status, one.impact, one.components.map((component) => component.id)]),
    ).toEqual([
      ['batch-move', 'in_progress', 'maintenance', [id('batch')]],
      ['db-upgrade', 'scheduled', 'maintenance', [id('Orders')]],
    ]);
    expect(listed[1]?.scheduled_for).toBe(new Date(Date.parse(windows[1]?.start as string)).toISOString());
    expect(Date.parse(listed[1]?.scheduled_until as string) - Date.parse(listed[1]?.scheduled_for as string)).toBe(
      7_200_000,
    );
    expect(components.find((one) => one.name === 'batch')?.status).toBe('under_maintenance');
    // Every field Statuspage documents for a scheduled maintenance, with its type.
    for (const one of listed) {
      const errors = [...Value.Errors(ScheduledMaintenance, one)].map((error) => `${error.path}: ${error.message}`);
      expect(errors).toEqual([]);
    }
    // Under maintenance and nothing worse: Statuspage's `maintenance` indicator.
    // (Statuspage answers it so, though its documentation lists none, minor, major and critical only.)
    expect(
      (
        await server.request(
          '/api/v1/status-page',
          post({ slug: 'batch', title: 'Batch', groups: [{ name: 'g', checks: ['batch', 'shop-web'] }] }),
        )
      ).status,
    ).toBe(201);
    expect((await summary('batch')).status).toEqual({
      indicator: 'maintenance',
      description: 'Service Under Maintenance',
    });
    expect((await html('shop')).text).toContain('db-upgrade');
  });

  it('refuses a page naming an unknown check: 400 through the API, a config error at start', async () => {
    const refused = await server.request(
      '/api/v1/status-page',
      post({ slug: 'typo', title: 't', groups: [{ name: 'g', checks: ['shop-wbe'] }] }),
    );
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toMatch(
      /groups\[0\]\.checks\[0\]: no check "shop-wbe"/,
    );
    expect((await server.request('/status/typo')).status).toBe(404);

    // At SIGHUP: refused whole, the pages in force kept.
    const renamed = config();
    renamed['status-pages'][0] = { ...(renamed['status-pages'][0] as object), title: 'Renamed' } as never;
    (renamed['status-pages'][0] as { groups: { checks: unknown[] }[] }).groups[1]?.checks.push('batchh');
    server.writeConfig(renamed);
    server.process.kill('SIGHUP');
    const refusedReload = await server.waitForLog(
      /reload of healthchecks refused: .*status-pages\[0\]\.groups\[1\]\.checks\[3\]: no check/,
    );
    expect(refusedReload).toBeTruthy();
    expect(
      ((await (await server.request('/api/v1/status-page/shop', { headers: ADMIN })).json()) as { title: string })
        .title,
    ).toBe('Acme Shop');

    const bad = config();
    (bad['status-pages'][0] as { groups: { checks: unknown[] }[] }).groups[1]?.checks.push('batchh');
    const file = join(server.dataDir, 'bad.yaml');
    writeFileSync(file, JSON.stringify({ ...bad, 'data-dir': join(server.dataDir, 'other') }));
    const serve = await runCli(['serve', '--config', file]);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toContain('status-pages[0].groups[1].checks[3]: no check "batchh"');
  });
});
