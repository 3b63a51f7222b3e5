/**
 * The dashboard in a real browser (chromium through playwright-core) against the real server, with checks that
 * succeed and fail against local targets and a stream fed with events: what a person sees on each view, that
 * hostile names, labels, messages and event fields show as text and run nothing, the Content-Security-Policy,
 * basic auth, `disable-result-api`, and 12,000 checks within a second. Screenshots land in test-artifacts/.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { type Browser, hasChromium, launchBrowser, type WatchedPage } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, type HttpTarget, startHttpTarget, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { quietFor } from '../helpers/wait.ts';

const HOSTILE_NAME = '<img src=x onerror=window.__xss=1>';
const HOSTILE_DESCRIPTION = '<script>window.__xss=2</script>';
const HOSTILE_LABEL = { '<b>team</b>': '<img src=x onerror=alert(3)>' };
const HOSTILE_BODY = '<img src=x onerror=alert(4)><script>window.__xss=5</script>';
const HOSTILE_HOST = '<img src=x onerror=alert(6)>';
const HOSTILE_EVENT_DESCRIPTION = '<script>alert(7)</script>';

const json = (method: string, body: unknown): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** Nothing injected became markup, and no script ran: no dialog, no page error, no global set, no CSP report. */
async function expectNothingRan(watched: WatchedPage): Promise<void> {
  const { page } = watched;
  expect(await page.locator('img[src="x"]').count()).toBe(0);
  expect(await page.locator('main script, main b, main i').count()).toBe(0);
  expect(await page.evaluate(() => (globalThis as unknown as { __xss?: unknown }).__xss)).toBeUndefined();
  expect(watched.dialogs).toEqual([]);
  expect(watched.pageErrors).toEqual([]);
  expect(watched.cspViolations).toEqual([]);
}

