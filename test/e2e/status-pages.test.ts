/**
 * Status pages and incidents (docs/status-pages.md) against the real server: pages from the config file (read-only
 * through the API) and from the API, groups of checks by name and by label, the banner computed from the checks'
 * states, 90 days of daily bars from the aggregates with maintenance shown apart, incidents and their timeline on
 * the page, summary.json in Statuspage's shape, the Atom feed, hostile texts escaped, the caps.
 */
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { DomUtils, parseDocument } from 'htmlparser2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { dayStart, seedDailyUptime } from '../helpers/uptime.ts';
import { waitFor } from '../helpers/wait.ts';

type Element = ReturnType<typeof DomUtils.findAll>[number];

const HOSTILE = `<script>window.__xss=1</script>"'</style><img src=x onerror=alert(1)>`;
/** Check names may not hold "/": no closing tag, but markup all the same. */
const HOSTILE_NAME = `<script>window.__xss=3<img src=x onerror=window.__xss=4>"'`;
const json = (method: string, body: unknown): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** The page's DOM, parsed as a browser's tolerant parser would. */
function dom(html: string) {
  const document = parseDocument(html);
  const all = (predicate: (element: Element) => boolean) => DomUtils.findAll(predicate, document.children);
  const byClass = (name: string) => all((element) => (element.attribs.class ?? '').split(' ').includes(name));
  /** The day bars: the items of each `ol.bars`. */
  const bars = () =>
    all((element) => element.name === 'li' && (element.parent as Element | null)?.attribs?.class === 'bars');
  return {
    document,
    all,
    byClass,
    bars,
    text: (element: Element) => DomUtils.textContent(element).replace(/\s+/g, ' ').trim(),
  };
}

async function page(server: TestServer, slug: string): Promise<{ html: string; response: Response }> {
  const response = await server.request(`/status/${slug}`);
  return { response, html: await response.text() };
}

function bannerState(html: string): string | undefined {
  const [banner] = dom(html).byClass('banner');
  return banner?.attribs['data-state'];
}

