/**
 * A status page in a real browser (Debian's chromium through playwright-core): light and dark following
 * `prefers-color-scheme`, with an incident, a maintenance window and 90 days of bars; hostile texts show as text
 * and run nothing. Screenshots go to the test's temporary directory.
 */
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchBrowser } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { seedDailyUptime } from '../helpers/uptime.ts';
import { waitFor } from '../helpers/wait.ts';

const HOSTILE = `<script>window.__xss=1</script>"'</style><img src=x onerror=window.__xss=2>`;
/** Check names may not hold "/": no closing tag, but markup all the same. */
const HOSTILE_NAME = `<script>window.__xss=3<img src=x onerror=window.__xss=4>"'`;
const json = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

describe.skipIf(!hasChromium())('status page in a browser', () => {
  let server: TestServer;
  let tcp: TcpTarget;
  let browser: Browser;
  const shots = mkdtempSync(join(tmpdir(), 'vigie-status-shots-'));

  beforeAll(async () => {
    tcp = await startTcpTarget();
    const closed = await closedPort();
    const check = (name: string, port: number) => ({
      name,
      target: '127.0.0.1',
      port,
      interval: '500ms',
      timeout: '500ms',
    });
    [server, browser] = await Promise.all([
      startServer({
        config: {
          'tcp-checks': [
            check('api', tcp.port),
            check('web', tcp.port),
            check('db', closed),
            check(HOSTILE_NAME, tcp.port),
          ],
          'status-pages': [
            {
              slug: 'acme',
              title: `Acme ${HOSTILE}`,
              description: 'Status of the Acme services.',
              groups: [
                { name: 'Front', checks: ['api', 'web', HOSTILE_NAME] },
                { name: 'Storage', checks: ['db'] },
              ],
            },
          ],
        },
      }),
      launchBrowser(),
    ]);
    await waitFor(
      async () =>
        ((await (await server.request('/api/v1/result')).json()) as { result: unknown[] }).result.length === 4,
      { timeoutMs: 15_000 },
    );
    seedDailyUptime(
      server.dataDir,
      ['api', 'web', 'db'].flatMap((name, n) =>
        Array.from({ length: 89 }, (_, i) => ({
          name,
          daysAgo: i + 1,
          runs: 100,
          successes: (i + n) % 17 === 0 ? 80 : 100,
        })),
      ),
    );
    const window = await server.request(
      '/api/v1/maintenance',
      json({ name: 'db-move', start: new Date(Date.now() - 60_000).toISOString(), duration: '1h', checks: ['db'] }),
    );
    expect(window.status).toBe(201);
    const incident = await server.request(
      '/api/v1/incident',
      json({ title: `Slow API ${HOSTILE}`, status: 'identified', message: `Cache cold. ${HOSTILE}`, pages: ['acme'] }),
    );
    expect(incident.status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await tcp?.close();
  });

  it('reads in light and in dark, with the banner, the incident and the maintenance shown, and runs nothing', async () => {
    const watched = await browser.open(`${server.url}/status/acme`);
    const { page } = watched;
    const looks: Record<string, { background: string; text: string }> = {};
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      // `db` fails but is in its window: it shows as maintenance, and so does the banner (nothing else is down).
      await waitFor(
        async () => (await page.reload(), (await page.locator('.banner').getAttribute('data-state')) === 'maintenance'),
        { timeoutMs: 10_000 },
      );
      const banner = page.locator('.banner');
      expect(await banner.isVisible()).toBe(true);
      expect(await banner.innerText()).toMatch(/maintenance/i);
      expect(await page.locator('.check[data-name="db"]').getAttribute('data-state')).toBe('maintenance');
      expect(await page.locator('.incidents.open .incident').innerText()).toContain(`Slow API ${HOSTILE}`);
      expect(await page.locator('#maintenance .incident').innerText()).toContain('db-move');
      expect(await page.locator('h1').innerText()).toBe(`Acme ${HOSTILE}`);
      expect(await page.locator('.check[data-name="api"] .bars > li').count()).toBe(90);
      looks[scheme] = (await page.evaluate(`(() => {
        const style = getComputedStyle(document.body);
        return { background: style.backgroundColor, text: style.color };
      })()`)) as { background: string; text: string };
      // Each level of bar has its own colour: a day of 100 %, one below 95 %, one without data.
      const barColour = (selector: string) =>
        page
          .locator(selector)
          .first()
          .evaluate(
            (element) =>
              (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(
                element,
              ).backgroundColor,
          );
      const colours = await Promise.all(['.bars > li.up', '.bars > li.down', '.bars > li.none'].map(barColour));
      expect(new Set(colours).size, colours.join(' ')).toBe(3);
      const path = join(shots, `status-${scheme}.png`);
      await page.screenshot({ path, fullPage: true });
      expect(statSync(path).size).toBeGreaterThan(10_000);
    }
    expect(looks.light?.background).not.toBe(looks.dark?.background);
    expect(looks.light?.text).not.toBe(looks.dark?.text);
    // Nothing injected became markup, no script ran.
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: unknown }).__xss)).toBeUndefined();
    expect(watched.dialogs).toEqual([]);
    expect(watched.pageErrors).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
  });
});
