/**
 * Maintenance windows end to end (docs/checks.md, "Maintenance windows"): the real server with TCP checks against a
 * local port, their results exported to a stream that alerts a webhook collector the test runs. A window by label
 * marks the results of the checks having the label (API, history, SQLite), leaves their uptime untouched and
 * silences the webhook (the drop counted); a repeating window marks results only while it is on; the config
 * file's windows are listed and cannot be changed through the API; refusals name the field.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({ method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

interface Result {
  name: string;
  success: boolean;
  'healthcheck-timestamp': number;
  maintenance?: true;
}

describe('maintenance windows in the running service', () => {
  let target: TcpTarget;
  let hooks: HttpTarget;
  let server: TestServer;

  const check = (name: string, labels: Record<string, string>) => ({ name, target: '127.0.0.1', port: target.port, interval: '1s', timeout: '1s', labels });

  beforeAll(async () => {
    target = await startTcpTarget();
    hooks = await startHttpTarget();
    server = await startServer({
      config: {
        'tcp-checks': [check('db', { team: 'ops' }), check('web', { team: 'web' })],
        exporters: { stream: [{ name: 'to-alerts', stream: 'alerts' }] },
        maintenance: [{ name: 'yearly', start: '2020-01-01T00:00:00Z', duration: '1h', every: '8760h', checks: ['web'] }],
        streams: { outputs: { hook: { type: 'webhook', url: `${hooks.origin}/alert`, 'flush-interval': '20ms' } } },
      },
    });
    const stream = '{:actions {:action :output! :params [:hook]}}';
    expect((await server.request('/api/v1/stream/alerts', json('POST', { config: b64(stream) }))).status).toBe(200);
  });
  afterAll(async () => {
    await server?.kill9();
    await hooks?.close();
    await target?.close();
  });

  const history = async (name: string): Promise<Result[]> => ((await (await server.request(`/api/v1/result/${name}/history`)).json()) as { result: Result[] }).result;
  const runs1h = async (name: string): Promise<number> =>
    ((await (await server.request(`/api/v1/result/${name}/uptime`)).json()) as { uptime: { '1h': { runs: number } } }).uptime['1h'].runs;
  const hookEvents = () => hooks.requests.map((request) => JSON.parse(request.body) as { healthcheck: string; maintenance?: boolean });

  it('a window by label marks results everywhere, leaves uptime alone and silences the notification output, counted', async () => {
    await waitFor(async () => (await history('db')).length >= 2 && hookEvents().some((event) => event.healthcheck === 'db'), { timeoutMs: 15_000 });
    const now = new Date(Date.now() - 1000).toISOString();
    const created = await server.request('/api/v1/maintenance', json('POST', { name: 'db-upgrade', start: now, duration: '10m', labels: { team: 'ops' } }));
    expect(created.status).toBe(201);
    expect(((await created.json()) as { result: unknown }).result).toMatchObject({ name: 'db-upgrade', duration: '10m0s', labels: { team: 'ops' }, source: 'api', active: true });

    // Results of `db` from now on are in maintenance; `web` has no team=ops label and is not.
    const since = Math.ceil(Date.now() / 1000) + 1;
    await waitFor(async () => (await history('db')).filter((result) => result['healthcheck-timestamp'] > since).length >= 3, { timeoutMs: 15_000 });
    const runsBefore = await runs1h('db');
    const hooksBefore = hookEvents().filter((event) => event.healthcheck === 'db').length;
    const dbAfter = (await history('db')).filter((result) => result['healthcheck-timestamp'] > since);
    expect(dbAfter.every((result) => result.maintenance === true)).toBe(true);
    expect((await history('web')).filter((result) => result['healthcheck-timestamp'] > since).some((result) => result.maintenance)).toBe(false);
    const latest = (await (await server.request('/api/v1/result/db')).json()) as Result;
    expect(latest.maintenance).toBe(true);

    // Three more runs in maintenance: the uptime does not count them, the webhook hears nothing of them.
    const last = dbAfter[0]?.['healthcheck-timestamp'] ?? since;
    await waitFor(async () => (await history('db')).filter((result) => result['healthcheck-timestamp'] > last).length >= 3, { timeoutMs: 15_000 });
    expect(await runs1h('db')).toBe(runsBefore);
    expect(hookEvents().filter((event) => event.healthcheck === 'db').length).toBe(hooksBefore);
    expect(hookEvents().some((event) => event.maintenance)).toBe(false);
    const metrics = await (await server.request('/metrics')).text();
    const dropped = Number(/stream_output_dropped_total\{output="hook",reason="maintenance"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    expect(dropped).toBeGreaterThanOrEqual(3);

    const badge = await (await server.request('/api/v1/badge/db/status.svg')).text();
    expect(badge).toContain('maintenance');

    // Deleted: db's results are plain again, and counted.
    expect((await server.request('/api/v1/maintenance/db-upgrade', { method: 'DELETE' })).status).toBe(200);
    expect((await server.request('/api/v1/maintenance/db-upgrade')).status).toBe(404);
    const ended = Math.ceil(Date.now() / 1000) + 1;
    await waitFor(async () => (await history('db')).filter((result) => result['healthcheck-timestamp'] > ended).length >= 2, { timeoutMs: 15_000 });
    expect((await history('db')).filter((result) => result['healthcheck-timestamp'] > ended).some((result) => result.maintenance)).toBe(false);
    expect(await runs1h('db')).toBeGreaterThan(runsBefore);
  });

  it('a repeating window marks the results of the checks it names only while it is on', async () => {
    // On for 2 s of every 4 s: eight seconds of 1 s runs see both.
    const start = new Date(Math.floor(Date.now() / 4000) * 4000 - 40_000).toISOString();
    const created = await server.request('/api/v1/maintenance', json('POST', { name: 'flap', start, duration: '2s', every: '4s', checks: ['web'] }));
    expect(created.status).toBe(201);
    const since = Math.ceil(Date.now() / 1000) + 1;
    await waitFor(async () => (await history('web')).filter((result) => result['healthcheck-timestamp'] > since).length >= 8, { timeoutMs: 20_000 });
    const marks = (await history('web')).filter((result) => result['healthcheck-timestamp'] > since).map((result) => result.maintenance === true);
    expect(marks).toContain(true);
    expect(marks).toContain(false);
    const listed = (await (await server.request('/api/v1/maintenance/flap')).json()) as { every: string; 'next-start': string; 'next-end': string };
    expect(listed.every).toBe('4s');
    expect(Date.parse(listed['next-end']) - Date.parse(listed['next-start'])).toBe(2000);
    expect((await server.request('/api/v1/maintenance/flap', { method: 'DELETE' })).status).toBe(200);
  });

  it("lists the config file's windows, which the API cannot change, and refuses a bad window naming the field", async () => {
    const list = (await (await server.request('/api/v1/maintenance')).json()) as { result: { name: string; source: string }[] };
    expect(list.result).toContainEqual(expect.objectContaining({ name: 'yearly', source: 'configuration', every: '8760h0m0s', checks: ['web'] }));
    const taken = await server.request('/api/v1/maintenance', json('POST', { name: 'yearly', start: '2026-01-01T00:00:00Z', duration: '1h' }));
    expect(taken.status).toBe(409);
    expect(await taken.json()).toEqual({ message: 'maintenance window yearly comes from the configuration file; change it there' });
    expect((await server.request('/api/v1/maintenance/yearly', { method: 'DELETE' })).status).toBe(409);
    const refusals: [unknown, string][] = [
      [{ name: 'x', start: 'tomorrow', duration: '1h' }, 'Invalid maintenance window: start: must be an RFC 3339 date and time with a zone (2026-12-01T22:00:00Z), got "tomorrow"'],
      [{ name: 'x', start: '2026-01-01T00:00:00Z' }, 'Invalid maintenance window: duration: set exactly one of duration and end'],
      [{ name: 'x', start: '2026-01-01T00:00:00Z', end: '2025-01-01T00:00:00Z' }, 'Invalid maintenance window: end: must be after start (2026-01-01T00:00:00Z), got "2025-01-01T00:00:00Z"'],
      [{ name: 'x', start: '2026-01-01T00:00:00Z', duration: '1h', every: '30m' }, 'Invalid maintenance window: every: must be longer than the window (1h0m0s), or the window never ends; got "30m"'],
      [{ name: 'x', start: '2026-01-01T00:00:00Z', duration: '1h', lables: {} }, 'Invalid maintenance window: unknown key "lables" (did you mean "labels"?)'],
      [[], 'Invalid maintenance window: the body must be a JSON object'],
    ];
    for (const [body, message] of refusals) {
      const answer = await server.request('/api/v1/maintenance', json('POST', body));
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(await answer.json()).toEqual({ message });
    }
  });

  it('keeps API windows across a restart, and results in maintenance are marked in SQLite', async () => {
    const created = await server.request('/api/v1/maintenance', json('POST', { name: 'kept', start: new Date(Date.now() - 1000).toISOString(), end: new Date(Date.now() + 3_600_000).toISOString(), checks: ['db'] }));
    expect(created.status).toBe(201);
    const since = Math.ceil(Date.now() / 1000) + 1;
    await waitFor(async () => (await history('db')).filter((result) => result['healthcheck-timestamp'] > since).length >= 2, { timeoutMs: 15_000 });
    expect(await server.stop()).toBe(0);
    const db = new Database(join(server.dataDir, 'vigie.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('select maintenance, count(*) as n from healthcheck_history where name = ? and timestamp_s > ? group by maintenance').all('db', since) as { maintenance: number; n: number }[];
      expect(rows.find((row) => row.maintenance === 1)?.n ?? 0).toBeGreaterThanOrEqual(2);
      expect((db.prepare('select maintenance from healthcheck_results where name = ?').get('db') as { maintenance: number }).maintenance).toBe(1);
    } finally {
      db.close();
    }
    server = await startServer({ dataDir: server.dataDir, config: readFileSync(server.configFile, 'utf8') });
    const listed = (await (await server.request('/api/v1/maintenance/kept')).json()) as { source: string; active: boolean };
    expect(listed).toMatchObject({ source: 'api', active: true });
  });
});
