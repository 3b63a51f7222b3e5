/**
 * The dashboard of a cluster node (docs/dashboard.md, docs/cluster.md), in a real browser: two Vigie nodes on a real
 * nats-server, checks created through one, the page served by the other. The list has a Node column (each row the
 * node that ran its latest result), the nav a Cluster link, the Cluster view the members with the checks each owns,
 * and a member's link filters the list on its checks. A single node shows none of it (test/e2e/dashboard.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchBrowser } from '../helpers/browser.ts';
import { hasNatsServer, startNatsServer, stopAllNats } from '../helpers/nats.ts';
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
    const cluster = (node: string) => ({ cluster: { node, nats: { servers: [nats.url] }, 'member-ttl': '2s' } });
    [a, b, browser] = await Promise.all([startServer({ config: cluster('node-a') }), startServer({ config: cluster('node-b') }), launchBrowser()]);
    await waitFor(async () => ((await (await b.request('/api/v1/cluster/members')).json()) as { result: unknown[] }).result.length === 2, { timeoutMs: 20_000 });
    const checks = Array.from({ length: 6 }, (_, i) => ({ name: `db-${i}`, target: '127.0.0.1', port: tcp.port, interval: '1s', timeout: '1s' }));
    const created = await a.request('/api/v1/healthcheck/bulk', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ 'tcp-checks': checks }) });
    expect(created.status).toBe(201);
    await waitFor(async () => ((await (await b.request('/api/v1/result')).json()) as { result: { node?: string }[] }).result.filter((result) => result.node).length === 6, {
      timeoutMs: 20_000,
    });
  }, 60_000);

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
    const members = (await (await b.request('/api/v1/cluster/members')).json()) as { result: { node: string; checks: number }[] };
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
});
