/**
 * The uptime report (docs/status-pages.md, "Uptime report"): per check over a period given in unix seconds or RFC
 * 3339, filtered by labels, maintenance excluded (the aggregates never count it), as JSON and as CSV.
 */
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { dayStart, seedDailyUptime } from '../helpers/uptime.ts';
import { waitFor } from '../helpers/wait.ts';

interface ReportRow {
  name: string;
  labels?: Record<string, string>;
  runs: number;
  successes: number;
  ratio: number | null;
  'mean-duration': number | null;
}

describe('uptime report', () => {
  let server: TestServer;
  let tcp: TcpTarget;
  beforeAll(async () => {
    tcp = await startTcpTarget();
    const closed = await closedPort();
    server = await startServer({
      config: {
        'tcp-checks': [
          {
            name: 'web, "front"',
            target: '127.0.0.1',
            port: tcp.port,
            interval: '1s',
            timeout: '1s',
            labels: { env: 'prod', team: 'web' },
          },
          {
            name: 'db',
            target: '127.0.0.1',
            port: closed,
            interval: '1s',
            timeout: '1s',
            labels: { env: 'prod', team: 'db' },
          },
          {
            name: '=cmd',
            target: '127.0.0.1',
            port: tcp.port,
            interval: '1s',
            timeout: '1s',
            labels: { env: 'staging' },
          },
        ],
      },
    });
    await waitFor(
      async () =>
        ((await (await server.request('/api/v1/result')).json()) as { result: unknown[] }).result.length === 3,
      { timeoutMs: 15_000 },
    );
    seedDailyUptime(server.dataDir, [
      { name: 'web, "front"', daysAgo: 60, runs: 100, successes: 90 },
      { name: 'web, "front"', daysAgo: 40, runs: 100, successes: 100 },
      { name: 'db', daysAgo: 60, runs: 50, successes: 0 },
      { name: '=cmd', daysAgo: 60, runs: 10, successes: 10 },
    ]);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await tcp?.close();
  });

  const report = async (query: string) => {
    const response = await server.request(`/api/v1/report/uptime?${query}`);
    expect(response.status, await response.clone().text()).toBe(200);
    return (await response.json()) as { from: string; to: string; result: ReportRow[] };
  };

  it('counts each check over the period, from the aggregates', async () => {
    const from = dayStart(61);
    const to = dayStart(50);
    const body = await report(`from=${from}&to=${to}`);
    expect(body.from).toBe(new Date(from * 1000).toISOString());
    expect(body.to).toBe(new Date(to * 1000).toISOString());
    expect(body.result.map((row) => [row.name, row.runs, row.successes, row.ratio])).toEqual([
      ['=cmd', 10, 10, 1],
      ['db', 50, 0, 0],
      ['web, "front"', 100, 90, 0.9],
    ]);
    expect(body.result.find((row) => row.name === 'db')?.labels).toEqual({ env: 'prod', team: 'db' });
    // RFC 3339 as well; the 40-day-old day counts once the period reaches it.
    const wider = await report(
      `from=${new Date(from * 1000).toISOString()}&to=${encodeURIComponent(new Date(dayStart(39) * 1000).toISOString())}`,
    );
    expect(wider.result.find((row) => row.name === 'web, "front"')).toMatchObject({
      runs: 200,
      successes: 190,
      ratio: 0.95,
    });
    // A period with no runs: every check, ratio null.
    const empty = await report(`from=${dayStart(200)}&to=${dayStart(199)}`);
    expect(empty.result.map((row) => [row.name, row.runs, row.ratio])).toEqual([
      ['=cmd', 0, null],
      ['db', 0, null],
      ['web, "front"', 0, null],
    ]);
  });

  it('filters by labels as the dashboard does', async () => {
    const from = dayStart(61);
    expect((await report(`from=${from}&labels=env=prod`)).result.map((row) => row.name)).toEqual([
      'db',
      'web, "front"',
    ]);
    expect((await report(`from=${from}&labels=env=prod,team=db`)).result.map((row) => row.name)).toEqual(['db']);
    expect(
      (await report(`from=${from}&labels=${encodeURIComponent('=staging')}`)).result.map((row) => row.name),
    ).toEqual(['=cmd']);
  });

  it('answers CSV for Accept: text/csv or ?format=csv, parsed by a CSV parser', async () => {
    const from = dayStart(61);
    const to = dayStart(50);
    for (const [query, headers] of [
      [`from=${from}&to=${to}&format=csv`, {}],
      [`from=${from}&to=${to}`, { accept: 'text/csv' }],
    ] as const) {
      const response = await server.request(`/api/v1/report/uptime?${query}`, { headers });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename="uptime-.*\.csv"$/);
      const rows = parse(await response.text(), { columns: true }) as Record<string, string>[];
      expect(rows.map((row) => [row.name, row.runs, row.successes, row.ratio])).toEqual([
        // A name that a spreadsheet would read as a formula is written with a leading quote (OWASP).
        ["'=cmd", '10', '10', '1'],
        ['db', '50', '0', '0'],
        ['web, "front"', '100', '90', '0.9'],
      ]);
      expect(JSON.parse(rows[1]?.labels ?? '')).toEqual({ env: 'prod', team: 'db' });
    }
  });

  it('refuses a bad period with a 400 naming the parameter', async () => {
    for (const [query, message] of [
      ['from=yesterday', /from: must be unix seconds or an RFC 3339 date and time/],
      [`from=${dayStart(1)}&to=${dayStart(2)}`, /to: must be after from/],
      ['format=xml', /format: must be json or csv/],
    ] as const) {
      const response = await server.request(`/api/v1/report/uptime?${query}`);
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as { message: string }).message).toMatch(message);
    }
  });
});
