/**
 * The dashboard of a cluster node (docs/dashboard.md, docs/cluster.md), in a real browser: two Vigie nodes on a real
 * nats-server, checks created through one, the page served by the other. The list has a Node column (each row the
 * node that ran its latest result), the nav a Cluster link, the Cluster view the members with the checks each owns,
 * and a member's link filters the list on its checks. A single node shows none of it (test/e2e/dashboard.test.ts).
 * The stream view of a node shows a partitioned stream's whole index (both nodes' partitions), searches it, and
 * shows live the events the other node's partitions index. A check run from both nodes (`locations: all`) shows each
 * location's latest result in its view.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchBrowser } from '../helpers/browser.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
import { allJoined } from '../helpers/cluster.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

describe.skipIf(!hasNatsServer() || !hasChromium())('dashboard of a cluster node', () => {
  let a: TestServer;
  let b: TestServer;
  let tcp: TcpTarget;
  let browser: Browser;

  beforeAll(async () => {
    const nats = await startNatsServer();
    tcp = await startTcpTarget();
    const cluster = (node: string) => ({ cluster: { node, nats: nats.clusterNats(node), 'member-ttl': '2s' } });
    [a, b, browser] = await Promise.all([
      startServer({ config: cluster('node-a') }),
      startServer({ config: cluster('node-b') }),
      launchBrowser(),
    ]);
    await allJoined([a, b]);
    const checks = Array.from({ length: 6 }, (_, i) => ({
      name: `db-${i}`,
      target: '127.0.0.1',
      port: tcp.port,
      interval: '1s',
      timeout: '1s',
    }));
    const created = await a.request('/api/v1/healthcheck/bulk', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ 'tcp-checks': checks }),
    });
    expect(created.status).toBe(201);
    await waitFor(
      async () =>
        ((await (await b.request('/api/v1/result')).json()) as { result: { node?: string }[] }).result.filter(
          (result) => result.node,
        ).length === 6,
      {
        timeoutMs: 20_000,
      },
    );
  }, 90_000);

  afterAll(async () => {
    await Promise.all([browser?.close(), a?.kill9(), b?.kill9(), tcp?.close()]);
    await stopAllNats();
  });

  it('shows the node of each result, the members with their checks, and filters the list by member', async () => {
    const watched = await browser.open(`${b.url}/frontend/index.html#/checks`);
    const { page } = watched;
    await expect.poll(() => page.locator('table.checks tbody tr').count(), { timeout: 10_000 }).toBe(6);
    await expect.poll(() => page.locator('table.checks thead th:text-is("Node")').count()).toBe(1);
    const shownNodes = new Set(await page.locator('table.checks td.node').allTextContents());
    const members = (await (await b.request('/api/v1/cluster/members')).json()) as {
      result: { node: string; checks: number }[];
    };
    expect([...shownNodes].every((node) => node === 'node-a' || node === 'node-b')).toBe(true);

    await page.click('nav a:text-is("Cluster")');
    await expect.poll(() => page.locator('table.members tbody tr').count()).toBe(2);
    const owned = (await page.locator('td.checks-owned').allTextContents()).map(Number);
    expect(owned.reduce((sum, count) => sum + count, 0)).toBe(6);
    expect(await page.locator('tr[data-node="node-b"] .badge.self').textContent()).toBe('this node');
    await watched.screenshot('cluster');

    // A member's link: the list of the checks whose latest result it ran.
    const busiest = [...members.result].sort((x, y) => y.checks - x.checks)[0] as { node: string; checks: number };
    await page.click(`tr[data-node="${busiest.node}"] a`);
    await expect.poll(() => page.locator('table.checks tbody tr').count(), { timeout: 10_000 }).toBe(busiest.checks);
    expect(new Set(await page.locator('table.checks td.node').allTextContents())).toEqual(new Set([busiest.node]));
    expect(watched.pageErrors).toEqual([]);
    await page.close();
  });
  it('shows, searches and follows live a stream whose partitions run on both nodes', async () => {
    const json = (method: string, body: unknown) => ({
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const config = Buffer.from('{:partition-by [:host] :actions {:action :index :params [[:host]]}}').toString(
      'base64',
    );
    expect((await a.request('/api/v1/stream/dash.cluster', json('POST', { config }))).status).toBe(200);
    await waitFor(
      async () =>
        ((await (await b.request('/api/v1/stream')).json()) as { streams: string[] }).streams.includes('dash.cluster'),
      { timeoutMs: 10_000 },
    );
    const now = Date.now() * 1e6;
    const events = Array.from({ length: 40 }, (_, i) => ({
      host: `web-${i}`,
      service: 'http',
      state: 'ok',
      metric: i,
      time: now,
    }));
    expect((await a.request('/api/v1/stream/dash.cluster', json('PUT', { events }))).status).toBe(200);

    const watched = await browser.open(`${b.url}/frontend/index.html#/streams`);
    const { page } = watched;
    const row = page.locator('tr.stream[data-name="dash.cluster"]');
    await expect.poll(() => row.locator('.index-size').textContent(), { timeout: 10_000 }).toBe('40');
    // The Cluster view counts the stream's partitions per member: 64 in all.
    await page.click('nav a:text-is("Cluster")');
    await expect
      .poll(async () =>
        (await page.locator('td.partitions-owned').allTextContents())
          .map(Number)
          .reduce((sum, count) => sum + count, 0),
      )
      .toBe(64);
    await page.click('nav a:text-is("Streams")');
    await row.locator('button.link').click();
    await page.fill('input[name="query"]', '[:always-true]');
    await page.click('.search button[type="submit"]');
    await expect.poll(() => page.locator('table.events tbody tr').count(), { timeout: 10_000 }).toBe(40);
    await expect.poll(() => page.locator('.feed').getAttribute('data-mode')).toBe('websocket');
    // Interest in the feed reaches the other node within 2 s: a probe host at a time until one shows without a
    // reload; then every new host shows.
    let probe = 0;
    const host = (name: string) => ({ host: name, service: 'http', state: 'ok', time: Date.now() * 1e6 });
    await expect
      .poll(
        async () => {
          await a.request('/api/v1/stream/dash.cluster', json('PUT', { events: [host(`probe-${probe++}`)] }));
          return page.locator('table.events tbody tr').count();
        },
        { timeout: 10_000, interval: 250 },
      )
      .toBeGreaterThan(40);
    const late = Array.from({ length: 10 }, (_, i) => host(`late-${i}`));
    expect((await a.request('/api/v1/stream/dash.cluster', json('PUT', { events: late }))).status).toBe(200);
    await expect
      .poll(() => page.locator('table.events tbody tr', { hasText: 'late-' }).count(), { timeout: 10_000 })
      .toBe(10);
    await watched.screenshot('cluster-stream');
    expect(watched.pageErrors).toEqual([]);
    await page.close();
  });

  it('shows each location of a check run from several places with its latest result', async () => {
    const check = {
      name: 'everywhere',
      target: '127.0.0.1',
      port: tcp.port,
      interval: '1s',
      timeout: '1s',
      locations: 'all',
    };
    const created = await a.request('/api/v1/healthcheck/tcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(check),
    });
    expect(created.status).toBe(201);
    await waitFor(
      async () =>
        (
          (await (await b.request('/api/v1/result/everywhere')).json()) as { locations?: { success?: boolean }[] }
        ).locations?.filter((location) => location.success).length === 2,
      { timeoutMs: 20_000, message: 'both locations ran it' },
    );
    const watched = await browser.open(`${b.url}/frontend/index.html#/check/everywhere`);
    const { page } = watched;
    await expect.poll(() => page.locator('table.locations tbody tr').count(), { timeout: 10_000 }).toBe(2);
    expect(new Set(await page.locator('table.locations td.node').allTextContents())).toEqual(
      new Set(['node-a', 'node-b']),
    );
    expect(await page.locator('table.locations .badge.ok').count()).toBe(2);
    expect(await page.locator('.locations-summary').textContent()).toBe('0 of 2 failing; the check fails when 2 do.');
    await watched.screenshot('cluster-locations');
    expect(watched.pageErrors).toEqual([]);
    await page.close();
  });
});
