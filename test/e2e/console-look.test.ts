/**
 * How the console looks and reads, every view (docs/dashboard.md): light, dark (the system's) and on a 390 px
 * phone, each screenshot into test-artifacts/ (console-<view>-<mode>.png) and checked by axe-core, injected into
 * the page, with no serious or critical violation (the Alerts view with a firing and an acknowledged alert); at 390 px
 * the page is no wider than the screen; failing checks come first, a filter lives in the URL, the heartbeat's view
 * shows where its job reports, and "success" in a history reads as a success.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import axe from 'axe-core';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, type Browser, hasChromium, launchBrowser, signIn } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, type HttpTarget, startHttpTarget } from '../helpers/targets.ts';

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe-core's serious and critical violations of the page as it is. */
async function violations(page: Page): Promise<string[]> {
  // Evaluated through the devtools protocol: the page's Content-Security-Policy does not apply.
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(axe.source);
  // A string: the test's TypeScript has no DOM types, the page's globals are the browser's.
  const found = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((results) => results.violations)",
  )) as Violation[];
  return found
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((node) => JSON.stringify(node.target)).join(', ')}`);
}

const MODES = [
  { mode: 'light', colorScheme: 'light', width: 1400, height: 900 },
  { mode: 'dark', colorScheme: 'dark', width: 1400, height: 900 },
  { mode: 'phone', colorScheme: 'light', width: 390, height: 844 },
] as const;

describe.skipIf(!hasChromium())('the console, looked at', () => {
  let server: TestServer;
  let target: HttpTarget;
  let receiver: HttpTarget;
  let browser: Browser;
  const basic = { authorization: `Basic ${Buffer.from('ops:s3cret').toString('base64')}` };
  const post = (path: string, body: unknown) =>
    server.request(path, {
      method: 'POST',
      headers: { ...basic, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    let closed: number;
    receiver = await startHttpTarget();
    [server, target, closed, browser] = await Promise.all([
      startServer({
        config: {
          http: { 'basic-auth': { username: 'ops', password: 's3cret' } },
          'status-pages': [{ slug: 'public', title: 'Public', groups: [] }],
          // The broken check's alert, for the Alerts view.
          notifiers: { ops: { type: 'webhook', url: `${receiver.origin}/hook`, retries: 0 } },
          alerting: { defaults: { notify: ['ops'] } },
        },
      }),
      startHttpTarget({ handler: (_request, response) => response.end('hello') }),
      closedPort(),
      launchBrowser(),
    ]);
    const base = { interval: '1s', timeout: '1s', 'valid-status': [200] };
    for (const [name, port] of [
      ['web', target.port],
      ['a-broken-api', closed],
      ['b-site', target.port],
    ] as const)
      expect((await post('/api/v1/healthcheck/http', { ...base, name, target: '127.0.0.1', port })).status).toBe(201);
    expect((await post('/api/v1/healthcheck/heartbeat', { name: 'backup', interval: '1h' })).status).toBe(201);
    // A history longer than a phone's width in strip cells (9 px each): the check's page must still fit 390 px.
    for (let i = 0; i < 60; i++)
      expect((await post(`/api/v1/heartbeat/backup${i % 3 === 0 ? '/fail' : ''}`, {})).status).toBe(200);
    expect(
      (
        await post('/api/v1/incident', {
          title: 'Slow API',
          status: 'investigating',
          message: 'On it',
          pages: ['public'],
        })
      ).status,
    ).toBe(201);
    expect(
      (await post('/api/v1/maintenance', { name: 'upgrade', start: '2030-01-01T22:00:00Z', duration: '1h' })).status,
    ).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([server?.kill9(), target?.close(), receiver?.close()]);
  });

  it('every view, light, dark and at 390 px: screenshots, and no serious or critical axe violation', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const watched = await browser.open(`${server.url}/frontend/index.html`);
    const { page } = watched;
    const problems: string[] = [];
    const shoot = async (view: string, mode: string) => {
      await page.screenshot({ path: join(ARTIFACTS, `console-${view}-${mode}.png`), fullPage: true });
      for (const problem of await violations(page)) problems.push(`${view} ${mode}: ${problem}`);
      if (mode === 'phone') {
        const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
        if (width > 390) problems.push(`${view} phone: the page is ${width} px wide`);
      }
    };
    for (const { mode, colorScheme, width, height } of MODES) {
      await page.emulateMedia({ colorScheme });
      await page.setViewportSize({ width, height });
      await page.goto(`${server.url}/frontend/index.html#/checks`);
      if (mode === 'light') {
        await page.locator('form[aria-label="Sign in"]').waitFor();
        await shoot('sign-in', mode);
        await page.fill('input[name="username"]', 'ops');
        await page.fill('input[name="password"]', 's3cret');
        await page.click('form[aria-label="Sign in"] button[type="submit"]');
      }
      await expect.poll(() => page.locator('tr.check.failing').count(), { timeout: 15_000 }).toBe(1);
      await shoot('checks', mode);
      await page.goto(`${server.url}/frontend/index.html#/check/web`);
      await expect.poll(() => page.locator('table.history tbody tr').count(), { timeout: 10_000 }).toBeGreaterThan(0);
      // Over 24 h, each run of the history is a point of the chart, beside the hourly aggregates.
      expect(Number(await page.locator('.chart').getAttribute('data-runs'))).toBeGreaterThan(0);
      await shoot('check', mode);
      await page.goto(`${server.url}/frontend/index.html#/check/backup`);
      await page.locator('.heartbeat-urls').waitFor();
      await shoot('heartbeat', mode);
      await page.goto(`${server.url}/frontend/index.html#/checks/new`);
      await page.locator('[data-field="name"] input').waitFor();
      await page.fill('[data-field="port"] input', '70000');
      await page.fill('[data-field="timeout"] input', 'soon');
      await page.click('button:text-is("Save")');
      await page.locator('.summary').waitFor();
      await shoot('new-check', mode);
      for (const [view, ready] of [
        ['incidents', '.incident'],
        ['maintenance', 'table.maintenance'],
        ['pages', 'table.status-pages'],
        ['tokens', 'form[aria-label="New token"]'],
        ['streams', 'main h2, main p'],
        ['audit', 'table.audit'],
      ] as const) {
        await page.goto(`${server.url}/frontend/index.html#/${view}`);
        await page.locator(ready).first().waitFor();
        await shoot(view, mode);
      }
      // The broken check's alert, firing (its form to acknowledge), then acknowledged with a comment.
      await page.goto(`${server.url}/frontend/index.html#/alerts`);
      await page.locator('li.alert[data-status="firing"]').waitFor({ timeout: 15_000 });
      await shoot('alerts', mode);
      const id = await page.locator('li.alert').getAttribute('data-id');
      expect((await post(`/api/v1/alerts/${id}/ack`, { comment: 'the API is being redeployed' })).status).toBe(200);
      await page.reload();
      await page.locator('li.alert[data-status="acknowledged"]').waitFor();
      await shoot('alerts-acknowledged', mode);
      await page.goto(`${server.url}/frontend/index.html#/check/a-broken-api`);
      await page.locator('.check-alerts li.alert').waitFor({ timeout: 10_000 });
      await shoot('check-alert', mode);
      expect((await post(`/api/v1/alerts/${id}/unack`, {})).status).toBe(200);
    }
    expect(problems).toEqual([]);
    expect(watched.pageErrors).toEqual([]);
  }, 180_000);

  it('the sign-in form, dark and at 390 px: screenshots, and no serious or critical axe violation', async () => {
    // A browser of its own: signed out.
    const signedOut = await launchBrowser();
    try {
      const { page } = await signedOut.open(`${server.url}/frontend/index.html`);
      const problems: string[] = [];
      for (const { mode, colorScheme, width, height } of MODES.filter((each) => each.mode !== 'light')) {
        await page.emulateMedia({ colorScheme });
        await page.setViewportSize({ width, height });
        await page.locator('form[aria-label="Sign in"]').waitFor();
        await page.screenshot({ path: join(ARTIFACTS, `console-sign-in-${mode}.png`), fullPage: true });
        for (const problem of await violations(page)) problems.push(`sign-in ${mode}: ${problem}`);
      }
      expect(problems).toEqual([]);
    } finally {
      await signedOut.close();
    }
  }, 60_000);

  it("keeps the theme chosen with the toggle over the system's, and opens with a skip link to the keyboard", async () => {
    const { page } = await browser.open(`${server.url}/frontend/index.html#/checks`);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.locator('tr.check').first().waitFor({ timeout: 10_000 });
    const theme = () => page.evaluate('document.documentElement.dataset.theme ?? ""');
    expect(await theme()).toBe('');
    await page.click('button:text-is("Dark mode")');
    await expect.poll(theme).toBe('dark');
    await page.reload();
    await page.locator('tr.check').first().waitFor({ timeout: 10_000 });
    expect(await theme()).toBe('dark');
    expect(await page.locator('button.theme').textContent()).toBe('Light mode');
    await page.click('button:text-is("Light mode")');
    await expect.poll(theme).toBe('light');
    await page.reload();
    await page.locator('tr.check').first().waitFor({ timeout: 10_000 });
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to the content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate('document.activeElement.id')).toBe('main');
  }, 60_000);

  it("draws the response-time chart's axes in the theme's colours: light text on a dark page", async () => {
    // A browser of its own: the system's theme, dark.
    const own = await launchBrowser();
    try {
      const { page } = await own.open(`${server.url}/frontend/index.html#/check/web`);
      await page.emulateMedia({ colorScheme: 'dark' });
      await signIn(page, { username: 'ops', password: 's3cret' });
      await page.locator('.chart canvas').waitFor({ timeout: 10_000 });
      // The axes' labels are the only light pixels the chart draws (its series are blue, green, red, purple).
      const lightPixels = () =>
        page.evaluate(`(() => {
        const canvas = document.querySelector('.chart canvas');
        const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
        let light = 0;
        for (let i = 0; i < data.length; i += 4)
          if (data[i + 3] > 200 && data[i] > 200 && data[i + 1] > 200 && data[i + 2] > 200) light++;
        return light;
      })()`);
      await expect.poll(lightPixels, { timeout: 10_000 }).toBeGreaterThan(50);
    } finally {
      await own.close();
    }
  }, 60_000);

  it('lists failing checks first, keeps a filter in the URL, and shows a successful run as one', async () => {
    const watched = await browser.open(`${server.url}/frontend/index.html#/checks?state=failing`);
    const { page } = watched;
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1400, height: 900 });
    // Signed in already: the browser holds the session of the test above.
    await expect.poll(() => page.locator('tr.check').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.locator('select[name="state"]').inputValue()).toBe('failing');
    await page.selectOption('select[name="state"]', 'all');
    await expect.poll(() => page.evaluate('location.hash')).toBe('#/checks');
    await expect.poll(() => page.locator('tr.check').count()).toBe(4);
    expect(await page.locator('tr.check').first().getAttribute('data-name')).toBe('a-broken-api');
    await page.fill('input[name="name"]', 'site');
    await expect.poll(() => page.evaluate('location.hash')).toBe('#/checks?name=site');
    await page.goto(`${server.url}/frontend/index.html#/check/web`);
    const message = page.locator('table.history tbody tr.ok .message-cell').first();
    await message.waitFor();
    const color = (await page.evaluate(
      "getComputedStyle(document.querySelector('table.history tbody tr.ok .message-cell')).color",
    )) as string;
    const red = (await page.evaluate(
      "(() => { const probe = document.createElement('span'); probe.style.color = 'var(--failing)'; document.body.append(probe); return getComputedStyle(probe).color; })()",
    )) as string;
    expect(color).not.toBe(red);
  }, 60_000);
});