describe('status pages', () => {
  let server: TestServer;
  let tcp: TcpTarget;
  let config: Record<string, unknown>;
  beforeAll(async () => {
    tcp = await startTcpTarget();
    const closed = await closedPort();
    const up = (name: string, labels: Record<string, string> = {}) => ({
      name,
      target: '127.0.0.1',
      port: tcp.port,
      interval: '300ms',
      timeout: '300ms',
      labels,
    });
    const down = (name: string, labels: Record<string, string> = {}) => ({
      name,
      target: '127.0.0.1',
      port: closed,
      interval: '300ms',
      timeout: '300ms',
      labels,
      // Down at its first failure, rather than pending (shown operational) for two more runs.
      'failure-threshold': 1,
    });
    config = {
      'tcp-checks': [
        up('up-1', { team: 'web' }),
        up('up-2', { team: 'web' }),
        up('up-3'),
        up('up-4'),
        down('down-1', { team: 'db' }),
        down('maint'),
        up(HOSTILE_NAME),
      ],
      'status-pages': [
        { slug: 'from-config', title: 'Config page', groups: [{ name: 'Web', labels: { team: 'web' } }] },
      ],
    };
    server = await startServer({ config });
    await waitFor(
      async () =>
        ((await (await server.request('/api/v1/result')).json()) as { result: unknown[] }).result.length === 7,
      { timeoutMs: 15_000 },
    );
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await tcp?.close();
  });

  it('creates, lists, reads, replaces and deletes pages; config pages are read-only', async () => {
    const body = {
      slug: 'api-page',
      title: 'API page',
      description: 'made by the API',
      groups: [{ name: 'All', checks: ['up-1'] }],
    };
    const created = await server.request('/api/v1/status-page', json('POST', body));
    expect(created.status, await created.clone().text()).toBe(201);
    expect(((await created.json()) as { result: unknown }).result).toEqual({
      ...body,
      source: 'api',
      shows: [{ group: 'All', checks: ['up-1'] }],
    });

    const listed = (await (await server.request('/api/v1/status-page')).json()) as {
      result: { slug: string; source: string }[];
    };
    expect(listed.result.map((one) => [one.slug, one.source])).toEqual([
      ['api-page', 'api'],
      ['from-config', 'configuration'],
    ]);
    expect(await (await server.request('/api/v1/status-page/from-config')).json()).toEqual({
      slug: 'from-config',
      title: 'Config page',
      groups: [{ name: 'Web', labels: { team: 'web' } }],
      source: 'configuration',
      shows: [{ group: 'Web', checks: ['up-1', 'up-2'] }],
    });

    const replaced = await server.request('/api/v1/status-page', json('POST', { ...body, title: 'API page, renamed' }));
    expect(replaced.status).toBe(201);
    expect(((await (await server.request('/api/v1/status-page/api-page')).json()) as { title: string }).title).toBe(
      'API page, renamed',
    );

    for (const response of [
      await server.request('/api/v1/status-page', json('POST', { slug: 'from-config', title: 'x', groups: [] })),
      await server.request('/api/v1/status-page/from-config', { method: 'DELETE' }),
    ]) {
      expect(response.status).toBe(409);
      expect(((await response.json()) as { message: string }).message).toMatch(
        /from-config comes from the configuration file/,
      );
    }
    expect((await server.request('/api/v1/status-page/api-page', { method: 'DELETE' })).status).toBe(200);
    expect((await server.request('/api/v1/status-page/api-page')).status).toBe(404);
    expect((await server.request('/status/api-page')).status).toBe(404);
  });

  it('refuses bad pages with a 400 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ slug: 'Bad Slug', title: 't', groups: [] }, /slug: must be/],
      [
        { slug: 'ok', title: 'x'.repeat(300), groups: [] },
        /title: is 300 bytes long, more than the limit of 200 \(healthchecks.max-status-title-bytes\)/,
      ],
      [{ slug: 'ok', title: 't', groups: [{ name: 'g' }] }, /groups\[0\]: set exactly one of checks and labels/],
      [
        { slug: 'ok', title: 't', groups: Array.from({ length: 51 }, (_, i) => ({ name: `g${i}`, checks: ['a'] })) },
        /groups: has 51 groups, more than the limit of 50 \(healthchecks.max-status-page-groups\)/,
      ],
      [
        { slug: 'ok', title: 't', groups: [{ name: 'g', checks: ['a/b'] }] },
        /groups\[0\].checks\[0\]: must not contain "\/"/,
      ],
      [{ slug: 'ok', title: 't', groups: [], extra: 1 }, /unknown key "extra"/],
      // A misspelled check would show "operational" for ever: refused, naming the entry.
      [
        { slug: 'ok', title: 't', groups: [{ name: 'g', checks: ['up-1', { check: 'up-l', name: 'Shop' }] }] },
        /groups\[0\].checks\[1\].check: no check "up-l"/,
      ],
    ];
    for (const [body, message] of cases) {
      const response = await server.request('/api/v1/status-page', json('POST', body));
      expect(response.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(((await response.json()) as { message: string }).message).toMatch(message);
    }
  });

  it('groups checks by name and by label, each with its state', async () => {
    const created = await server.request(
      '/api/v1/status-page',
      json('POST', {
        slug: 'groups',
        title: 'Groups',
        groups: [
          { name: 'Named', checks: ['up-3', 'down-1'] },
          { name: 'Web team', labels: { team: 'web' } },
        ],
      }),
    );
    expect(created.status).toBe(201);
    const { html, response } = await page(server, 'groups');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'unsafe-inline'/);
    const { byClass, text } = dom(html);
    const groups = byClass('group').map((group) => ({
      name: text(DomUtils.findOne((element) => element.name === 'h2', group.children) as Element),
      checks: DomUtils.findAll(
        (element) => (element.attribs.class ?? '').split(' ').includes('check'),
        group.children,
      ).map((check) => [check.attribs['data-name'], check.attribs['data-state']]),
    }));
    expect(groups).toEqual([
      {
        name: 'Named',
        checks: [
          ['up-3', 'operational'],
          ['down-1', 'down'],
        ],
      },
      {
        name: 'Web team',
        checks: [
          ['up-1', 'operational'],
          ['up-2', 'operational'],
        ],
      },
    ]);
    // No script at all: the page reads without JavaScript.
    expect(html).not.toMatch(/<script/i);
  });

  it("computes the banner from the checks as Statuspage's top-level status: operational, partial, major, maintenance", async () => {
    const now = Date.now();
    const window = await server.request(
      '/api/v1/maintenance',
      json('POST', {
        name: 'db-upgrade',
        start: new Date(now - 3_600_000).toISOString(),
        duration: '2h',
        checks: ['maint'],
      }),
    );
    expect(window.status).toBe(201);
    const pages: [string, string[], string, RegExp][] = [
      ['operational', ['up-1', 'up-2'], 'operational', /^All Systems Operational$/],
      // One component in major outage among others: Statuspage's partial system outage.
      ['partial', ['up-1', 'up-2', 'up-3', 'up-4', 'down-1'], 'partial-outage', /^Partial System Outage$/],
      ['major', ['down-1'], 'major-outage', /^Major System Outage$/],
      ['maintenance', ['up-1', 'maint'], 'maintenance', /^Service Under Maintenance$/],
    ];
    for (const [slug, checks] of pages) {
      expect(
        (
          await server.request(
            '/api/v1/status-page',
            json('POST', { slug, title: slug, groups: [{ name: 'g', checks }] }),
          )
        ).status,
      ).toBe(201);
    }
    // `maint` fails, but its results now fall in the window.
    await waitFor(async () => bannerState((await page(server, 'maintenance')).html) === 'maintenance', {
      timeoutMs: 5000,
    });
    for (const [slug, , state, words] of pages) {
      const { html } = await page(server, slug);
      expect(bannerState(html), slug).toBe(state);
      const [banner] = dom(html).byClass('banner');
      expect(dom(html).text(banner as Element)).toMatch(words);
    }
    const states = dom((await page(server, 'maintenance')).html)
      .byClass('check')
      .map((check) => check.attribs['data-state']);
    expect(states).toEqual(['operational', 'maintenance']);
  });

  it('draws 90 days of daily bars from the aggregates, maintenance days apart and excluded', async () => {
    seedDailyUptime(server.dataDir, [
      { name: 'up-4', daysAgo: 89, runs: 100, successes: 99 },
      { name: 'up-4', daysAgo: 10, runs: 100, successes: 50 },
      { name: 'up-4', daysAgo: 2, runs: 200, successes: 200 },
    ]);
    // A past window that the calendar still knows: five days ago, all day.
    const windowed = await server.request(
      '/api/v1/maintenance',
      json('POST', {
        name: 'past-upgrade',
        start: new Date(dayStart(5) * 1000).toISOString(),
        duration: '24h',
        checks: ['up-4'],
      }),
    );
    expect(windowed.status).toBe(201);
    expect(
      (
        await server.request(
          '/api/v1/status-page',
          json('POST', { slug: 'bars', title: 'Bars', groups: [{ name: 'g', checks: ['up-4'] }] }),
        )
      ).status,
    ).toBe(201);
    const { byClass, text, bars: barsOf } = dom((await page(server, 'bars')).html);
    const bars = barsOf();
    expect(bars).toHaveLength(90);
    const day = (daysAgo: number) => new Date(dayStart(daysAgo) * 1000).toISOString().slice(0, 10);
    // Each bar: its level as a class, its day and figures in its title.
    const dayOf = (one: Element) => one.attribs.title?.slice(0, 10);
    const bar = (daysAgo: number) => bars.find((one) => dayOf(one) === day(daysAgo)) as Element;
    const level = (daysAgo: number) => bar(daysAgo).attribs.class?.split(' ')[0];
    expect(dayOf(bars[0] as Element)).toBe(day(89));
    expect(dayOf(bars[89] as Element)).toBe(day(0));
    expect(level(89)).toBe('ok');
    expect(bar(89).attribs.title).toBe(`${day(89)}: 99.00 % of 100 runs`);
    expect(level(10)).toBe('down');
    expect(bar(10).attribs.title).toBe(`${day(10)}: 50.00 % of 100 runs`);
    expect(level(2)).toBe('up');
    expect(bar(2).attribs.title).toBe(`${day(2)}: 100 % of 200 runs`);
    expect(level(5)).toBe('maintenance');
    expect(bar(5).attribs.title).toBe(`${day(5)}: maintenance`);
    expect(level(30)).toBe('none');
    // 349 successes of 400 runs over the 90 days (and today's runs, all successful).
    const [uptime] = byClass('uptime');
    expect(text(uptime as Element)).toMatch(/^(8[7-9]|9\d)\.\d\d % uptime over 90 days$/);
  });

  it('creates incidents, appends updates, lists, shows them on the page and deletes them', async () => {
    expect(
      (
        await server.request(
          '/api/v1/status-page',
          json('POST', { slug: 'incidents', title: 'Incidents', groups: [{ name: 'g', checks: ['up-1', 'down-1'] }] }),
        )
      ).status,
    ).toBe(201);
    const created = await server.request(
      '/api/v1/incident',
      json('POST', {
        title: 'Database down',
        status: 'investigating',
        message: 'We are looking into it.',
        pages: ['incidents'],
        checks: ['down-1'],
      }),
    );
    expect(created.status, await created.clone().text()).toBe(201);
    const incident = (
      (await created.json()) as {
        result: { id: number; status: string; updates: { status: string; message: string; at: string }[] };
      }
    ).result;
    expect(incident).toMatchObject({
      title: 'Database down',
      status: 'investigating',
      pages: ['incidents'],
      checks: ['down-1'],
    });
    expect(incident.updates).toHaveLength(1);

    const updated = await server.request(
      `/api/v1/incident/${incident.id}/update`,
      json('POST', { status: 'identified', message: 'A disk is full.' }),
    );
    expect(updated.status).toBe(201);
    const afterUpdate = (
      (await updated.json()) as { result: { status: string; updates: { status: string; message: string }[] } }
    ).result;
    expect(afterUpdate.status).toBe('identified');
    expect(afterUpdate.updates.map((update) => [update.status, update.message])).toEqual([
      ['investigating', 'We are looking into it.'],
      ['identified', 'A disk is full.'],
    ]);

    const listed = (await (await server.request('/api/v1/incident?page=incidents')).json()) as {
      result: { id: number }[];
    };
    expect(listed.result.map((one) => one.id)).toEqual([incident.id]);
    expect(((await (await server.request(`/api/v1/incident/${incident.id}`)).json()) as { title: string }).title).toBe(
      'Database down',
    );

    const { byClass, text } = dom((await page(server, 'incidents')).html);
    const [shown] = byClass('incident');
    expect(shown?.attribs['data-status']).toBe('identified');
    expect(text(shown as Element)).toMatch(
      /Database down.*Identified.*A disk is full\..*Investigating.*We are looking into it\./,
    );

    expect(
      (
        await server.request(
          `/api/v1/incident/${incident.id}/update`,
          json('POST', { status: 'resolved', message: 'Space freed.' }),
        )
      ).status,
    ).toBe(201);
    const resolved = dom((await page(server, 'incidents')).html).byClass('incident');
    expect(resolved[0]?.attribs['data-status']).toBe('resolved');

    for (const [body, message] of [
      [
        { title: 't', status: 'sleeping', message: 'm', pages: ['incidents'] },
        /status: must be one of investigating, identified, monitoring, resolved/,
      ],
      [{ title: 't', status: 'identified', message: 'm', pages: ['nope'] }, /pages\[0\]: no status page "nope"/],
      [
        { title: 't', status: 'identified', message: 'x'.repeat(10_001), pages: ['incidents'] },
        /message: is 10001 bytes long, more than the limit of 10000 \(healthchecks.max-status-text-bytes\)/,
      ],
    ] as const) {
      const refused = await server.request('/api/v1/incident', json('POST', body));
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { message: string }).message).toMatch(message);
    }
    expect((await server.request(`/api/v1/incident/${incident.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await server.request(`/api/v1/incident/${incident.id}`)).status).toBe(404);
    expect(
      (await server.request('/api/v1/incident/999999/update', json('POST', { status: 'resolved', message: 'x' })))
        .status,
    ).toBe(404);
    expect(dom((await page(server, 'incidents')).html).byClass('incident')).toHaveLength(0);
  });

  it("answers summary.json in the shape of Atlassian Statuspage's", async () => {
    expect(
      (
        await server.request(
          '/api/v1/status-page',
          json('POST', { slug: 'summary', title: 'Summary', groups: [{ name: 'Web', checks: ['up-1', 'down-1'] }] }),
        )
      ).status,
    ).toBe(201);
    const created = await server.request(
      '/api/v1/incident',
      json('POST', { title: 'Slow', status: 'monitoring', message: 'Watching.', pages: ['summary'] }),
    );
    const { id } = ((await created.json()) as { result: { id: number } }).result;
    const response = await server.request('/status/summary/summary.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const summary = (await response.json()) as Static<typeof StatuspageSummary>;
    const errors = [...Value.Errors(StatuspageSummary, summary)].map((error) => `${error.path}: ${error.message}`);
    expect(errors).toEqual([]);
    expect(summary.page.name).toBe('Summary');
    expect(summary.page.url).toBe(`${server.url}/status/summary`);
    expect(summary.status).toEqual({ indicator: 'major', description: 'Partial System Outage' });
    const group = summary.components.find((component) => component.group) as Static<typeof Component>;
    expect(group.name).toBe('Web');
    const members = summary.components.filter((component) => component.group_id === group.id);
    expect(members.map((component) => [component.name, component.status])).toEqual([
      ['up-1', 'operational'],
      ['down-1', 'major_outage'],
    ]);
    expect(group.components).toEqual(members.map((component) => component.id));
    expect(summary.incidents.map((incident) => [incident.id, incident.name, incident.status])).toEqual([
      [String(id), 'Slow', 'monitoring'],
    ]);
    expect(summary.incidents[0]?.incident_updates[0]?.body).toBe('Watching.');
    expect(summary.scheduled_maintenances).toEqual([]);
  });

  it('serves an Atom feed of the incidents of each page', async () => {
    expect(
      (
        await server.request(
          '/api/v1/status-page',
          json('POST', { slug: 'feed', title: 'Feed', groups: [{ name: 'g', checks: ['up-1'] }] }),
        )
      ).status,
    ).toBe(201);
    for (const title of ['First', 'Second']) {
      expect(
        (
          await server.request(
            '/api/v1/incident',
            json('POST', { title, status: 'investigating', message: `${title} & more <b>`, pages: ['feed'] }),
          )
        ).status,
      ).toBe(201);
    }
    const response = await server.request('/status/feed/feed.atom');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/atom+xml; charset=utf-8');
    const xml = await response.text();
    expect(XMLValidator.validate(xml)).toBe(true);
    const feed = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '',
      isArray: (name) => name === 'entry' || name === 'link',
    }).parse(xml).feed as {
      xmlns: string;
      id: string;
      title: string;
      updated: string;
      link: { rel?: string; href: string }[];
      entry: { id: string; title: string; updated: string; content: { '#text': string; type: string } }[];
    };
    expect(feed.xmlns).toBe('http://www.w3.org/2005/Atom');
    expect(feed.title).toBe('Feed');
    expect(Number.isNaN(Date.parse(feed.updated))).toBe(false);
    expect(feed.link.find((link) => link.rel === 'self')?.href).toBe(`${server.url}/status/feed/feed.atom`);
    expect(feed.entry.map((entry) => entry.title)).toEqual(['Second: Investigating', 'First: Investigating']);
    expect(new Set(feed.entry.map((entry) => entry.id)).size).toBe(2);
    expect(feed.entry[0]?.content.type).toBe('html');
    // The entry's HTML (once the XML is read) holds the message as escaped text, not as markup.
    expect(feed.entry[0]?.content['#text']).toContain('Second &amp; more &lt;b&gt;');
  });

  it('escapes hostile names, titles and messages', async () => {
    const created = await server.request(
      '/api/v1/status-page',
      json('POST', {
        slug: 'hostile',
        title: HOSTILE,
        description: HOSTILE,
        groups: [{ name: HOSTILE, checks: [HOSTILE_NAME, 'up-1'] }],
      }),
    );
    expect(created.status, await created.clone().text()).toBe(201);
    expect(
      (
        await server.request(
          '/api/v1/incident',
          json('POST', { title: HOSTILE, status: 'investigating', message: HOSTILE, pages: ['hostile'] }),
        )
      ).status,
    ).toBe(201);
    const { html } = await page(server, 'hostile');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img');
    expect(html.match(/<\/style>/g)).toHaveLength(1);
    expect(html).toContain('&lt;script&gt;window.__xss=1&lt;/script&gt;&quot;&#39;&lt;/style&gt;');
    const { byClass } = dom(html);
    expect(byClass('check').map((check) => check.attribs['data-name'])).toEqual([HOSTILE_NAME, 'up-1']);
    const feed = await (await server.request('/status/hostile/feed.atom')).text();
    expect(XMLValidator.validate(feed)).toBe(true);
    expect(feed).not.toContain('<script>');
  });

  it('re-reads the config pages at SIGHUP, and keeps the API pages and incidents across a restart', async () => {
    server.writeConfig({
      ...config,
      'status-pages': [
        { slug: 'from-config', title: 'Config page, reloaded', groups: [{ name: 'Web', checks: ['up-1'] }] },
      ],
    });
    server.process.kill('SIGHUP');
    await server.waitForLog(/config reloaded/);
    expect(((await (await server.request('/api/v1/status-page/from-config')).json()) as { title: string }).title).toBe(
      'Config page, reloaded',
    );
    expect(
      dom((await page(server, 'from-config')).html)
        .byClass('check')
        .map((check) => check.attribs['data-name']),
    ).toEqual(['up-1']);

    const incidentsBefore = await (await server.request('/api/v1/incident?page=summary')).json();
    await server.stop();
    server = await startServer({ config, dataDir: server.dataDir });
    expect((await server.request('/api/v1/status-page/summary')).status).toBe(200);
    expect(await (await server.request('/api/v1/incident?page=summary')).json()).toEqual(incidentsBefore);
    expect(
      dom((await page(server, 'summary')).html)
        .byClass('incident')
        .map((one) => one.attribs['data-status']),
    ).toEqual(['monitoring']);
  });

  it('caps the incidents and their updates', async () => {
    // The limit of 100 updates per incident (healthchecks.max-incident-updates).
    const created = await server.request(
      '/api/v1/incident',
      json('POST', { title: 'long', status: 'investigating', message: 'm', checks: ['up-1'] }),
    );
    const { id } = ((await created.json()) as { result: { id: number } }).result;
    for (let i = 1; i < 100; i++)
      expect(
        (
          await server.request(
            `/api/v1/incident/${id}/update`,
            json('POST', { status: 'monitoring', message: `m${i}` }),
          )
        ).status,
      ).toBe(201);
    const refused = await server.request(
      `/api/v1/incident/${id}/update`,
      json('POST', { status: 'monitoring', message: 'one more' }),
    );
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toMatch(
      /updates: has 100 updates, the most healthchecks.max-incident-updates allows/,
    );
  });
});

describe('status pages and credentials', () => {
  const basic = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
  let open: TestServer;
  let closed: TestServer;
  beforeAll(async () => {
    const config = (publicFamilies: string[]) => ({
      http: { 'basic-auth': { username: 'ops', password: 'pw' }, public: publicFamilies },
      'heartbeat-checks': [{ name: 'job', interval: '1h' }],
      'status-pages': [{ slug: 'public', title: 'Public', groups: [{ name: 'Jobs', checks: ['job'] }] }],
    });
    [open, closed] = await Promise.all([
      startServer({ config: config(['status-pages']) }),
      startServer({ config: config([]) }),
    ]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([open?.stop(), closed?.stop()]);
  });

  it('serves the page, its feed and summary.json without credentials with http.public: [status-pages], and nothing else', async () => {
    for (const path of ['/status/public', '/status/public/feed.atom', '/status/public/summary.json']) {
      expect((await open.request(path)).status, path).toBe(200);
      expect((await closed.request(path)).status, path).toBe(401);
      expect((await closed.request(path, { headers: basic })).status, path).toBe(200);
    }
    for (const path of ['/api/v1/status-page', '/api/v1/incident', '/api/v1/report/uptime', '/api/v1/result']) {
      expect((await open.request(path)).status, path).toBe(401);
    }
    expect(
      (
        await open.request(
          '/api/v1/incident',
          json('POST', { title: 't', status: 'investigating', message: 'm', pages: ['public'] }),
        )
      ).status,
    ).toBe(401);
  });

  it('records the changes of pages and incidents in the audit log', async () => {
    const created = await closed.request('/api/v1/incident', {
      ...json('POST', { title: 't', status: 'investigating', message: 'm', pages: ['public'] }),
      headers: { ...basic, 'content-type': 'application/json' },
    });
    expect(created.status).toBe(201);
    const { id } = ((await created.json()) as { result: { id: number } }).result;
    const update = {
      ...json('POST', { status: 'resolved', message: 'done' }),
      headers: { ...basic, 'content-type': 'application/json' },
    };
    expect((await closed.request(`/api/v1/incident/${id}/update`, update)).status).toBe(201);
    expect((await closed.request('/api/v1/status-page/public', { method: 'DELETE', headers: basic })).status).toBe(409);
    const audit = (await (await closed.request('/api/v1/audit', { headers: basic })).json()) as {
      result: { method: string; route: string; name: string | null; outcome: number }[];
    };
    expect(audit.result.map((row) => [row.method, row.route, row.name, row.outcome]).reverse()).toEqual([
      ['POST', '/api/v1/incident', null, 201],
      ['POST', '/api/v1/incident/:id/update', String(id), 201],
      ['DELETE', '/api/v1/status-page/:slug', 'public', 409],
    ]);
  });
});

// Statuspage's summary.json (https://developer.statuspage.io, "Summary"), as its public API documents it: every
// field it lists, with its type; a client written for it reads these.
const When = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$' });
const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);
const ComponentStatus = Type.Union(
  ['operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance'].map((value) =>
    Type.Literal(value),
  ),
);
const Component = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: ComponentStatus,
  created_at: When,
  updated_at: When,
  position: Type.Integer(),
  description: Nullable(Type.String()),
  showcase: Type.Boolean(),
  start_date: Nullable(Type.String()),
  group_id: Nullable(Type.String()),
  page_id: Type.String(),
  group: Type.Boolean(),
  only_show_if_degraded: Type.Boolean(),
  components: Type.Optional(Type.Array(Type.String())),
});
const IncidentUpdate = Type.Object({
  id: Type.String(),
  status: Type.String(),
  body: Type.String(),
  incident_id: Type.String(),
  created_at: When,
  updated_at: When,
  display_at: When,
});
const Incident = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: Type.Union(
    ['investigating', 'identified', 'monitoring', 'resolved', 'postmortem'].map((value) => Type.Literal(value)),
  ),
  created_at: When,
  updated_at: When,
  monitoring_at: Nullable(When),
  resolved_at: Nullable(When),
  impact: Type.Union(['none', 'minor', 'major', 'critical'].map((value) => Type.Literal(value))),
  shortlink: Type.String(),
  started_at: When,
  page_id: Type.String(),
  incident_updates: Type.Array(IncidentUpdate),
  components: Type.Array(Component),
});
const StatuspageSummary = Type.Object({
  page: Type.Object({
    id: Type.String(),
    name: Type.String(),
    url: Type.String(),
    time_zone: Type.String(),
    updated_at: When,
  }),
  components: Type.Array(Component),
  incidents: Type.Array(Incident),
  scheduled_maintenances: Type.Array(Type.Unknown()),
  status: Type.Object({
    indicator: Type.Union(['none', 'minor', 'major', 'critical'].map((value) => Type.Literal(value))),
    description: Type.String(),
  }),
});
