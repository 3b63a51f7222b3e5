/**
 * The dashboard with 12,000 checks (docs/dashboard.md "Scale"): created through the bulk API against a local TCP
 * listener with a long interval, the page must show the counts and the first page of rows within a second, and
 * stay responsive while paging, filtering and scrolling (the DOM holds one page of rows, never 12,000).
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { join } from 'node:path';
import { ARTIFACTS, type Browser, hasChromium, launchBrowser } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { startTcpTarget, type TcpTarget } from '../helpers/targets.ts';

const CHECKS = 12_000;
const USABLE_WITHIN_MS = 1000;

/** CPU time (user + system, ms) a process has used, from /proc (Linux clock ticks are 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

describe.skipIf(!hasChromium())('dashboard with 12,000 checks', () => {
  let server: TestServer;
  let tcp: TcpTarget;
  let browser: Browser;

  beforeAll(async () => {
    [server, tcp, browser] = await Promise.all([startServer({ config: { http: { 'body-limit': 16 * 1024 * 1024 } } }), startTcpTarget(), launchBrowser()]);
    const checks = Array.from({ length: CHECKS }, (_, i) => ({
      name: `check-${String(i).padStart(5, '0')}`,
      target: '127.0.0.1',
      port: tcp.port,
      interval: '1h',
      timeout: '2s',
      labels: { shard: String(i % 10) },
    }));
    const created = await server.request('/api/v1/healthcheck/bulk', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ 'tcp-checks': checks }),
    });
    expect(created.status, await created.text()).toBe(201);
    // The first runs of 12,000 checks keep the service busy for a while; the page is timed once they are done.
    await vi.waitFor(
      async () => {
        const results = (await (await server.request('/api/v1/result')).json()) as { result: unknown[] };
        expect(results.result).toHaveLength(CHECKS);
      },
      { timeout: 150_000, interval: 2000 },
    );
  }, 240_000);

  afterAll(async () => {
    await Promise.all([browser?.close(), server?.kill9(), tcp?.close()]);
  });

  it('shows the counts and the first page within a second, and pages, filters and scrolls without stalling', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const api = performance.now();
    const overview = (await (await server.request('/api/v1/overview/healthchecks')).json()) as { checks: unknown[] };
    const apiMs = performance.now() - api;
    expect(overview.checks).toHaveLength(CHECKS);

    const pid = server.process.pid as number;
    const timings: Record<string, number> = { 'overview API (Node fetch)': Math.round(apiMs) };
    // Wall time depends on what else the machine runs; the CPU the server and the page's main thread spent is
    // what the page costs, and is what must fit in the second on a machine that is not oversubscribed. Each
    // visit is a new tab, whose renderer counts its main-thread time from zero.
    const cost: Record<string, number> = {};
    let page = await browser.context.newPage();
    for (const visit of ['first visit', 'second visit']) {
      await page.close();
      page = await browser.context.newPage();
      const cdp = await browser.context.newCDPSession(page);
      await cdp.send('Performance.enable');
      const serverBefore = cpuMs(pid);
      const started = performance.now();
      await page.goto(`${server.url}/frontend/index.html`);
      await page.locator('[data-count="all"] strong', { hasText: String(CHECKS) }).waitFor();
      await page.locator('tr.check').nth(99).waitFor();
      timings[visit] = Math.round(performance.now() - started);
      const browserMs = 1000 * ((await cdp.send('Performance.getMetrics')).metrics.find((metric) => metric.name === 'TaskDuration')?.value ?? 0);
      const serverMs = cpuMs(pid) - serverBefore;
      cost[`${visit}: server`] = serverMs;
      cost[`${visit}: page`] = Math.round(browserMs);
      cost[visit] = Math.round(serverMs + browserMs);
      expect(await page.locator('tr.check').count()).toBe(100);
    }
    expect(await page.locator('.shown').textContent()).toBe(`${CHECKS} checks · page 1 of ${CHECKS / 100}`);

    let started = performance.now();
    await page.click('.pager button:text-is("Next →")');
    await page.locator('tr.check[data-name="check-00100"]').waitFor();
    timings['next page'] = Math.round(performance.now() - started);
    expect(await page.locator('tr.check').count()).toBe(100);

    started = performance.now();
    await page.fill('input[name="name"]', 'check-11999');
    await expect.poll(() => page.locator('tr.check').count()).toBe(1);
    timings['name filter'] = Math.round(performance.now() - started);

    started = performance.now();
    await page.fill('input[name="name"]', '');
    await page.fill('input[name="label"]', 'shard=3');
    await expect.poll(() => page.locator('.shown').textContent()).toBe(`1200 of ${CHECKS} checks · page 1 of 12`);
    timings['label filter'] = Math.round(performance.now() - started);
    await page.fill('input[name="label"]', '');

    // Scrolling the page from top to bottom, one step per frame: the longest frame stays short.
    const frames = (await page.evaluate(`(async () => {
      const intervals = [];
      let last = performance.now();
      const height = document.documentElement.scrollHeight;
      for (let y = 0; y <= height; y += 200) {
        scrollTo(0, y);
        await new Promise((resolve) => requestAnimationFrame(resolve));
        const now = performance.now();
        intervals.push(now - last);
        last = now;
      }
      return intervals.sort((a, b) => a - b);
    })()`)) as number[];
    timings['scroll: slowest frame'] = Math.round(frames.at(-1) ?? 0);
    const load = (loadavg()[0] ?? 0) / cpus().length;
    console.log(`dashboard, ${CHECKS} checks: wall ms ${JSON.stringify(timings)}; CPU ms (server + page main thread) ${JSON.stringify(cost)}; load per core ${load.toFixed(1)}`);

    // The first visit also parses the script and computes the uptime of every check (cached 5 s after). On an
    // oversubscribed machine (the 2-core CI box runs several suites at once) CPU time inflates too: the
    // budget doubles there, and the figures are printed above.
    const budget = load < 2 ? USABLE_WITHIN_MS : 2 * USABLE_WITHIN_MS;
    expect(cost['first visit']).toBeLessThan(budget * 1.5);
    expect(cost['second visit']).toBeLessThan(budget);
    if (load < 1) expect(timings['second visit']).toBeLessThan(USABLE_WITHIN_MS);
    expect(timings['next page']).toBeLessThan(1000);
    expect(timings['name filter']).toBeLessThan(1000);
    expect(frames.at(-1)).toBeLessThan(250);
    await page.screenshot({ path: join(ARTIFACTS, 'checks-12000.png') });
    await page.close();
  });
});
