/**
 * The dashboard with 12,000 checks (docs/dashboard.md "Scale"): created through the bulk API against a local TCP
 * listener with a long interval, the page shows the counts and the first page of rows, and pages, filters and
 * scrolls holding one page of rows in the DOM, never 12,000. Its speed is bench/dashboard.ts's.
 */
import { request } from 'node:http';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, type Browser, hasChromium, launchBrowser } from '../helpers/browser.ts';
import { createManyChecks } from '../helpers/many-checks.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { startTcpTarget, type TcpTarget } from '../helpers/targets.ts';

const CHECKS = 12_000;

/** The raw answer to a GET (fetch would decompress it), with its Content-Encoding. */
function rawGet(
  url: string,
  acceptEncoding: string,
): Promise<{ status: number; encoding: string | undefined; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers: { 'accept-encoding': acceptEncoding } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          encoding: response.headers['content-encoding'],
          body: Buffer.concat(chunks),
        }),
      );
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

describe.skipIf(!hasChromium())('dashboard with 12,000 checks', () => {
  let server: TestServer;
  let tcp: TcpTarget;
  let browser: Browser;

  beforeAll(async () => {
    [server, tcp, browser] = await Promise.all([
      startServer({ config: { http: { 'body-limit': 16 * 1024 * 1024 } } }),
      startTcpTarget(),
      launchBrowser(),
    ]);
    await createManyChecks(server, tcp.port, CHECKS);
  }, 240_000);

  afterAll(async () => {
    await Promise.all([browser?.close(), server?.kill9(), tcp?.close()]);
  });

  // What a visit costs and how fast it pages, filters and scrolls is measured by bench/dashboard.ts; this test
  // holds what must be true whatever the machine's load.
  it('shows the counts and one page of rows, and pages, filters and scrolls with one page in the DOM', async () => {
    const overview = (await (await server.request('/api/v1/overview/healthchecks')).json()) as { checks: unknown[] };
    expect(overview.checks).toHaveLength(CHECKS);

    const page = await browser.context.newPage();
    await page.goto(`${server.url}/frontend/index.html`);
    await page.locator('[data-count="all"] strong', { hasText: String(CHECKS) }).waitFor();
    await page.locator('tr.check').nth(99).waitFor();
    expect(await page.locator('tr.check').count()).toBe(100);
    expect(await page.locator('.shown').textContent()).toBe(`${CHECKS} checks · page 1 of ${CHECKS / 100}`);

    await page.click('.pager button:text-is("Next →")');
    await page.locator('tr.check[data-name="check-00100"]').waitFor();
    expect(await page.locator('tr.check').count()).toBe(100);

    await page.fill('input[name="name"]', 'check-11999');
    await expect.poll(() => page.locator('tr.check').count()).toBe(1);

    await page.fill('input[name="name"]', '');
    await page.fill('input[name="label"]', 'shard=3');
    await expect.poll(() => page.locator('.shown').textContent()).toBe(`1200 of ${CHECKS} checks · page 1 of 12`);
    await page.fill('input[name="label"]', '');
    await expect.poll(() => page.locator('.shown').textContent()).toBe(`${CHECKS} checks · page 1 of ${CHECKS / 100}`);

    // Scrolled to the bottom, the table still holds one page of rows, never 12,000.
    await page.evaluate('scrollTo(0, document.documentElement.scrollHeight)');
    expect(await page.locator('tr.check').count()).toBe(100);
    await page.screenshot({ path: join(ARTIFACTS, 'checks-12000.png') });
    await page.close();
  });

  it('answers the overview compressed with brotli or gzip when the client accepts it', async () => {
    const url = `${server.url}/api/v1/overview/healthchecks`;
    const plain = await rawGet(url, 'identity');
    const gzip = await rawGet(url, 'gzip');
    const brotli = await rawGet(url, 'gzip, deflate, br');
    expect([plain.status, gzip.status, brotli.status]).toEqual([200, 200, 200]);
    expect([plain.encoding, gzip.encoding, brotli.encoding]).toEqual([undefined, 'gzip', 'br']);
    const checks = (body: Buffer) => (JSON.parse(body.toString('utf8')) as { checks: unknown[] }).checks;
    const expected = checks(plain.body);
    expect(expected).toHaveLength(CHECKS);
    // The same checks (`now` may have moved on between the three calls).
    expect(checks(gunzipSync(gzip.body))).toEqual(expected);
    expect(checks(brotliDecompressSync(brotli.body))).toEqual(expected);
    console.log(
      `overview of ${CHECKS} checks: ${plain.body.length} bytes plain, ${gzip.body.length} gzip, ${brotli.body.length} br`,
    );
    expect(gzip.body.length).toBeLessThan(plain.body.length / 5);
    expect(brotli.body.length).toBeLessThan(plain.body.length / 5);

    // Under the threshold (1 KiB), an answer goes out as is.
    const small = await rawGet(`${server.url}/api/v1/overview/durations/check-00000?window=24h`, 'gzip, br');
    expect(small.status).toBe(200);
    expect(small.body.length).toBeLessThan(1024);
    expect(small.encoding).toBeUndefined();
  });
});
