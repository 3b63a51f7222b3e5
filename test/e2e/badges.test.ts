/**
 * Badges (docs/http-api.md, "Badges"): SVG images of a check's status and uptime, shields.io style, cacheable for
 * 60 s, sized for their text; removed with the result API.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

interface Badge {
  width: number;
  /** The label and message texts, as drawn. */
  texts: string[];
  /** Fill colours of the two halves. */
  fills: string[];
  title: string;
}

/** Parses a badge as XML (it must be well-formed) and reads what a reader of the page would see. */
function parseBadge(svg: string): Badge {
  expect(XMLValidator.validate(svg)).toBe(true);
  const root = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(svg).svg as Record<
    string,
    unknown
  >;
  const texts: string[] = [];
  const fills: string[] = [];
  // The shadows of the texts are drawn under `aria-hidden` groups: what a reader sees is the rest.
  const walk = (node: unknown, tag: string): void => {
    if (Array.isArray(node)) return node.forEach((child) => walk(child, tag));
    if (typeof node !== 'object' || node === null) return;
    const element = node as Record<string, unknown>;
    if (element['aria-hidden'] === 'true') return;
    if (tag === 'text' && typeof element['#text'] === 'string') texts.push(element['#text']);
    if (tag === 'rect' && typeof element.fill === 'string' && element.fill !== 'url(#s)') fills.push(element.fill);
    for (const [key, child] of Object.entries(element)) walk(child, key);
  };
  walk(root, 'svg');
  return { width: Number(root.width), texts, fills, title: String(root.title) };
}

describe('badges', () => {
  let server: TestServer;
  let target: TcpTarget;
  beforeAll(async () => {
    target = await startTcpTarget();
    const closed = await closedPort();
    server = await startServer({
      config: {
        'tcp-checks': [
          {
            name: 'web',
            description: 'up',
            target: target.host,
            port: target.port,
            interval: '200ms',
            timeout: '200ms',
          },
          {
            name: 'a-check-with-a-much-longer-name',
            description: 'down',
            target: '127.0.0.1',
            port: closed,
            interval: '200ms',
            timeout: '200ms',
            // Down at its first failure (pending, shown up, before its failure-threshold otherwise).
            'failure-threshold': 1,
          },
        ],
        // Its first run lasts a minute: no result meanwhile.
        'command-checks': [
          {
            name: 'slow',
            description: 'not run yet',
            command: 'sleep',
            arguments: ['60'],
            interval: '2m',
            timeout: '90s',
          },
        ],
      },
    });
    await waitFor(
      async () =>
        (await server.request('/api/v1/result/web')).status === 200 &&
        (await server.request('/api/v1/result/a-check-with-a-much-longer-name')).status === 200,
    );
  });
  afterAll(async () => {
    await server?.kill9();
    await target?.close();
  });

  it('draws the status of the latest result, cacheable for 60 s', async () => {
    const response = await server.request('/api/v1/badge/web/status.svg');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=60');
    const up = parseBadge(await response.text());
    expect(up.texts).toEqual(['web', 'up']);
    expect(up.title).toBe('web: up');

    const down = parseBadge(
      await (await server.request('/api/v1/badge/a-check-with-a-much-longer-name/status.svg')).text(),
    );
    expect(down.texts).toEqual(['a-check-with-a-much-longer-name', 'down']);
    expect(down.fills[1]).not.toBe(up.fills[1]);
    // Wider for a longer text: the width follows the words.
    expect(down.width).toBeGreaterThan(up.width + 100);
  });

  it('says when a check has not run yet', async () => {
    const badge = parseBadge(await (await server.request('/api/v1/badge/slow/status.svg')).text());
    expect(badge.texts).toEqual(['slow', 'not run yet']);
    const uptime = parseBadge(await (await server.request('/api/v1/badge/slow/uptime-24h.svg')).text());
    expect(uptime.texts).toEqual(['uptime 24h', 'no data']);
  });

  it('draws the uptime over 24 h, 7 d and 30 d', async () => {
    for (const window of ['24h', '7d', '30d']) {
      const response = await server.request(`/api/v1/badge/web/uptime-${window}.svg`);
      expect(response.status).toBe(200);
      expect(parseBadge(await response.text()).texts).toEqual([`uptime ${window}`, '100%']);
      const failing = parseBadge(
        await (await server.request(`/api/v1/badge/a-check-with-a-much-longer-name/uptime-${window}.svg`)).text(),
      );
      expect(failing.texts).toEqual([`uptime ${window}`, '0.00%']);
    }
  });

  it('answers 404 for an unknown check and an unknown badge', async () => {
    const unknown = await server.request('/api/v1/badge/nope/status.svg');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ message: 'Healthcheck nope not found' });
    expect((await server.request('/api/v1/badge/web/uptime-1y.svg')).status).toBe(404);
  });

  it('is removed with the result API', async () => {
    const disabled = await startServer({ config: { http: { 'disable-result-api': true } } });
    try {
      expect((await disabled.request('/api/v1/badge/web/status.svg')).status).toBe(404);
    } finally {
      await disabled.kill9();
    }
  });
});
