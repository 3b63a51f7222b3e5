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
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

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

  const check = (name: string, labels: Record<string, string>) => ({
    name,
    target: '127.0.0.1',
    port: target.port,
    interval: '1s',
    timeout: '1s',
    labels,
  });

  beforeAll(async () => {
    target = await startTcpTarget();
    hooks = await startHttpTarget();
    server = await startServer({
      config: {
        'tcp-checks': [check('db', { team: 'ops' }), check('web', { team: 'web' })],
        exporters: { stream: [{ name: 'to-alerts', stream: 'alerts' }] },
        maintenance: [
          { name: 'yearly', start: '2020-01-01T00:00:00Z', duration: '1h', every: '8760h', checks: ['web'] },
        ],
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

  const history = async (name: string): Promise<Result[]> =>
    ((await (await server.request(`/api/v1/result/${name}/history`)).json()) as { result: Result[] }).result;
  const runs1h = async (name: string): Promise<number> =>
    ((await (await server.request(`/api/v1/result/${name}/uptime`)).json()) as { uptime: { '1h': { runs: number } } })
      .uptime['1h'].runs;
  const hookEvents = () =>
    hooks.requests.map((request) => JSON.parse(request.body) as { healthcheck: string; maintenance?: boolean });

  // Four waits of up to 15 s each: the test's own limit is over their sum, so a slow machine fails a wait, which
  // says what was missing, rather than the test's timeout.
  it('a window by label marks results everywhere, leaves uptime alone and silences the notification output, counted', async () => {
    await waitFor(
      async () => (await history('db')).length >= 2 && hookEvents().some((event) => event.healthcheck === 'db'),
      { timeoutMs: 15_000 },
    );
    const now = new Date(Date.now() - 1000).toISOString();
    const created = await server.request(
      '/api/v1/maintenance',
      json('POST', { name: 'db-upgrade', start: now, duration: '10m', labels: { team: 'ops' } }),
    );
    expect(created.status).toBe(201);
    expect(((await created.json()) as { result: unknown }).result).toMatchObject({
      name: 'db-upgrade',
      duration: '10m0s',
      labels: { team: 'ops' },
      source: 'api',
      active: true,
    });

    // Results of `db` from now on are in maintenance; `web` has no team=ops label and is not.
    const since = Math.ceil(Date.now() / 1000) + 1;
    await waitFor(
      async () => (await history('db')).filter((result) => result['healthcheck-timestamp'] > since).length >= 3,
      { timeoutMs: 15_000 },
    );
    const runsBefore = await runs1h('db');
    const hooksBefore = hookEvents().filter((event) => event.healthcheck === 'db').length;
    const dbAfter = (await history('db')).filter((result) => result['healthcheck-timestamp'] > since);
    expect(dbAfter.every((result) => result.maintenance === true)).toBe(true);
    expect(
      (await history('web'))
        .filter((result) => result['healthcheck-timestamp'] > since)
        .some((result) => result.maintenance),
    ).toBe(false);
    const latest = (await (await server.request('/api/v1/result/db')).json()) as Result;
    expect(latest.maintenance).toBe(true);

    // Three more runs in maintenance: the uptime does not count them, the webhook hears nothing of them.
    const last = dbAfter[0]?.['healthcheck-timestamp'] ?? since;
    await waitFor(
      async () => (await history('db')).filter((result) => result['healthcheck-timestamp'] > last).length >= 3,
      { timeoutMs: 15_000 },
    );
    expect(await runs1h('db')).toBe(runsBefore);
    expect(hookEvents().filter((event) => event.healthcheck === 'db').length).toBe(hooksBefore);
    expect(hookEvents().some((event) => event.maintenance)).toBe(false);
    const metrics = await (await server.request('/metrics')).text();
    const dropped = Number(
      /stream_output_dropped_total\{output="hook",reason="maintenance"\} (\d+)/.exec(metrics)?.[1] ?? 0,
    );
    expect(dropped).toBeGreaterThanOrEqual(3);

    const badge = await (await server.request('/api/v1/badge/db/status.svg')).text();
    expect(badge).toContain('maintenance');

    // Deleted: db's results are plain again, and counted.
    expect((await server.request('/api/v1/maintenance/db-upgrade', { method: 'DELETE' })).status).toBe(200);
    expect((await server.request('/api/v1/maintenance/db-upgrade')).status).toBe(404);
    const ended = Math.ceil(Date.now() / 1000) + 1;
    await waitFor(
      async () => (await history('db')).filter((result) => result['healthcheck-timestamp'] > ended).length >= 2,
      { timeoutMs: 15_000 },
    );
    expect(
      (await history('db'))
        .filter((result) => result['healthcheck-timestamp'] > ended)
        .some((result) => result.maintenance),
    ).toBe(false);
    expect(await runs1h('db')).toBeGreaterThan(runsBefore);
  }, 90_000);

  it('a repeating window marks the results of the checks it names only while it is on', async () => {
    // On for 2 s of every 4 s: eight seconds of 1 s runs see both.
    const start = new Date(Math.floor(Date.now() / 4000) * 4000 - 40_000).toISOString();
    const created = await server.request(
      '/api/v1/maintenance',
      json('POST', { name: 'flap', start, duration: '2s', every: '4s', checks: ['web'] }),
    );
    expect(created.status).toBe(201);
    const since = Math.ceil(Date.now() / 1000) + 1;
    await waitFor(
      async () => (await history('web')).filter((result) => result['healthcheck-timestamp'] > since).length >= 8,
      { timeoutMs: 20_000 },
    );
    const marks = (await history('web'))
      .filter((result) => result['healthcheck-timestamp'] > since)
      .map((result) => result.maintenance === true);
    expect(marks).toContain(true);
    expect(marks).toContain(false);
    const listed = (await (await server.request('/api/v1/maintenance/flap')).json()) as {
      every: string;
      'next-start': string;
      'next-end': string;
    };
    expect(listed.every).toBe('4s');
    expect(Date.parse(listed['next-end']) - Date.parse(listed['next-start'])).toBe(2000);
    expect((await server.request('/api/v1/maintenance/flap', { method: 'DELETE' })).status).toBe(200);
  }, 60_000);

  it("lists the config file's windows, which the API cannot change, and refuses a bad window naming the field", async () => {
    const list = (await (await server.request('/api/v1/maintenance')).json()) as {
      result: { name: string; source: string }[];
    };
    expect(list.result).toContainEqual(
      expect.objectContaining({ name: 'yearly', source: 'configuration', every: '8760h0m0s', checks: ['web'] }),
    );
    const taken = await server.request(
      '/api/v1/maintenance',
      json('POST', { name: 'yearly', start: '2026-01-01T00:00:00Z', duration: '1h' }),
    );
    expect(taken.status).toBe(409);
    expect(await taken.json()).toEqual({
      message: 'maintenance window yearly comes from the configuration file; change it there',
    });
    expect((await server.request('/api/v1/maintenance/yearly', { method: 'DELETE' })).status).toBe(409);
    const refusals: [unknown, string][] = [
      [
        { name: 'x', start: 'tomorrow', duration: '1h' },
        'Invalid maintenance window: start: must be an RFC 3339 date and time with a zone (2026-12-01T22:00:00Z), got "tomorrow"',
      ],
      [
        { name: 'x', start: '2026-01-01T00:00:00Z' },
        'Invalid maintenance window: duration: set exactly one of duration and end',
      ],
      [
        { name: 'x', start: '2026-01-01T00:00:00Z', end: '2025-01-01T00:00:00Z' },
        'Invalid maintenance window: end: must be after start (2026-01-01T00:00:00Z), got "2025-01-01T00:00:00Z"',
      ],
      [
        { name: 'x', start: '2026-01-01T00:00:00Z', duration: '1h', every: '30m' },
        'Invalid maintenance window: every: must be longer than the window (1h0m0s), or the window never ends; got "30m"',
      ],
      [
        { name: 'x', start: '2026-01-01T00:00:00Z', duration: '1h', lables: {} },
        'Invalid maintenance window: unknown key "lables" (did you mean "labels"?)',
      ],
      [[], 'Invalid maintenance window: the body must be a JSON object'],
    ];
    for (const [body, message] of refusals) {
      const answer = await server.request('/api/v1/maintenance', json('POST', body));
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(await answer.json()).toMatchObject({ message });
    }
  });

  it('keeps API windows across a restart, and results in maintenance are marked in SQLite', async () => {
    const created = await server.request(
      '/api/v1/maintenance',
      json('POST', {
        name: 'kept',
        start: new Date(Date.now() - 1000).toISOString(),
        end: new Date(Date.now() + 3_600_000).toISOString(),
        checks: ['db'],
      }),
    );
    expect(created.status).toBe(201);
    const since = Math.ceil(Date.now() / 1000) + 1;
    await waitFor(
      async () => (await history('db')).filter((result) => result['healthcheck-timestamp'] > since).length >= 2,
      { timeoutMs: 15_000 },
    );
    expect(await server.stop()).toBe(0);
    const db = new Database(join(server.dataDir, 'vigie.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db
        .prepare(
          'select maintenance, count(*) as n from healthcheck_history where name = ? and timestamp_s > ? group by maintenance',
        )
        .all('db', since) as { maintenance: number; n: number }[];
      expect(rows.find((row) => row.maintenance === 1)?.n ?? 0).toBeGreaterThanOrEqual(2);
      expect(
        (db.prepare('select maintenance from healthcheck_results where name = ?').get('db') as { maintenance: number })
          .maintenance,
      ).toBe(1);
    } finally {
      db.close();
    }
    server = await startServer({ dataDir: server.dataDir, config: readFileSync(server.configFile, 'utf8') });
    const listed = (await (await server.request('/api/v1/maintenance/kept')).json()) as {
      source: string;
      active: boolean;
    };
    expect(listed).toMatchObject({ source: 'api', active: true });
  });
});

describe('maintenance windows under hostile input', () => {
  let server: TestServer;
  const post = (body: unknown) => server.request('/api/v1/maintenance', json('POST', body));
  const names = async (): Promise<string[]> => {
    const answer = await server.request('/api/v1/maintenance');
    expect(answer.status).toBe(200);
    return ((await answer.json()) as { result: { name: string }[] }).result.map((window) => window.name);
  };
  const storedNames = (): string[] => {
    const db = new Database(join(server.dataDir, 'vigie.db'), { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('select name from maintenance_windows order by name').all() as { name: string }[]).map(
        (row) => row.name,
      );
    } finally {
      db.close();
    }
  };

  beforeAll(async () => {
    server = await startServer({
      config: {
        healthchecks: { 'max-maintenance-windows': 4 },
        maintenance: [{ name: 'from-file', start: '2020-01-01T00:00:00Z', duration: '1h' }],
      },
    });
  });
  afterAll(async () => {
    await server?.kill9();
  });

  it("refuses a duration past Go's bound with a 400 naming the field, and stores nothing", async () => {
    const refusals: [unknown, string][] = [
      [
        { name: 'huge', start: '2026-01-01T00:00:00Z', duration: '1h', every: '9999999999999h' },
        'every: time: invalid duration "9999999999999h": out of range (at most 2562047h47m16.854775807s)',
      ],
      [
        { name: 'huge', start: '2026-01-01T00:00:00Z', duration: '2562047h47m16.854775808s' },
        'duration: time: invalid duration "2562047h47m16.854775808s": out of range (at most 2562047h47m16.854775807s)',
      ],
      // Within Go's bound, but it would end after the last date RFC 3339 can write.
      [
        { name: 'huge', start: '9999-12-31T00:00:00Z', duration: '48h' },
        'duration: the window would end after 9999-12-31T23:59:59.999Z',
      ],
    ];
    for (const [body, problem] of refusals) {
      const answer = await post(body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(await answer.json()).toMatchObject({ message: `Invalid maintenance window: ${problem}` });
    }
    expect(await names()).toEqual(['from-file']);
    expect(storedNames()).toEqual([]);
    expect((await post({ name: 'fine', start: '2026-01-01T00:00:00Z', duration: '1h' })).status).toBe(201);
    expect(await names()).toEqual(['fine', 'from-file']);
    expect((await server.request('/api/v1/maintenance/fine', { method: 'DELETE' })).status).toBe(200);
  });

  it('refuses a date that does not exist (2026-02-30 is not March 2), in start and in end', async () => {
    const refusals: [unknown, string][] = [
      [
        { name: 'feb', start: '2026-02-30T00:00:00Z', duration: '1h' },
        'start: "2026-02-30T00:00:00Z" is not a date and time: no day 30 in 2026-02',
      ],
      [
        { name: 'feb', start: '2026-02-01T00:00:00Z', end: '2026-02-29T00:00:00Z' },
        'end: "2026-02-29T00:00:00Z" is not a date and time: no day 29 in 2026-02',
      ],
      [
        { name: 'feb', start: '2026-01-01T24:00:00Z', duration: '1h' },
        'start: "2026-01-01T24:00:00Z" is not a date and time: hour 24 is past 23',
      ],
      [
        { name: 'feb', start: '2026-13-01T00:00:00Z', duration: '1h' },
        'start: "2026-13-01T00:00:00Z" is not a date and time: no month 13',
      ],
    ];
    for (const [body, problem] of refusals) {
      const answer = await post(body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(await answer.json()).toMatchObject({ message: `Invalid maintenance window: ${problem}` });
    }
    const leap = await post({ name: 'leap', start: '2028-02-29T00:00:00+01:00', duration: '1h' });
    expect(leap.status).toBe(201);
    expect(((await leap.json()) as { result: { start: string } }).result.start).toBe('2028-02-28T23:00:00.000Z');
    expect(storedNames()).toEqual(['leap']);
    expect((await server.request('/api/v1/maintenance/leap', { method: 'DELETE' })).status).toBe(200);
  });

  it("caps the windows at healthchecks.max-maintenance-windows (the file's count too); a replace is no new window", async () => {
    for (const name of ['a', 'b', 'c'])
      expect((await post({ name, start: '2026-01-01T00:00:00Z', duration: '1h' })).status).toBe(201);
    const over = await post({ name: 'd', start: '2026-01-01T00:00:00Z', duration: '1h' });
    expect(over.status).toBe(400);
    expect(await over.json()).toMatchObject({
      message:
        'Invalid maintenance window: there are already 4 windows, the most healthchecks.max-maintenance-windows allows; delete one first',
    });
    expect(storedNames()).toEqual(['a', 'b', 'c']);
    expect((await post({ name: 'c', start: '2026-01-01T00:00:00Z', duration: '2h' })).status).toBe(201);
    expect((await server.request('/api/v1/maintenance/c', { method: 'DELETE' })).status).toBe(200);
    expect((await post({ name: 'd', start: '2026-01-01T00:00:00Z', duration: '1h' })).status).toBe(201);
    expect(await names()).toEqual(['a', 'b', 'd', 'from-file']);
  });

  it('caps the labels and the check names of a window', async () => {
    const labels = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    const refusals: [unknown, string][] = [
      [
        { name: 'big', start: '2026-01-01T00:00:00Z', duration: '1h', labels },
        'labels: has 65 labels, more than the limit of 64 (healthchecks.max-labels)',
      ],
      [
        { name: 'big', start: '2026-01-01T00:00:00Z', duration: '1h', labels: { team: 'x'.repeat(1025) } },
        'labels.team: is 1025 bytes long, more than the limit of 1024 (healthchecks.max-label-value-bytes)',
      ],
      [
        {
          name: 'big',
          start: '2026-01-01T00:00:00Z',
          duration: '1h',
          checks: Array.from({ length: 1001 }, (_, i) => `check-${i}`),
        },
        'checks: has 1001 check names, more than the limit of 1000 (healthchecks.max-maintenance-window-checks)',
      ],
      [
        { name: 'big', start: '2026-01-01T00:00:00Z', duration: '1h', checks: ['x'.repeat(256)] },
        'checks[0]: must be at most 255 characters long',
      ],
      [
        { name: 'x'.repeat(256), start: '2026-01-01T00:00:00Z', duration: '1h' },
        'name: must be at most 255 characters long',
      ],
    ];
    for (const [body, problem] of refusals) {
      const answer = await post(body);
      expect(answer.status, problem).toBe(400);
      expect(await answer.json()).toMatchObject({ message: `Invalid maintenance window: ${problem}` });
    }
    expect(storedNames()).toEqual(['a', 'b', 'd']);
  });

  it('skips and logs a stored window that no longer reads, and still lists the others after a restart', async () => {
    expect(await server.stop()).toBe(0);
    const db = new Database(join(server.dataDir, 'vigie.db'), { fileMustExist: true });
    try {
      const insert = db.prepare('insert into maintenance_windows (name, definition, created_at_s) values (?, ?, 0)');
      // What today's code would have stored before durations were bounded, one past the dates RFC 3339 writes,
      // and a row someone edited by hand.
      insert.run(
        'overflow',
        JSON.stringify({
          name: 'overflow',
          start: '2026-01-01T00:00:00.000Z',
          duration: '1h0m0s',
          every: '9999999999999h0m0s',
        }),
      );
      insert.run('far', JSON.stringify({ name: 'far', start: '9999-12-31T00:00:00.000Z', duration: '2562047h0m0s' }));
      insert.run('garbled', '{"name": "garbled", "start": ');
    } finally {
      db.close();
    }
    server = await startServer({ dataDir: server.dataDir, config: readFileSync(server.configFile, 'utf8') });
    expect(await names()).toEqual(['a', 'b', 'd', 'from-file']);
    const skipped = server.logs
      .filter((line) => line.includes('"window"'))
      .map((line) => JSON.parse(line) as { level: number; window: string; msg: string });
    expect(skipped.map((line) => [line.level, line.window])).toEqual([
      [40, 'overflow'],
      [40, 'far'],
      [40, 'garbled'],
    ]);
    expect(skipped[0]?.msg).toBe(
      'stored maintenance window "overflow" skipped: every: time: invalid duration "9999999999999h0m0s": out of range (at most 2562047h47m16.854775807s)',
    );
    expect(skipped[2]?.msg).toMatch(/^stored maintenance window "garbled" skipped: .*JSON/);
    const metrics = await (await server.request('/metrics')).text();
    expect(metrics).toContain('maintenance_windows_skipped_total{reason="unreadable"} 3');
    expect((await server.request('/api/v1/maintenance/overflow')).status).toBe(404);
    // A skipped row can be deleted (it is in no listing) or replaced by a good window; POSTs work meanwhile.
    expect((await server.request('/api/v1/maintenance/garbled', { method: 'DELETE' })).status).toBe(200);
    expect((await server.request('/api/v1/maintenance/garbled', { method: 'DELETE' })).status).toBe(404);
    expect((await server.request('/api/v1/maintenance/d', { method: 'DELETE' })).status).toBe(200);
    expect((await post({ name: 'overflow', start: '2026-01-01T00:00:00Z', duration: '1h', every: '24h' })).status).toBe(
      201,
    );
    expect(storedNames()).toEqual(['a', 'b', 'far', 'overflow']);
    expect(await names()).toEqual(['a', 'b', 'from-file', 'overflow']);
  });
});