describe.skipIf(!hasChromium())('dashboard', () => {
  let server: TestServer;
  let http: HttpTarget;
  let tcp: TcpTarget;
  let browser: Browser;

  beforeAll(async () => {
    let closed: number;
    [server, http, tcp, closed, browser] = await Promise.all([
      startServer(),
      startHttpTarget({
        handler: (request, response) => {
          if (request.url === '/hostile') return response.end(HOSTILE_BODY);
          response.end('hello world');
        },
      }),
      startTcpTarget(),
      closedPort(),
      launchBrowser(),
    ]);
    const base = { interval: '1s', timeout: '1s' };
    const created = await server.request(
      '/api/v1/healthcheck/bulk',
      json('POST', {
        'http-checks': [
          {
            ...base,
            name: 'web-ok',
            description: 'public site',
            target: '127.0.0.1',
            port: http.port,
            path: '/',
            'valid-status': [200],
            labels: { env: 'prod', team: 'web' },
          },
          {
            ...base,
            name: 'web-hostile',
            target: '127.0.0.1',
            port: http.port,
            path: '/hostile',
            'valid-status': [200],
            'body-regexp': ['^healthy'],
            labels: { env: 'prod' },
          },
        ],
        'tcp-checks': [
          { ...base, name: 'db-tcp', target: '127.0.0.1', port: tcp.port, labels: { env: 'staging' } },
          { ...base, name: 'db-down', target: '127.0.0.1', port: closed },
          {
            ...base,
            name: HOSTILE_NAME,
            description: HOSTILE_DESCRIPTION,
            target: '127.0.0.1',
            port: tcp.port,
            labels: HOSTILE_LABEL,
          },
        ],
      }),
    );
    expect(created.status, await created.text()).toBe(201);
    // Three runs each, so that the strips have several cells.
    await vi.waitFor(
      async () => {
        const recent = await server.request(
          '/api/v1/overview/recent-results',
          json('POST', { names: ['web-ok', 'web-hostile', 'db-tcp', 'db-down', HOSTILE_NAME], limit: 5 }),
        );
        const { result } = (await recent.json()) as { result: Record<string, unknown[]> };
        expect(Object.values(result).map((entries) => entries.length >= 3)).toEqual([true, true, true, true, true]);
      },
      { timeout: 15_000, interval: 250 },
    );
  }, 60_000);

  afterAll(async () => {
    await Promise.all([browser?.close(), server?.kill9(), http?.close(), tcp?.close()]);
  });

  it('redirects / to /frontend/index.html and serves it with a CSP allowing no inline script', async () => {
    const root = await server.request('/', { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/frontend/index.html');
    expect((await server.request('/frontend/', { redirect: 'manual' })).headers.get('location')).toBe(
      '/frontend/index.html',
    );
    const page = await server.request('/frontend/index.html');
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script>/);
    expect((await server.request('/frontend/nope.js')).status).toBe(404);
  });

  it('lists every check with its state, kind, source, labels, last run, duration, uptime and recent results', async () => {
    const watched = await browser.open(`${server.url}/`);
    const { page } = watched;
    expect(page.url()).toBe(`${server.url}/frontend/index.html`);
    await expect.poll(() => page.locator('tr.check').count()).toBe(5);
    expect(await page.locator('[data-count="ok"] strong').textContent()).toBe('3');
    expect(await page.locator('[data-count="failing"] strong').textContent()).toBe('2');

    const row = (name: string) => page.locator(`tr.check[data-name="${name}"]`);
    const ok = row('web-ok');
    expect(await ok.locator('.badge').textContent()).toBe('ok');
    expect(await ok.locator('td').nth(2).textContent()).toBe('http');
    expect(await ok.locator('td').nth(3).textContent()).toBe('api');
    expect(await ok.locator('.label').allTextContents()).toEqual(['env=prod', 'team=web']);
    expect(await ok.locator('.description').textContent()).toBe('public site');
    expect(await ok.locator('td').nth(5).textContent()).toMatch(/^\d+ s ago$/);
    expect(await ok.locator('td').nth(6).textContent()).toMatch(/^\d+(\.\d)? ms$/);
    expect(await ok.locator('.uptime[data-window="24h"]').textContent()).toBe('100 %');
    expect(await ok.locator('.uptime[data-window="30d"]').textContent()).toBe('100 %');

    // Beside the latest result, the check's state (docs/checks.md "States").
    expect(await ok.locator('.check-state').textContent()).toBe('up');
    const down = row('db-down');
    expect(await down.locator('.badge').textContent()).toBe('failing');
    await expect.poll(() => down.locator('.check-state').textContent(), { timeout: 10_000 }).toBe('down');
    expect(await down.locator('.message').textContent()).toMatch(/connect|refused/i);
    expect(await down.locator('.uptime[data-window="24h"]').textContent()).toBe('0 %');
    expect(await down.locator('.uptime[data-window="7d"]').textContent()).toBe('0 %');

    // The strip: a cell per recent run, coloured by outcome, newest on the right, its title telling the run.
    await expect.poll(() => ok.locator('.strip .cell.ok').count()).toBeGreaterThanOrEqual(3);
    expect(await ok.locator('.strip .cell.failing').count()).toBe(0);
    expect(await down.locator('.strip .cell.failing').count()).toBeGreaterThanOrEqual(3);
    const titles = await down
      .locator('.strip .cell')
      .evaluateAll((cells) => cells.map((cell) => cell.getAttribute('title') ?? ''));
    expect(titles.at(-1)).toMatch(/ · \d+(\.\d)? ms · .*(connect|refused)/i);
    const times = titles.map((title) => Date.parse(title.split(' · ')[0] as string) || 0);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    await watched.screenshot('checks');

    // Live: a new run shows up in the strip without a reload.
    const newest = () => ok.locator('.strip .cell').last().getAttribute('title');
    const first = await newest();
    await expect.poll(newest, { timeout: 12_000 }).not.toBe(first);

    // Filters.
    const names = () => page.locator('tr.check').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-name')));
    await page.fill('input[name="name"]', 'db-');
    expect(await names()).toEqual(['db-down', 'db-tcp']);
    await page.fill('input[name="name"]', '');
    await page.selectOption('select[name="state"]', 'failing');
    expect(await names()).toEqual(['db-down', 'web-hostile']);
    await page.selectOption('select[name="state"]', 'all');
    await page.selectOption('select[name="kind"]', 'http');
    expect(await names()).toEqual(['web-hostile', 'web-ok']);
    await page.selectOption('select[name="kind"]', '');
    await page.fill('input[name="label"]', 'env=prod');
    expect(await names()).toEqual(['web-hostile', 'web-ok']);
    await page.fill('input[name="label"]', 'env=staging');
    expect(await names()).toEqual(['db-tcp']);
    await page.fill('input[name="label"]', '');
    await page.selectOption('select[name="source"]', 'api');
    expect(await names()).toHaveLength(5);
    await page.click('[data-count="ok"]');
    expect(new Set(await names())).toEqual(new Set(['db-tcp', HOSTILE_NAME, 'web-ok']));
    expect(await page.locator('tr.check .badge').allTextContents()).toEqual(['ok', 'ok', 'ok']);
    await expectNothingRan(watched);
    await page.close();
  });

  it('shows no Node column and no Cluster link on a single node, and never asks for the members (no 404 in the console)', async () => {
    const page = await browser.context.newPage();
    const requested: string[] = [];
    const consoleErrors: string[] = [];
    page.on('request', (request) => requested.push(new URL(request.url()).pathname));
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    await page.goto(`${server.url}/frontend/index.html#/checks`);
    await expect.poll(() => page.locator('table.checks tbody tr').count()).toBeGreaterThan(0);
    expect(await page.locator('table.checks thead th:text-is("Node")').count()).toBe(0);
    expect(await page.locator('nav a:text-is("Cluster")').count()).toBe(0);
    // Typed by hand, the Cluster view says so without asking either.
    await page.goto(`${server.url}/frontend/index.html#/cluster`);
    await expect.poll(() => page.locator('main').textContent()).toContain('This node runs alone');
    await page.goto(`${server.url}/frontend/index.html#/streams`);
    await expect.poll(() => requested.filter((path) => path === '/api/v1/overview/streams').length).toBeGreaterThan(0);
    expect(requested.filter((path) => path.startsWith('/api/v1/cluster'))).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it("shows a check's definition, uptime, response-time chart over 24 h / 7 d / 30 d and its history", async () => {
    const watched = await browser.open(`${server.url}/frontend/index.html`);
    const { page } = watched;
    await page.click('tr.check[data-name="web-ok"] a');
    await expect.poll(() => page.locator('.check-name').textContent()).toBe('web-ok');
    await expect.poll(() => page.locator('.uptime-box[data-window="24h"] strong').textContent()).toBe('100 %');
    await expect.poll(() => page.locator('pre.definition').textContent()).toContain(`"port": ${http.port}`);
    expect(await page.locator('pre.definition').textContent()).toContain('"description": "public site"');
    await expect.poll(() => page.locator('table.history tbody tr').count()).toBeGreaterThanOrEqual(3);
    expect(await page.locator('table.history tbody tr .badge').first().textContent()).toBe('ok');
    for (const window of ['24h', '7d', '30d']) {
      await page.click(`.windows button:text-is("${window}")`);
      await expect.poll(() => page.locator('.chart canvas').count()).toBe(1);
      expect(await page.locator('.chart').getAttribute('data-points')).toBe('1');
      expect(await page.locator('.u-legend').textContent()).toContain('mean');
    }
    await page.click('.windows button:text-is("24h")');
    await page.locator('.chart canvas').waitFor();
    await watched.screenshot('check');

    await page.goto(`${server.url}/frontend/index.html#/check/db-down`);
    await expect.poll(() => page.locator('.latest .message').textContent()).toMatch(/connect|refused/i);
    // Its state, and the changes that made it, with the first failure's message.
    await expect.poll(() => page.locator('.state-line .check-state').textContent()).toBe('down');
    await expect
      .poll(() => page.locator('table.state-changes tbody tr').first().textContent())
      .toMatch(/^.+pendingdown.*(connect|refused)/i);
    // The uptime ratios come from a request of their own, which may answer after the latest result.
    await expect.poll(() => page.locator('.uptime-box[data-window="7d"] strong').textContent()).toBe('0 %');
    await expect.poll(() => page.locator('table.history tbody tr.failing').count()).toBeGreaterThanOrEqual(3);
    await expectNothingRan(watched);
    await page.close();
  });

  it('shows results in a maintenance window apart: their own colour in the strips, a mark in the list, a banner on the check page', async () => {
    const window = {
      name: 'db-work',
      start: new Date(Date.now() - 1000).toISOString(),
      duration: '10m',
      checks: ['db-tcp'],
    };
    expect((await server.request('/api/v1/maintenance', json('POST', window))).status).toBe(201);
    try {
      const watched = await browser.open(`${server.url}/frontend/index.html#/check/db-tcp`);
      const { page } = watched;
      await expect
        .poll(() => page.locator('.maintenance-banner').textContent(), { timeout: 10_000 })
        .toContain('In maintenance');
      await expect
        .poll(() => page.locator('.strip .cell.maintenance').count(), { timeout: 10_000 })
        .toBeGreaterThanOrEqual(1);
      expect(await page.locator('table.history tbody tr .badge.maintenance').first().textContent()).toBe('maintenance');
      // The colour differs from a plain success.
      const background = (selector: string) =>
        page
          .locator(selector)
          .first()
          .evaluate(
            (element) =>
              (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(
                element,
              ).backgroundColor,
          );
      expect(await background('.strip .cell.maintenance')).not.toBe(
        await background('.strip .cell.ok:not(.maintenance)'),
      );
      await watched.screenshot('check-maintenance');
      await page.goto(`${server.url}/frontend/index.html#/checks`);
      await expect
        .poll(() => page.locator('tr.check[data-name="db-tcp"] .badge.maintenance').count(), { timeout: 10_000 })
        .toBe(1);
      expect(await page.locator('tr.check[data-name="web-ok"] .badge.maintenance').count()).toBe(0);
      await page.goto(`${server.url}/frontend/index.html#/check/web-ok`);
      await expect.poll(() => page.locator('.check-name').textContent()).toBe('web-ok');
      await expect.poll(() => page.locator('table.history tbody tr').count()).toBeGreaterThanOrEqual(1);
      expect(await page.locator('.maintenance-banner').count()).toBe(0);
      await expectNothingRan(watched);
      await page.close();
    } finally {
      await server.request('/api/v1/maintenance/db-work', { method: 'DELETE' });
    }
  });

  it('lists the open incidents above the checks, as text, and no longer once resolved', async () => {
    const created = await server.request(
      '/api/v1/incident',
      json('POST', { title: HOSTILE_DESCRIPTION, status: 'identified', message: HOSTILE_BODY, checks: ['db-down'] }),
    );
    expect(created.status).toBe(201);
    const { id } = ((await created.json()) as { result: { id: number } }).result;
    try {
      const watched = await browser.open(`${server.url}/frontend/index.html`);
      const { page } = watched;
      const incident = page.locator('section.incidents li');
      await expect.poll(() => incident.count(), { timeout: 10_000 }).toBe(1);
      expect(await incident.locator('strong').textContent()).toBe(HOSTILE_DESCRIPTION);
      expect(await incident.textContent()).toContain(HOSTILE_BODY);
      expect(await incident.locator('.incident-status').textContent()).toBe('identified');
      // It names no status page: internal, and the dashboard says so.
      expect(await incident.locator('.incident-internal').textContent()).toBe('internal');
      await expectNothingRan(watched);
      expect(
        (await server.request(`/api/v1/incident/${id}/update`, json('POST', { status: 'resolved', message: 'fixed' })))
          .status,
      ).toBe(201);
      await page.reload();
      await expect.poll(() => page.locator('tr.check').count()).toBeGreaterThan(0);
      expect(await page.locator('section.incidents').count()).toBe(0);
      await page.close();
    } finally {
      await server.request(`/api/v1/incident/${id}`, { method: 'DELETE' });
    }
  });

  it('renders hostile names, descriptions, labels and messages as text and runs nothing', async () => {
    const watched = await browser.open(`${server.url}/frontend/index.html`);
    const { page } = watched;
    const row = page.locator('tr.check', { has: page.locator('td.name a', { hasText: 'onerror=window.__xss=1' }) });
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator('td.name a').textContent()).toBe(HOSTILE_NAME);
    expect(await row.locator('.description').textContent()).toBe(HOSTILE_DESCRIPTION);
    expect(await row.locator('.label').textContent()).toBe('<b>team</b>=<img src=x onerror=alert(3)>');
    const hostileMessage = page.locator('tr.check[data-name="web-hostile"] .message');
    expect(await hostileMessage.textContent()).toBe(`healthcheck body does not match regex ^healthy: ${HOSTILE_BODY}`);
    await watched.screenshot('hostile');

    await row.locator('td.name a').click();
    await expect.poll(() => page.locator('.check-name').textContent()).toBe(HOSTILE_NAME);
    await expect.poll(() => page.locator('pre.definition').textContent()).toContain('onerror=window.__xss=1');
    await page.goto(`${server.url}/frontend/index.html#/check/web-hostile`);
    await expect
      .poll(() => page.locator('table.history tbody tr .message-cell').first().textContent())
      .toContain(HOSTILE_BODY);
    await expectNothingRan(watched);
    await page.close();
  });

  describe('streams', () => {
    beforeAll(async () => {
      const add = await server.request(
        '/api/v1/stream/dash.by-host',
        json('POST', {
          config: b64(
            '{:actions {:action :sdo :children [{:action :index :params [[:host]]}]} :description "indexed by host"}',
          ),
        }),
      );
      expect(add.status, await add.text()).toBe(200);
      const now = Date.now() * 1e6;
      const push = await server.request(
        '/api/v1/stream/dash.by-host',
        json('PUT', {
          events: [
            { host: 'web-1', service: 'http', state: 'ok', metric: 12.5, time: now },
            { host: 'web-2', service: 'http', state: 'critical', metric: 900, time: now },
            {
              host: HOSTILE_HOST,
              service: 'x',
              description: HOSTILE_EVENT_DESCRIPTION,
              '<i>field</i>': '<b>value</b>',
              time: now,
            },
          ],
        }),
      );
      expect(push.status, await push.text()).toBe(200);
    });

    it('lists the streams with source, config, counters, index size and current time, and searches an index live', async () => {
      const watched = await browser.open(`${server.url}/frontend/index.html#/streams`);
      const { page } = watched;
      const feeds: string[] = [];
      const frames: string[] = [];
      page.on('websocket', (socket) => {
        feeds.push(socket.url());
        socket.on('framereceived', ({ payload }) => frames.push(payload.toString()));
      });
      const row = page.locator('tr.stream[data-name="dash.by-host"]');
      await expect.poll(() => row.count()).toBe(1);
      expect(await row.locator('td').nth(1).textContent()).toBe('API');
      expect(await row.locator('.index-size').textContent()).toBe('3');
      expect(await row.locator('td').nth(3).textContent()).toBe('3');
      expect(await row.locator('td').nth(4).textContent()).toBe('0');
      expect(await row.locator('td').nth(6).textContent()).not.toBe('–');
      expect(await row.locator('.description').textContent()).toBe('indexed by host');
      // events/s needs two samples: it appears after the second poll.
      await expect.poll(() => row.locator('.rate').textContent(), { timeout: 6000 }).toMatch(/^\d+\.\d$/);
      await row.locator('button.link').click();
      expect(await page.locator('pre.config').textContent()).toContain(':action :index');

      await page.fill('input[name="query"]', '[:= :host "web-2"]');
      await page.click('.search button[type="submit"]');
      await expect.poll(() => page.locator('table.events tbody tr').count()).toBe(1);
      expect(await page.locator('table.events tbody').textContent()).toContain('critical');
      expect(await page.locator('.matches').textContent()).toBe('1 event');

      await page.fill('input[name="query"]', '[:= :host "web-2"');
      await page.click('.search button[type="submit"]');
      await expect.poll(() => page.locator('.query-error').textContent()).toMatch(/^Invalid query: /);
      expect(await page.locator('table.events').count()).toBe(0);
      await watched.screenshot('streams-error');

      await page.fill('input[name="query"]', '[:always-true]');
      await page.click('.search button[type="submit"]');
      await expect.poll(() => page.locator('table.events tbody tr').count()).toBe(3);
      expect(await page.locator('.query-error').count()).toBe(0);
      // The hostile event shows as text.
      const cells = await page.locator('table.events').textContent();
      expect(cells).toContain(HOSTILE_HOST);
      expect(cells).toContain(HOSTILE_EVENT_DESCRIPTION);
      expect(await page.locator('table.events thead').textContent()).toContain('<i>field</i>');
      expect(cells).toContain('<b>value</b>');

      // Live: the page subscribed to the index feed (same origin, allowed by connect-src 'self'), so a new event
      // shows up without touching the page and without polling (with the feed open, the page only resyncs
      // every 30 s): the frame the feed pushed is what made it search again.
      await expect.poll(() => page.locator('.feed').getAttribute('data-mode')).toBe('websocket');
      expect(await page.locator('.feed').textContent()).toBe('pushed (websocket)');
      expect(feeds.at(-1)).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/index\?stream=dash\.by-host&query=/);
      const searches: string[] = [];
      page.on('request', (request) => {
        if (request.url().endsWith('/api/v1/index/dash.by-host/search')) searches.push(request.url());
      });
      // Once open, the page searches once more (events indexed before it subscribed); then nothing.
      await quietFor(500, 'lets the one search asked for at the opening land (it may have gone before the listener)');
      searches.length = 0;
      await quietFor(2500, 'proves the page does not poll: without its feed it would search every 2 s');
      expect(searches, 'no search while the index is quiet').toEqual([]);
      await server.request(
        '/api/v1/stream/dash.by-host',
        json('PUT', { events: [{ host: 'web-3', service: 'http', state: 'ok', time: Date.now() * 1e6 }] }),
      );
      await expect.poll(() => page.locator('table.events tbody tr').count(), { timeout: 1900 }).toBe(4);
      expect(await page.locator('table.events tbody').textContent()).toContain('web-3');
      expect(frames.some((frame) => frame.includes('"host":"web-3"'))).toBe(true);
      expect(searches.length).toBeGreaterThanOrEqual(1);
      await expect.poll(() => row.locator('.index-size').textContent(), { timeout: 6000 }).toBe('4');
      await watched.screenshot('streams');
      await expectNothingRan(watched);
      await page.close();
    });
  });
});

/** Opens the streams view on `stream` and searches its index for every event; the page is left on it. */
async function searchEverything(page: Page, base: string, stream: string): Promise<void> {
  await page.goto(`${base}/frontend/index.html#/streams`);
  await page.locator(`tr.stream[data-name="${stream}"] button.link`).click();
  await page.fill('input[name="query"]', '[:always-true]');
  await page.click('.search button[type="submit"]');
}

describe.skipIf(!hasChromium())(
  'dashboard behind basic auth, without the result API, and without the index feed',
  () => {
    let server: TestServer;
    let disabled: TestServer;
    let oneSocket: TestServer;
    const authorization = `Basic ${Buffer.from('ops:s3cret').toString('base64')}`;
    const stream = '{:actions {:action :index :params [[:host]]}}';
    const event = (host: string) => ({ events: [{ host, service: 'http', state: 'ok', time: Date.now() * 1e6 }] });

    beforeAll(async () => {
      [server, disabled, oneSocket] = await Promise.all([
        startServer({ config: { http: { 'basic-auth': { username: 'ops', password: 's3cret' } } } }),
        startServer({ config: { http: { 'disable-result-api': true } } }),
        startServer({ config: { streams: { websocket: { 'max-connections': 1 } } } }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([server?.kill9(), disabled?.kill9(), oneSocket?.kill9()]);
    });

    it('shows its sign-in form without credentials, and the page once signed in through it', async () => {
      // The page's own files hold no data: they load without credentials, so that the page can ask for them.
      for (const path of ['/frontend/index.html', '/frontend/app.js'])
        expect((await server.request(path)).status, path).toBe(200);
      expect((await server.request('/api/v1/overview/healthchecks')).status).toBe(401);
      const browser = await launchBrowser();
      try {
        const watched = await browser.open(`${server.url}/frontend/index.html`);
        const form = watched.page.locator('form[aria-label="Sign in"]');
        await form.waitFor();
        // Nothing of the data before the sign-in.
        expect(await watched.page.locator('tr.check, header nav').count()).toBe(0);
        await form.locator('input[name="username"]').fill('ops');
        await form.locator('input[name="password"]').fill('s3cret');
        await form.locator('button[type="submit"]').click();
        await expect.poll(() => watched.page.locator('.first-check h2').textContent()).toBe('No check yet');
        await watched.page.click('header a:text-is("Streams")');
        await expect.poll(() => watched.page.locator('main').textContent()).toContain('No streams.');

        // The index feed's upgrade request needs the credentials too: the session's cookie, with a same-origin
        // Origin. Either the search is pushed, or the page gives the websocket up within 5 s and polls. Both keep
        // the results live.
        const auth = { authorization, 'content-type': 'application/json' };
        expect(
          (
            await server.request('/api/v1/stream/guarded', {
              method: 'POST',
              headers: auth,
              body: JSON.stringify({ config: b64(stream) }),
            })
          ).status,
        ).toBe(200);
        expect(
          (
            await server.request('/api/v1/stream/guarded', {
              method: 'PUT',
              headers: auth,
              body: JSON.stringify(event('web-1')),
            })
          ).status,
        ).toBe(200);
        const { page } = watched;
        await searchEverything(page, server.url, 'guarded');
        await expect.poll(() => page.locator('table.events tbody tr').count()).toBe(1);
        await expect
          .poll(() => page.locator('.feed').getAttribute('data-mode'), { timeout: 8000 })
          .toMatch(/^(websocket|polling)$/);
        const mode = await page.locator('.feed').getAttribute('data-mode');
        console.log(`index search behind basic auth: ${mode} (${await page.locator('.feed').getAttribute('title')})`);
        await server.request('/api/v1/stream/guarded', {
          method: 'PUT',
          headers: auth,
          body: JSON.stringify(event('web-2')),
        });
        await expect
          .poll(() => page.locator('table.events tbody tr').count(), { timeout: mode === 'websocket' ? 1900 : 6000 })
          .toBe(2);
        // The stream's creation above, with the same credentials, is in the audit log (the pushes are not changes).
        await page.click('header a:text-is("Audit")');
        // The sign-in is there too, below it.
        const rows = page.locator('table.audit tbody tr');
        await expect.poll(() => rows.count()).toBe(2);
        expect(await rows.first().textContent()).toMatch(/basic:ops.*POST.*\/api\/v1\/stream\/:name.*guarded.*200/);
        expect(await rows.nth(1).textContent()).toMatch(/basic:ops.*POST.*\/api\/v1\/session/);
        expect(watched.pageErrors).toEqual([]);
        expect(watched.cspViolations).toEqual([]);
      } finally {
        await browser.close();
      }
    }, 60_000);

    // These launch browsers of their own, which takes seconds on a loaded machine.
    it('falls back to polling the search when the index feed refuses the websocket', async () => {
      expect((await oneSocket.request('/api/v1/stream/busy', json('POST', { config: b64(stream) }))).status).toBe(200);
      expect((await oneSocket.request('/api/v1/stream/busy', json('PUT', event('web-1')))).status).toBe(200);
      // Another subscriber holds the only websocket the server allows (streams.websocket.max-connections: 1).
      const holder = new WebSocket(`${oneSocket.url.replace(/^http/, 'ws')}/index?stream=busy`);
      await new Promise((resolve, reject) => holder.once('open', resolve).once('error', reject));
      const browser = await launchBrowser();
      try {
        const watched = await browser.open(`${oneSocket.url}/frontend/index.html`);
        const { page } = watched;
        await searchEverything(page, oneSocket.url, 'busy');
        await expect.poll(() => page.locator('.feed').getAttribute('data-mode')).toBe('polling');
        expect(await page.locator('.feed').textContent()).toBe('polled every 2 s');
        expect(await page.locator('.feed').getAttribute('title')).toMatch(/^Too many websocket connections/);
        await oneSocket.request('/api/v1/stream/busy', json('PUT', event('web-2')));
        await expect.poll(() => page.locator('table.events tbody tr').count(), { timeout: 6000 }).toBe(2);
        expect(watched.pageErrors).toEqual([]);
      } finally {
        holder.close();
        await browser.close();
      }
    }, 60_000);

    it('removes the page and its endpoints with disable-result-api', async () => {
      for (const path of [
        '/',
        '/frontend',
        '/frontend/index.html',
        '/frontend/app.js',
        '/api/v1/overview/healthchecks',
      ]) {
        expect((await disabled.request(path, { redirect: 'manual' })).status, path).toBe(404);
      }
    });
  },
);
