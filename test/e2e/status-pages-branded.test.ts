/**
 * A branded status page (docs/status-pages.md, "Branding and reach") from outside: its logo and favicon served by
 * Vigie (images only, 512 KiB at most), its accent colour, footer links (the rest escaped), homepage, the 60 s
 * refresh without JavaScript, its own host name serving it at `/`; bad branding refused whole. In a browser (Debian's
 * chromium through playwright-core): screenshots light, dark and 390 px wide in test-artifacts/.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DomUtils, parseDocument } from 'htmlparser2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, type Browser, hasChromium, launchBrowser } from '../helpers/browser.ts';
import { logoPng } from '../helpers/png.ts';
import { runCli, startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { seedDailyUptime } from '../helpers/uptime.ts';
import { waitFor } from '../helpers/wait.ts';

const post = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const FOOTER = 'Questions? [Contact us](https://acme.example/contact) or write <b>support</b>.';

let server: TestServer;
let tcp: TcpTarget;
const files = mkdtempSync(join(tmpdir(), 'vigie-branding-'));
const logo = logoPng(96, [255, 153, 0]);

/** A GET with the Host header a browser would send for that name (fetch may not set Host). */
function getAs(host: string, path: string): Promise<{ status: number; type: string; body: string }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, path, headers: { host: `${host}:${port}` } }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, type: String(response.headers['content-type']), body }),
      );
    });
    request.on('error', reject);
    request.end();
  });
}

