/**
 * Alerts in the console (docs/dashboard.md, "Alerts"), in a real browser against the real server: a TCP check on a
 * closed local port fires at its first failure and repeats every second to a local webhook receiver; signed in, the
 * Alerts view lists it firing, acknowledges it with a comment (the API then lists it acknowledged with that
 * comment, and the repeats stop), shows a refused acknowledgement's error, unacknowledges it, keeps its state
 * filter in the URL; the check's page shows its firing alert with a button; a `read` session sees no button.
 */
import { createHash } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { about, told } from '../helpers/alerts.ts';
import { type Browser, hasChromium, launchBrowser, signIn, type WatchedPage } from '../helpers/browser.ts';
import { afterRuns } from '../helpers/runs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, type HttpTarget, startHttpTarget } from '../helpers/targets.ts';

const READER = 'reader-secret-0123456789';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

interface Listed {
  id: string;
  check: string;
  status: string;
  acknowledged?: { by: string; comment: string };
}

describe.skipIf(!hasChromium())('alerts in the console', () => {
  let server: TestServer;
  let receiver: HttpTarget;
  let browser: Browser;
  let watched: WatchedPage;
  const basic = { authorization: `Basic ${Buffer.from('ops:s3cret').toString('base64')}` };
  const listed = async (state?: string) =>
    (
      (await (
        await server.request(`/api/v1/alerts${state === undefined ? '' : `?state=${state}`}`, { headers: basic })
      ).json()) as { result: Listed[] }
    ).result;
  const row = (page: Page) => page.locator('li.alert[data-check="db"]');

  beforeAll(async () => {
    let closed: number;
    [receiver, closed, browser] = await Promise.all([startHttpTarget(), closedPort(), launchBrowser()]);
    server = await startServer({
      config: {
        http: {
          'basic-auth': { username: 'ops', password: 's3cret' },
          tokens: [{ name: 'reader', sha256: sha256(READER), scopes: ['read'] }],
        },
        healthchecks: { 'start-tick': '100ms' },
        notifiers: { ops: { type: 'webhook', url: `${receiver.origin}/hook`, retries: 0 } },
        alerting: { defaults: { notify: ['ops'] } },
        'tcp-checks': [
          {
            name: 'db',
            target: '127.0.0.1',
            port: closed,
            timeout: '500ms',
            interval: '1s',
            'failure-threshold': 1,
            alerts: { 'repeat-interval': '1s' },
          },
        ],
      },
    });
    watched = await browser.open(`${server.url}/frontend/index.html#/alerts`);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([server?.kill9(), receiver?.close()]);
  });

  it('lists the firing alert, acknowledges it with a comment, and its repeats stop', async () => {
    const { page } = watched;
    await signIn(page, { username: 'ops', password: 's3cret' });
    await expect.poll(() => row(page).getAttribute('data-status'), { timeout: 15_000 }).toBe('firing');
    expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Alerts');
    expect(await row(page).textContent()).toMatch(/notifications sent/i);
    // It repeats while firing.
    await expect.poll(() => about(told(receiver), 'db', 'firing').length, { timeout: 15_000 }).toBeGreaterThan(1);
    // A comment over the API's 1,024 bytes: refused, the error shown, nothing acknowledged.
    await row(page).locator('input[name="comment"]').fill('é'.repeat(600));
    await row(page).locator('button:text-is("Acknowledge")').click();
    await expect.poll(() => row(page).locator('[role="alert"]').textContent()).toMatch(/comment/i);
    expect((await listed('acknowledged')).length).toBe(0);
    await row(page).locator('input[name="comment"]').fill('looking at the disk');
    await row(page).locator('button:text-is("Acknowledge")').click();
    await expect.poll(() => row(page).getAttribute('data-status')).toBe('acknowledged');
    expect(await row(page).textContent()).toMatch(/basic:ops/);
    expect(await row(page).textContent()).toMatch(/looking at the disk/);
    const acknowledged = await listed('acknowledged');
    expect(acknowledged).toMatchObject([
      { check: 'db', acknowledged: { by: 'basic:ops', comment: 'looking at the disk' } },
    ]);
    // A repeat may have been on its way as the button was pressed; after that, none in three runs (three repeat
    // intervals).
    await afterRuns(server, 'db', 1, { headers: basic });
    const before = about(told(receiver), 'db', 'firing').length;
    await afterRuns(server, 'db', 3, { headers: basic });
    expect(about(told(receiver), 'db', 'firing').length).toBe(before);
    expect(watched.pageErrors).toEqual([]);
  }, 60_000);

  it('keeps the state filter in the URL, and unacknowledges', async () => {
    const { page } = watched;
    await page.selectOption('main select[name="state"]', 'firing');
    await expect.poll(() => page.evaluate('location.hash')).toBe('#/alerts?state=firing');
    await expect.poll(() => row(page).count()).toBe(0);
    await page.reload();
    await expect.poll(() => page.locator('main select[name="state"]').inputValue()).toBe('firing');
    await page.locator('main .shown').first().waitFor();
    expect(await row(page).count()).toBe(0);
    await page.selectOption('main select[name="state"]', 'acknowledged');
    await expect.poll(() => page.evaluate('location.hash')).toBe('#/alerts?state=acknowledged');
    await expect.poll(() => row(page).count()).toBe(1);
    await row(page).locator('button:text-is("Unacknowledge")').click();
    await expect.poll(async () => (await listed()).map((alert) => alert.status)).toEqual(['firing']);
    await expect.poll(() => row(page).count()).toBe(0);
    // It repeats again.
    const before = about(told(receiver), 'db', 'firing').length;
    await expect.poll(() => about(told(receiver), 'db', 'firing').length, { timeout: 10_000 }).toBeGreaterThan(before);
  }, 60_000);

  it("shows the firing alert on the check's page, acknowledged from there with the keyboard", async () => {
    const { page } = watched;
    await page.goto(`${server.url}/frontend/index.html#/check/db`);
    const alerts = page.locator('.check-alerts');
    await expect.poll(() => alerts.locator('li.alert').getAttribute('data-status'), { timeout: 10_000 }).toBe('firing');
    await alerts.locator('input[name="comment"]').focus();
    await page.keyboard.type('from the check page');
    await page.keyboard.press('Enter');
    await expect
      .poll(async () => (await listed('acknowledged')).map((alert) => alert.acknowledged?.comment))
      .toEqual(['from the check page']);
    await expect.poll(() => alerts.locator('li.alert').getAttribute('data-status')).toBe('acknowledged');
    // Back to firing for the next test.
    const [alert] = await listed();
    await server.request(`/api/v1/alerts/${alert!.id}/unack`, { method: 'POST', headers: basic });
  }, 30_000);

  it('offers a read session no button', async () => {
    const other = await launchBrowser();
    try {
      const { page } = await other.open(`${server.url}/frontend/index.html#/alerts`);
      await signIn(page, { token: READER });
      await expect.poll(() => row(page).getAttribute('data-status'), { timeout: 10_000 }).toBe('firing');
      expect(await page.locator('main button').count()).toBe(0);
      expect(await page.locator('main input[name="comment"]').count()).toBe(0);
      await page.goto(`${server.url}/frontend/index.html#/check/db`);
      await page.locator('.check-alerts li.alert').waitFor({ timeout: 10_000 });
      expect(await page.locator('.check-alerts button').count()).toBe(0);
    } finally {
      await other.close();
    }
  }, 30_000);
});
