/**
 * Heartbeat checks end to end (docs/checks.md, "Heartbeat checks"): a job's reports through the real HTTP API,
 * the silence past interval + grace, `/fail` with a message, an unknown name, basic auth, a restart that keeps
 * the last report (the silence is counted from it, not from the restart), and floods (docs/hardening.md,
 * "Heartbeat floods"): bodies read up to 64 KiB, at most `history-size` results per check held and written.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

interface Result {
  success: boolean;
  message: string;
  'healthcheck-timestamp': number;
}

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});

async function start(config: Record<string, unknown> | string, dataDir?: string): Promise<TestServer> {
  const server = await startServer({ config, ...(dataDir ? { dataDir } : {}) });
  servers.push(server);
  return server;
}

async function latest(server: TestServer, name: string): Promise<Result | null> {
  const answer = await server.request(`/api/v1/result/${name}`);
  return answer.status === 404 ? null : ((await answer.json()) as Result);
}

describe('heartbeat checks', () => {
  it('goes through not-run-yet, success, silence, /fail and unknown names', async () => {
    const server = await start({
      'heartbeat-checks': [{ name: 'backup', interval: '2s', grace: '1s', labels: { team: 'ops' } }],
    });
    const listing = (await (await server.request('/api/v1/healthcheck/backup')).json()) as Record<string, unknown>;
    expect(listing).toEqual({
      name: 'backup',
      description: '',
      interval: '2s',
      'one-off': false,
      source: 'configuration',
      labels: { team: 'ops' },
      grace: '1s',
      kind: 'heartbeat',
    });
    // Never reported: not run yet until interval + grace have passed.
    expect(await latest(server, 'backup')).toBeNull();

    expect(await (await server.request('/api/v1/heartbeat/backup', { method: 'POST' })).json()).toEqual({
      message: 'ok',
    });
    expect(await latest(server, 'backup')).toMatchObject({ success: true, message: 'success' });
    const reportedAt = Date.now();

    // Silence: a failure after interval + grace (3 s), with the time of the last report.
    await waitFor(async () => (await latest(server, 'backup'))?.success === false, { timeoutMs: 10_000 });
    const silent = (await latest(server, 'backup')) as Result;
    expect(Date.now() - reportedAt).toBeGreaterThanOrEqual(2900);
    expect(silent.message).toMatch(
      /^no heartbeat since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(expected every 2s, grace 1s\)$/,
    );
    const since = Date.parse(/since (\S+)/.exec(silent.message)?.[1] ?? '');
    expect(Math.abs(since - reportedAt)).toBeLessThan(1000);

    // GET reports too (a job with wget); then /fail with the job's output as the message, cut at 4 KiB.
    expect((await server.request('/api/v1/heartbeat/backup')).status).toBe(200);
    expect(await latest(server, 'backup')).toMatchObject({ success: true });
    const output = `rsync: disk full\n${'x'.repeat(5000)}`;
    const failed = await server.request('/api/v1/heartbeat/backup/fail', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: output,
    });
    expect(failed.status).toBe(200);
    const failure = (await latest(server, 'backup')) as Result;
    expect(failure.success).toBe(false);
    expect(failure.message).toBe(output.slice(0, 4096));
    const bare = await server.request('/api/v1/heartbeat/backup/fail', { method: 'POST' });
    expect(bare.status).toBe(200);
    expect((await latest(server, 'backup'))?.message).toBe('failure reported');

    // The history holds each report and each silence.
    const history = ((await (await server.request('/api/v1/result/backup/history')).json()) as { result: Result[] })
      .result;
    expect(history.map((result) => result.success)).toEqual([false, false, true, false, true]);

    const unknown = await server.request('/api/v1/heartbeat/nope', { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ message: 'Heartbeat check nope not found' });
    expect((await server.request('/api/v1/heartbeat/nope/fail', { method: 'POST' })).status).toBe(404);
  });

  it('is created through the API like any kind, and reports need the same basic auth as the API', async () => {
    const auth = { Authorization: `Basic ${Buffer.from('ops:secret').toString('base64')}` };
    const server = await start({ http: { 'basic-auth': { username: 'ops', password: 'secret' } } });
    const create = (body: unknown) =>
      server.request('/api/v1/healthcheck/heartbeat', {
        ...json('POST', body),
        headers: { ...json('POST', body).headers, ...auth },
      });
    expect((await create({ name: 'cron', interval: '1h' })).status).toBe(201);
    const refused = await create({ name: 'cron2', interval: '1h', timeout: '5s' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      message: 'Invalid healthcheck configuration: unknown key "timeout"',
      errors: [{ field: 'timeout', message: 'unknown key "timeout"' }],
    });
    expect((await server.request('/api/v1/heartbeat/cron', { method: 'POST' })).status).toBe(401);
    expect((await server.request('/api/v1/heartbeat/cron', { method: 'POST', headers: auth })).status).toBe(200);
    const result = (await (await server.request('/api/v1/result/cron', { headers: auth })).json()) as Result;
    expect(result).toMatchObject({
      success: true,
      summary: 'Heartbeat healthcheck expected every 1h0m0s (grace 1m0s)',
    });
    // A heartbeat check is not run: its metric counts the reports.
    const metrics = await (await server.request('/metrics', { headers: auth })).text();
    expect(metrics).toMatch(/healthcheck_total\{name="cron",status="success"\} 1/);
  });

  it('keeps the last report across a restart: the silence is counted from it', async () => {
    const config = { 'heartbeat-checks': [{ name: 'nightly', interval: '3s', grace: '1s' }] };
    const first = await start(config);
    expect(
      (
        await first.request('/api/v1/heartbeat/nightly/fail', {
          method: 'POST',
          body: 'exit 3',
          headers: { 'content-type': 'text/plain' },
        })
      ).status,
    ).toBe(200);
    const reportedAt = Date.now();
    // kill -9: the report was committed before the answer.
    await first.kill9();
    const second = await start(readFileSync(first.configFile, 'utf8'), first.dataDir);
    // The report's result is known again, and the silence fails 4 s after the report, not 4 s after the restart.
    await waitFor(async () => (await latest(second, 'nightly'))?.message.startsWith('no heartbeat since') === true, {
      timeoutMs: 10_000,
    });
    const silent = (await latest(second, 'nightly')) as Result;
    const since = Date.parse(/since (\S+)/.exec(silent.message)?.[1] ?? '');
    expect(Math.abs(since - reportedAt)).toBeLessThan(1000);
  });

  it('reads at most 64 KiB of a report: a larger body is cut, whatever http.body-limit, and the report counts', async () => {
    const server = await start({
      http: { 'body-limit': 1_048_576 },
      'heartbeat-checks': [{ name: 'noisy', interval: '1h' }],
    });
    const fail = (body: Buffer) =>
      server.request('/api/v1/heartbeat/noisy/fail', {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body,
      });
    const log = Buffer.from(`tar: write error\n${'y'.repeat(65 * 1024)}`);
    expect((await fail(log)).status).toBe(200);
    expect((await latest(server, 'noisy'))?.message).toBe(log.subarray(0, 4096).toString());
    // Twice the body limit of every other route: a job's whole log is still a report, not a 413.
    const huge = Buffer.alloc(2 * 1_048_576, 'z');
    huge.write('out of memory\n');
    const answer = await fail(huge);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ message: 'ok' });
    expect((await latest(server, 'noisy'))?.message).toBe(huge.subarray(0, 4096).toString());
    // The connection is still usable afterwards.
    expect((await server.request('/api/v1/heartbeat/noisy', { method: 'POST' })).status).toBe(200);
  });

  it('holds and writes at most history-size results of a flooded check, and counts every report in its uptime', async () => {
    const reports = 20_000;
    const historySize = 25;
    // write-delay 5m: nothing is written while the flood lasts, so what the process holds is what it keeps.
    const server = await start({
      healthchecks: { 'history-size': historySize, 'write-delay': '5m' },
      'heartbeat-checks': [{ name: 'flood', interval: '1h' }],
    });
    const body = Buffer.from(`backup failed: ${'x'.repeat(4096 - 15)}`);
    const pool = new Pool(server.url, { connections: 16, pipelining: 1 });
    let sent = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < reports) {
          sent++;
          const response = await pool.request({
            path: '/api/v1/heartbeat/flood/fail',
            method: 'POST',
            headers: { 'content-type': 'text/plain' },
            body,
          });
          await response.body.dump();
          expect(response.statusCode).toBe(200);
        }
      }),
    );
    await pool.close();
    const metrics = await (await server.request('/metrics')).text();
    const sample = (series: string) =>
      Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1]);
    expect(sample('healthcheck_pending_results')).toBe(historySize);
    expect(sample('healthcheck_results_folded_total{reason="history_size"}')).toBe(reports - historySize);
    const uptime = async () =>
      (
        (await (await server.request('/api/v1/result/flood/uptime')).json()) as {
          uptime: Record<string, { runs: number; successes: number }>;
        }
      ).uptime;
    expect((await uptime())['24h']).toMatchObject({ runs: reports, successes: 0 });
    const history = ((await (await server.request('/api/v1/result/flood/history')).json()) as { result: Result[] })
      .result;
    expect(history).toHaveLength(historySize);
    expect(history.every((result) => result.message === body.toString())).toBe(true);

    // SIGTERM writes what waits: history-size rows, and aggregates that count all the reports.
    expect(await server.stop()).toBe(0);
    const db = new Database(join(server.dataDir, 'vigie.db'), { readonly: true });
    try {
      expect(db.prepare(`select count(*) as n from healthcheck_history where name = 'flood'`).get()).toEqual({
        n: historySize,
      });
      const runs = db
        .prepare(
          `select granularity, sum(runs) as runs, sum(successes) as ok from healthcheck_uptime where name = 'flood' group by granularity order by granularity`,
        )
        .all();
      expect(runs).toEqual([
        { granularity: 'day', runs: reports, ok: 0 },
        { granularity: 'hour', runs: reports, ok: 0 },
      ]);
    } finally {
      db.close();
    }
  }, 120_000);
});