beforeAll(async () => {
  tcp = await startTcpTarget();
  const closed = await closedPort();
  writeFileSync(join(files, 'logo.png'), logo);
  writeFileSync(join(files, 'favicon.png'), logoPng(32, [255, 153, 0]));
  const check = (name: string, port: number) => ({
    name,
    target: '127.0.0.1',
    port,
    interval: '300ms',
    timeout: '300ms',
    'failure-threshold': 1,
  });
  server = await startServer({
    config: {
      healthchecks: {
        'api-files-dir': files,
        // The page's subscribe form shows (nobody subscribes here: test/e2e/status-subscriptions.test.ts does).
        'status-subscriptions': {
          'public-url': 'https://status.acme.test',
          email: { host: '127.0.0.1', port: 9, tls: 'none', from: 'status@acme.test' },
        },
      },
      'tcp-checks': [
        check('shop-web', tcp.port),
        check('shop-api', tcp.port),
        check('payments', closed),
        check('search', tcp.port),
      ],
      'status-pages': [
        {
          slug: 'acme',
          title: 'Acme',
          description: 'The state of the Acme shop, live.',
          logo: join(files, 'logo.png'),
          favicon: join(files, 'favicon.png'),
          'accent-color': '#0b3d91',
          footer: FOOTER,
          homepage: 'https://acme.example/',
          hostnames: ['status.acme.test'],
          groups: [
            {
              name: 'Shop',
              checks: [
                { check: 'shop-web', name: 'Web shop', description: 'Browsing and checkout.' },
                { check: 'shop-api', name: 'Mobile API' },
                { check: 'search', name: 'Search' },
              ],
            },
            {
              name: 'Payments',
              checks: [{ check: 'payments', name: 'Card payments', description: 'Visa, Mastercard.' }],
            },
          ],
        },
      ],
    },
  });
  await waitFor(
    async () => ((await (await server.request('/api/v1/result')).json()) as { result: unknown[] }).result.length === 4,
    { timeoutMs: 15_000 },
  );
  seedDailyUptime(
    server.dataDir,
    ['shop-web', 'shop-api', 'search', 'payments'].flatMap((name, n) =>
      Array.from({ length: 89 }, (_, i) => ({
        name,
        daysAgo: i + 1,
        runs: 1440,
        successes: (i * 7 + n * 3) % 23 === 0 ? 1300 : (i + n) % 31 === 0 ? 1420 : 1440,
      })),
    ),
  );
  const incident = await server.request(
    '/api/v1/incident',
    post({
      title: 'Card payments failing',
      status: 'identified',
      message: 'Our payment provider is down; orders are kept and will be charged later.',
      pages: ['acme'],
      checks: ['payments'],
    }),
  );
  expect(incident.status).toBe(201);
  const window = await server.request(
    '/api/v1/maintenance',
    post({
      name: 'Search index rebuild',
      start: new Date(Date.now() + 2 * 86_400_000).toISOString(),
      duration: '2h',
      checks: ['search'],
    }),
  );
  expect(window.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await server?.kill9();
  await tcp?.close();
});

describe('a branded status page', () => {
  it('shows its logo, favicon, accent, footer links and homepage, and refreshes itself every 60 s', async () => {
    const response = await server.request('/status/acme');
    const html = await response.text();
    const document = parseDocument(html);
    const find = (predicate: (element: { name: string; attribs: Record<string, string> }) => boolean) =>
      DomUtils.findAll(predicate, document.children);
    expect(find((element) => element.name === 'meta' && element.attribs['http-equiv'] === 'refresh')).toHaveLength(1);
    expect(html).toContain('<meta http-equiv="refresh" content="60">');
    expect(html).not.toMatch(/<script/i);
    const [img] = find((element) => element.name === 'img');
    expect(img?.attribs.src).toBe('/status/acme/logo');
    expect(img?.attribs.alt).toBe('Acme logo');
    expect(find((element) => element.name === 'link' && element.attribs.rel === 'icon')[0]?.attribs.href).toBe(
      '/status/acme/favicon',
    );
    expect(find((element) => element.name === 'a' && element.attribs.class === 'brand')[0]?.attribs.href).toBe(
      'https://acme.example/',
    );
    const contact = find((element) => element.name === 'a' && element.attribs.href === 'https://acme.example/contact');
    expect(contact).toHaveLength(1);
    expect(contact[0]?.attribs.rel).toBe('noopener noreferrer');
    expect(html).toContain('write &lt;b&gt;support&lt;/b&gt;.');
    expect(html).toContain('--accent:#0b3d91;--on-accent:#ffffff');
    expect(response.headers.get('content-security-policy')).toContain("img-src 'self'");

    const image = await server.request('/status/acme/logo');
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await image.arrayBuffer()).equals(logo)).toBe(true);
    expect((await server.request('/status/acme/favicon')).headers.get('content-type')).toBe('image/png');
  });

  it("serves the page at its host name's `/`, with summary.json where Statuspage has it", async () => {
    const page = await getAs('status.acme.test', '/');
    expect(page.status).toBe(200);
    expect(page.type).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('<h1>Acme</h1>');
    const { port } = new URL(server.url);
    for (const path of ['/api/v2/summary.json', '/summary.json']) {
      const summary = await getAs('STATUS.acme.test', path);
      expect(summary.status, path).toBe(200);
      expect((JSON.parse(summary.body) as { page: { url: string } }).page.url).toBe(`http://status.acme.test:${port}`);
    }
    expect((await getAs('status.acme.test', '/favicon.ico')).type).toBe('image/png');
    // Another host's `/` is the API's as before.
    expect((await getAs('other.acme.test', '/')).body).not.toContain('<h1>Acme</h1>');
  });

  it('refuses bad branding whole, naming the field', async () => {
    writeFileSync(join(files, 'page.html'), '<html><script>alert(1)</script></html>');
    writeFileSync(join(files, 'huge.png'), Buffer.concat([logo, Buffer.alloc(600 * 1024)]));
    const base = { slug: 'other', title: 'Other', groups: [{ name: 'g', checks: ['search'] }] };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ logo: join(files, 'page.html') }, /logo: .*page\.html is not a PNG, JPEG, GIF, WebP or ICO image/],
      [{ logo: join(files, 'huge.png') }, /logo: .*huge\.png is \d+ bytes, more than 524288 \(512 KiB\)/],
      [{ favicon: '/etc/hostname' }, /favicon: \/etc\/hostname is outside healthchecks.api-files-dir/],
      [{ logo: 'http://acme.example/logo.png' }, /logo: must be a https: URL/],
      [{ 'accent-color': 'red;background:url(x)' }, /accent-color: must be a colour #rgb or #rrggbb/],
      [{ footer: '[x](javascript:history.back)' }, /footer: must be a https: or http: or mailto: URL/],
      [{ homepage: 'javascript:alert(1)' }, /homepage: must be a https: or http: URL/],
      [{ hostnames: ['status.acme.test'] }, /hostnames\[0\]: status.acme.test is claimed by the status page acme/],
      [{ hostnames: ['http://x.test/'] }, /hostnames\[0\]: must be a host name/],
    ];
    for (const [branding, message] of cases) {
      const refused = await server.request('/api/v1/status-page', post({ ...base, ...branding }));
      expect(refused.status, JSON.stringify(branding)).toBe(400);
      expect(((await refused.json()) as { message: string }).message).toMatch(message);
    }
    // Every problem at once, each naming its field.
    const many = await server.request(
      '/api/v1/status-page',
      post({ ...base, 'accent-color': 'blue', homepage: 'ftp://acme.example/', hostnames: ['a b'] }),
    );
    expect(many.status).toBe(400);
    expect(((await many.json()) as { errors: { field: string }[] }).errors.map((error) => error.field)).toEqual([
      'accent-color',
      'homepage',
      'hostnames[0]',
    ]);
    expect((await server.request('/status/other')).status).toBe(404);
    // Under api-files-dir, an image: taken.
    const taken = await server.request('/api/v1/status-page', post({ ...base, logo: join(files, 'logo.png') }));
    expect(taken.status, await taken.clone().text()).toBe(201);
    expect((await server.request('/status/other/logo')).status).toBe(200);
  });

  it('refuses a config whose pages claim one host name twice', async () => {
    const file = join(files, 'twice.yaml');
    const page = (slug: string) => ({ slug, title: slug, hostnames: ['status.acme.test'], groups: [] });
    writeFileSync(file, JSON.stringify({ 'data-dir': files, 'status-pages': [page('a'), page('b')] }));
    const result = await runCli(['check-config', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('status-pages[1].hostnames[0]: status.acme.test is claimed by the page a too');
  });
});

describe.skipIf(!hasChromium())('a branded status page in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('reads light, dark and 390 px wide, with nothing broken; screenshots in test-artifacts/', async () => {
    const watched = await browser.open(`${server.url}/status/acme`);
    const { page } = watched;
    // The whole page, footer included.
    const shoot = async (name: string) => {
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    };
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.reload();
      expect(await page.locator('.banner').innerText()).toBe('Partial System Outage');
      expect(await page.locator('form.subscribe input[type=email]').isVisible()).toBe(true);
      // The logo loaded (the CSP let it), at its size.
      expect(
        await page.locator('header img').evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
      ).toBe(96);
      await shoot(`status-page-branded-${scheme}`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    // Nothing wider than the screen: no sideways scrolling on a phone.
    expect(
      await page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
            .scrollWidth,
      ),
    ).toBeLessThanOrEqual(390);
    await shoot('status-page-branded-390');
    expect(watched.pageErrors).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
  });
});
