/**
 * The console in a real browser (chromium through playwright-core) against the real server behind basic auth
 * (docs/dashboard.md, "Signing in" and "Managing"): sign in with the page's own form, add an HTTP check from the
 * form built from the API's schema and see it run, break it and see every field's error at once, pause and resume
 * it, post and resolve an incident shown on a public status page, create a token and sign in with it (a `read`
 * token is offered no change), sign out. A session whose token is deleted brings the sign-in form back.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchBrowser, signIn, type WatchedPage } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';

const field = (page: Page, name: string) => page.locator(`[data-field="${name}"]`);
const input = (page: Page, name: string) => field(page, name).locator('input, select, textarea').first();

describe.skipIf(!hasChromium())('the console', () => {
  let server: TestServer;
  let target: HttpTarget;
  let browser: Browser;
  let watched: WatchedPage;

  beforeAll(async () => {
    [server, target, browser] = await Promise.all([
      startServer({
        config: {
          http: { 'basic-auth': { username: 'ops', password: 's3cret' }, public: ['status-pages'] },
          'status-pages': [{ slug: 'public', title: 'Public', groups: [] }],
          'tcp-checks': [{ name: 'from-file', target: '127.0.0.1', port: 1, timeout: '1s', interval: '1h' }],
        },
      }),
      startHttpTarget({ handler: (_request, response) => response.end('hello') }),
      launchBrowser(),
    ]);
    watched = await browser.open(`${server.url}/frontend/index.html`);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([server?.kill9(), target?.close()]);
  });

  it('shows its own sign-in form (no browser prompt), refuses a wrong password, and signs in', async () => {
    const { page } = watched;
    await signIn(page, { username: 'ops', password: 'wrong' });
    await expect
      .poll(() => page.locator('form[aria-label="Sign in"] .error').textContent())
      .toBe('Sign-in refused: wrong user name or password');
    await signIn(page, { username: 'ops', password: 's3cret' });
    await expect.poll(() => page.locator('header .principal').textContent()).toBe('basic:ops');
    expect(await page.locator('.open-banner').count()).toBe(0);
    // The check of the configuration file (an empty install's guidance: test/e2e/dashboard.test.ts).
    await expect.poll(() => page.locator('tr.check').count()).toBe(1);
    expect(watched.dialogs).toEqual([]);
  }, 30_000);

  it('adds an HTTP check from the form, runs it once first, and sees it run', async () => {
    const { page } = watched;
    await page.click('a:text-is("Add a check")');
    await input(page, 'name').waitFor();
    expect(await input(page, 'kind').inputValue()).toBe('http');
    // The form is the API's schema: every HTTP field is there, required ones first.
    for (const name of ['name', 'timeout', 'valid-status', 'url', 'interval', 'headers', 'body-regexp', 'degraded'])
      expect(await field(page, name).count(), name).toBe(1);
    await input(page, 'name').fill('site');
    await input(page, 'url').fill(`http://127.0.0.1:${target.port}/`);
    await input(page, 'interval').fill('1s');
    await input(page, 'timeout').fill('1s');
    await input(page, 'valid-status').fill('200');
    await page.click('button:text-is("Run now")');
    await expect.poll(() => page.locator('.run-outcome').textContent()).toMatch(/^Ran once: success/);
    expect((await server.request('/api/v1/healthcheck/site', auth())).status).toBe(404);
    await page.click('button:text-is("Save")');
    await expect.poll(() => page.locator('.check-name').textContent()).toBe('site');
    await expect.poll(() => page.locator('h2 .badge').textContent(), { timeout: 10_000 }).toBe('ok');
  }, 30_000);

  it('breaks it on purpose and shows every field error at once, saving nothing', async () => {
    const { page } = watched;
    await page.click('a:text-is("Edit")');
    await input(page, 'port').waitFor();
    expect(await input(page, 'name').isDisabled()).toBe(true);
    await input(page, 'port').fill('70000');
    await input(page, 'timeout').fill('soon');
    await input(page, 'valid-status').fill('42');
    await page.click('button:text-is("Save")');
    await expect.poll(() => page.locator('.field-error').count()).toBe(3);
    for (const name of ['port', 'timeout', 'valid-status']) {
      expect(await field(page, name).locator('.field-error').count(), name).toBe(1);
      expect(await input(page, name).getAttribute('aria-invalid'), name).toBe('true');
    }
    expect(await page.locator('.summary').textContent()).toBe('3 fields to fix: nothing was saved.');
    const stored = (await (await server.request('/api/v1/healthcheck/site', auth())).json()) as { port: number };
    expect(stored.port).toBe(target.port);
  }, 30_000);

  it('pauses and resumes it', async () => {
    const { page } = watched;
    await page.goto(`${server.url}/frontend/index.html#/check/site`);
    await page.click('button:text-is("Pause")');
    await expect.poll(() => page.locator('.state-line .check-state').textContent()).toBe('paused');
    await page.click('button:text-is("Resume")');
    await expect
      .poll(() => page.locator('.state-line .check-state').textContent(), { timeout: 10_000 })
      .not.toBe('paused');
    expect(await page.locator('button:text-is("Pause")').count()).toBe(1);
  }, 30_000);

  it('clones a check under a new name, and deletes the clone after asking once more', async () => {
    const { page } = watched;
    await page.click('a:text-is("Clone")');
    await expect.poll(() => input(page, 'name').inputValue()).toBe('site-copy');
    expect(await input(page, 'name').isDisabled()).toBe(false);
    await page.click('button:text-is("Save")');
    await expect.poll(() => page.locator('.check-name').textContent()).toBe('site-copy');
    await page.click('button:text-is("Delete")');
    await page.click('button:text-is("Yes, delete")');
    await expect.poll(() => page.evaluate('location.hash')).toBe('#/checks');
    expect((await server.request('/api/v1/healthcheck/site-copy', auth())).status).toBe(404);
    expect(watched.dialogs).toEqual([]);
  }, 30_000);

  it('shows a check of the configuration file read-only, naming its source; it can still be paused', async () => {
    const { page } = watched;
    await page.goto(`${server.url}/frontend/index.html#/check/from-file`);
    await expect
      .poll(() => page.locator('.source').textContent())
      .toBe('Defined in the configuration file: read-only here.');
    expect(
      await page.locator('.check-actions a:text-is("Edit"), .check-actions button:text-is("Delete")').count(),
    ).toBe(0);
    expect(await page.locator('.check-actions button:text-is("Pause")').count()).toBe(1);
  }, 30_000);

  it('creates a maintenance window from the form', async () => {
    const { page } = watched;
    await page.click('header a:text-is("Maintenance")');
    const form = page.locator('form[aria-label="New maintenance window"]');
    await form.locator('[data-field="name"] input').fill('upgrade');
    await form.locator('[data-field="start"] input').fill('2030-01-01T22:00:00Z');
    await form.locator('[data-field="duration"] input').fill('1h');
    await form.locator('[data-field="checks"] input').fill('site');
    await form.locator('button:text-is("Save")').click();
    await expect.poll(() => page.locator('table.maintenance tr[data-name="upgrade"]').count()).toBe(1);
    expect((await server.request('/api/v1/maintenance/upgrade', auth())).status).toBe(200);
    // Edited: the same form, filled, the name fixed; the API replaces the window.
    await page.click('tr[data-name="upgrade"] button:text-is("Edit")');
    const edit = page.locator('form[aria-label="Edit upgrade"]');
    expect(await edit.locator('[data-field="name"] input').isDisabled()).toBe(true);
    expect(await edit.locator('[data-field="checks"] input').inputValue()).toBe('site');
    await edit.locator('[data-field="duration"] input').fill('2h');
    await edit.locator('button:text-is("Save")').click();
    await expect.poll(() => page.locator('tr[data-name="upgrade"] td').nth(2).textContent()).toBe('2h0m0s');
  }, 30_000);

  it('posts an incident on the public page, then resolves it', async () => {
    const { page } = watched;
    await page.click('header a:text-is("Incidents")');
    const form = page.locator('form[aria-label="Post an incident"]');
    await form.locator('[data-field="title"] input').fill('Database slow');
    await form.locator('[data-field="message"] input').fill('Looking into it');
    await form.locator('[data-field="pages"] input[value="public"]').check();
    await form.locator('[data-field="checks"] input').fill('site');
    await form.locator('button:text-is("Post")').click();
    await expect.poll(() => page.locator('.incident h3').first().textContent()).toBe('Database slow investigating');
    const publicPage = async () => (await fetch(`${server.url}/status/public`)).text();
    expect(await publicPage()).toContain('Database slow');
    await page.click('.incident button:text-is("Update")');
    const update = page.locator('form[aria-label^="Update incident"]');
    await update.locator('[data-field="status"] select').selectOption('resolved');
    await update.locator('[data-field="message"] input').fill('Fixed');
    await update.locator('button:text-is("Post the update")').click();
    await expect.poll(() => page.locator('.incident .incident-status').first().textContent()).toBe('resolved');
    await expect.poll(async () => /resolved/i.test(await publicPage())).toBe(true);
  }, 30_000);

  it('creates a status page from the form (its groups as JSON), refusing JSON that does not read', async () => {
    const { page } = watched;
    await page.click('header a:text-is("Status pages")');
    const form = page.locator('form[aria-label="New status page"]');
    await form.locator('[data-field="slug"] input').fill('team');
    await form.locator('[data-field="title"] input').fill('Team');
    await form.locator('[data-field="groups"] textarea').fill('[{"name": "Web", "checks": ["site"]');
    await form.locator('button:text-is("Save")').click();
    await expect.poll(() => form.locator('[data-field="groups"] .field-error').textContent()).toBe('must be JSON');
    await form.locator('[data-field="groups"] textarea').fill('[{"name": "Web", "checks": ["site"]}]');
    await form.locator('button:text-is("Save")').click();
    await expect.poll(() => page.locator('tr[data-slug="team"]').count()).toBe(1);
    expect((await fetch(`${server.url}/status/team`)).status).toBe(200);
    await page.click('tr[data-slug="team"] button:text-is("Edit")');
    const edit = page.locator('form[aria-label="Edit team"]');
    await edit.locator('[data-field="title"] input').fill('Team two');
    await edit.locator('button:text-is("Save")').click();
    await expect.poll(() => page.locator('tr[data-slug="team"] td').nth(1).textContent()).toBe('Team two');
    // The page of the configuration file is listed, read-only.
    expect(await page.locator('tr[data-slug="public"]').textContent()).toContain('read-only');
  }, 30_000);

  it('creates a read token, shows its secret once, signs out, and signs in with it: no change is offered', async () => {
    const { page } = watched;
    await page.click('header a:text-is("Tokens")');
    const form = page.locator('form[aria-label="New token"]');
    await form.locator('[data-field="name"] input').fill('reader');
    await form.locator('[data-field="scopes"] input[value="read"]').check();
    await form.locator('button:text-is("Create")').click();
    const secret = (await page.locator('.token-secret').textContent()) ?? '';
    expect(secret.length).toBeGreaterThan(20);
    await page.click('button:text-is("Sign out")');
    await page.locator('form[aria-label="Sign in"]').waitFor();
    expect(await page.locator('.notice').textContent()).toBe('Signed out.');
    await signIn(page, { token: secret });
    await expect.poll(() => page.locator('header .principal').textContent()).toBe('token:reader');
    await page.click('header a:text-is("Checks")');
    await expect.poll(() => page.locator('tr.check').count()).toBe(2);
    expect(await page.locator('a:text-is("Add a check")').count()).toBe(0);
    expect(await page.locator('header a:text-is("Tokens")').count()).toBe(0);
    await page.click('a:text-is("site")');
    await page.locator('.check-name').waitFor();
    expect(await page.locator('.check-actions').count()).toBe(0);
    for (const view of ['Incidents', 'Maintenance', 'Status pages']) {
      await page.click(`header a:text-is("${view}")`);
      await page.locator('main h2').waitFor();
      expect(
        await page.locator('main form, main button:text-is("Delete"), main button:text-is("Edit")').count(),
        view,
      ).toBe(0);
    }
    // The token deleted, the session made with it ends: the page asks to sign in again, saying why.
    expect((await server.request('/api/v1/tokens/reader', { ...auth(), method: 'DELETE' })).status).toBe(200);
    await expect
      .poll(() => page.locator('form[aria-label="Sign in"] .notice').textContent(), { timeout: 10_000 })
      .toMatch(/^Session ended/);
    expect(watched.pageErrors).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
  }, 40_000);
});

function auth(): RequestInit {
  return { headers: { authorization: `Basic ${Buffer.from('ops:s3cret').toString('base64')}` } };
}

describe.skipIf(!hasChromium())('the console, when its session expires', () => {
  it('shows the sign-in form again, saying the session expired', async () => {
    const [server, browser] = await Promise.all([
      startServer({ config: { http: { 'basic-auth': { username: 'ops', password: 's3cret' }, 'session-ttl': '2s' } } }),
      launchBrowser(),
    ]);
    try {
      const { page } = await browser.open(`${server.url}/frontend/index.html`);
      await signIn(page, { username: 'ops', password: 's3cret' });
      await page.locator('header .principal').waitFor();
      // The next poll after the expiry is refused: the cookie is cleared, the form comes back.
      const notice = page.locator('form[aria-label="Sign in"] .notice');
      await expect.poll(() => notice.count(), { timeout: 15_000 }).toBe(1);
      expect(await notice.textContent()).toMatch(/^Session (expired|ended): sign in again$/);
      await signIn(page, { username: 'ops', password: 's3cret' });
      await expect.poll(() => page.locator('header .principal').textContent()).toBe('basic:ops');
    } finally {
      await browser.close();
      await server.kill9();
    }
  }, 60_000);
});
