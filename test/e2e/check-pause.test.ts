/**
 * Pausing checks, and states across restarts (docs/checks.md, "Pause" and "States"): the real server, restarted on
 * its data directory with SIGTERM and with kill -9. A paused config-file check does not run (its target sees no
 * connection), counts in no uptime, says who paused it and why, stays paused across both restarts and runs again
 * when resumed, or by itself at `until`; the pause and resume are in the audit log. A down check is still down after
 * a kill -9, since the same time, with no change recorded twice. Old changes are pruned at start. Bad input is a
 * 400 or a 404 naming the problem.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { afterRuns } from '../helpers/runs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const AUTH = { authorization: `Basic ${Buffer.from('ops:secret').toString('base64')}` };

interface Status {
  state: string;
  'state-since': number;
  pause?: { by: string; reason?: string; since: string; until?: string };
}

interface StateEvent {
  at: string;
  previous: string;
  state: string;
  message: string;
}

describe('pausing checks, and states across restarts', () => {
  let target: TcpTarget;
  let server: TestServer;
  let config: Record<string, unknown>;

  beforeAll(async () => {
    target = await startTcpTarget();
    config = {
      http: { 'basic-auth': { username: 'ops', password: 'secret' } },
      healthchecks: { 'start-tick': '100ms', 'write-delay': '1s' },
      'tcp-checks': [
        { name: 'db', target: '127.0.0.1', port: target.port, interval: '300ms', timeout: '250ms' },
        { name: 'gone', target: '127.0.0.1', port: await closedPort(), interval: '300ms', timeout: '250ms' },
      ],
    };
    server = await startServer({ config });
  }, 60_000);
  afterAll(async () => {
    await server?.kill9();
    await target?.close();
  });

  const request = (path: string, init: RequestInit = {}) =>
    server.request(path, { ...init, headers: { ...AUTH, ...(init.headers as Record<string, string>) } });
  const post = (path: string, body?: unknown) =>
    request(path, {
      method: 'POST',
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
  const status = async (name: string): Promise<Status> => {
    const response = await request(`/api/v1/healthcheck/${name}/state`);
    expect(response.status).toBe(200);
    return (await response.json()) as Status;
  };
  const events = async (name: string): Promise<StateEvent[]> =>
    ((await (await request(`/api/v1/healthcheck/${name}/events`)).json()) as { result: StateEvent[] }).result;
  const runs1h = async (name: string): Promise<number> =>
    ((await (await request(`/api/v1/result/${name}/uptime`)).json()) as { uptime: { '1h': { runs: number } } }).uptime[
      '1h'
    ].runs;
  /** Restarts the service on its data directory, stopped with SIGTERM or kill -9. */
  const restart = async (how: 'sigterm' | 'kill9') => {
    if (how === 'sigterm') expect(await server.stop()).toBe(0);
    else await server.kill9();
    server = await startServer({ config, dataDir: server.dataDir });
  };

  it('a paused check does not run, counts in no uptime, and says who paused it and why', async () => {
    await waitFor(async () => (await status('db')).state === 'up', { timeoutMs: 10_000 });
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const paused = await post('/api/v1/healthcheck/db/pause', { until, reason: 'moving the database' });
    expect(paused.status).toBe(200);
    expect(await paused.json()).toEqual({
      message: 'Healthcheck db paused',
      result: { by: 'basic:ops', reason: 'moving the database', since: expect.any(String), until },
    });
    const now = await status('db');
    expect(now.state).toBe('paused');
    expect(now.pause).toMatchObject({ by: 'basic:ops', reason: 'moving the database', until });
    expect((await events('db')).at(-1)).toMatchObject({
      previous: 'up',
      state: 'paused',
      message: `paused by basic:ops until ${until}: moving the database`,
    });
    const overview = (await (await request('/api/v1/overview/healthchecks')).json()) as {
      checks: { name: string; state: string; pause?: { by: string } }[];
    };
    expect(overview.checks.find((check) => check.name === 'db')).toMatchObject({
      state: 'paused',
      pause: { by: 'basic:ops' },
    });
    // Nothing runs: no connection to its target, no run counted (a run in flight at the pause included). The other
    // check, on the same 300 ms interval, runs meanwhile: the paused one had its turns.
    await afterRuns(server, 'gone', 2, { headers: AUTH });
    const connections = target.connections;
    const runs = await runs1h('db');
    await afterRuns(server, 'gone', 5, { headers: AUTH });
    expect(target.connections).toBe(connections);
    expect(await runs1h('db')).toBe(runs);
    const badge = await (await request('/api/v1/badge/db/status.svg')).text();
    expect(badge).toContain('>paused<');
    const metrics = await (await request('/metrics')).text();
    expect(metrics).toContain('healthcheck_state{name="db",state="paused"} 1');
    // Audited, with who did it.
    const audit = (await (await request('/api/v1/audit?name=db')).json()) as {
      result: { principal: string; route: string; outcome: number }[];
    };
    expect(audit.result[0]).toMatchObject({
      principal: 'basic:ops',
      route: '/api/v1/healthcheck/:name/pause',
      outcome: 200,
    });
  }, 30_000);

  it('stays paused across a SIGTERM and a kill -9, then runs again when resumed', async () => {
    const since = (await status('db'))['state-since'];
    for (const how of ['sigterm', 'kill9'] as const) {
      await restart(how);
      expect(await status('db'), how).toMatchObject({ state: 'paused', 'state-since': since });
      expect(await (await request('/metrics')).text(), how).toContain('healthcheck_state{name="db",state="paused"} 1');
      const connections = target.connections;
      await afterRuns(server, 'gone', 3, { headers: AUTH });
      expect(target.connections, how).toBe(connections);
    }
    const resumed = await post('/api/v1/healthcheck/db/resume');
    expect(await resumed.json()).toEqual({ message: 'Healthcheck db resumed' });
    const connections = target.connections;
    await waitFor(() => target.connections > connections + 2, { timeoutMs: 10_000 });
    expect((await status('db')).state).toBe('up');
    const changes = await events('db');
    expect(changes.at(-1)).toMatchObject({ previous: 'paused', state: 'up', message: 'resumed by basic:ops' });
    // One change to paused, whatever the restarts.
    expect(changes.filter((change) => change.state === 'paused').length).toBe(1);
    expect(await (await post('/api/v1/healthcheck/db/resume')).json()).toEqual({
      message: 'Healthcheck db was not paused',
    });
  }, 60_000);

  it('resumes by itself at `until`', async () => {
    const until = new Date(Date.now() + 1500).toISOString();
    expect((await post('/api/v1/healthcheck/db/pause', { until })).status).toBe(200);
    expect((await status('db')).state).toBe('paused');
    await waitFor(async () => (await status('db')).state === 'up', { timeoutMs: 10_000 });
    expect((await events('db')).find((change) => change.previous === 'paused' && change.at >= until)).toMatchObject({
      message: `the pause ended (until ${until})`,
    });
  }, 20_000);

  it('keeps the state of a down check across a kill -9: same since, no change recorded twice', async () => {
    await waitFor(async () => (await status('gone')).state === 'down', { timeoutMs: 10_000 });
    const before = await status('gone');
    // Written with its results (write-delay 1s), then killed.
    await waitFor(
      async () => {
        const db = new Database(join(server.dataDir, 'vigie.db'), { readonly: true });
        try {
          return (
            (db.prepare(`select state from healthcheck_results where name = 'gone'`).get() as { state: string })
              .state === 'down'
          );
        } finally {
          db.close();
        }
      },
      { timeoutMs: 10_000 },
    );
    await restart('kill9');
    await waitFor(async () => (await runs1h('gone')) > 0);
    const after = await status('gone');
    expect(after).toMatchObject({ state: 'down', 'state-since': before['state-since'] });
    const changes = await events('gone');
    expect(changes.map((change) => `${change.previous}->${change.state}`)).toEqual(['pending->down']);
  }, 40_000);

  it('prunes the changes older than events-retention at start', async () => {
    await server.stop();
    const db = new Database(join(server.dataDir, 'vigie.db'));
    const old = Date.now() - 401 * 86_400_000;
    db.prepare(
      `insert into healthcheck_events (name, at_ms, from_state, to_state, message) values ('db', ?, 'up', 'down', 'old')`,
    ).run(old);
    db.close();
    server = await startServer({ config, dataDir: server.dataDir });
    const check = new Database(join(server.dataDir, 'vigie.db'), { readonly: true });
    try {
      await waitFor(
        () =>
          (check.prepare(`select count(*) as n from healthcheck_events where message = 'old'`).get() as { n: number })
            .n === 0,
      );
    } finally {
      check.close();
    }
  }, 30_000);

  it('refuses a bad pause with a 400 naming the field, an unknown check with a 404', async () => {
    for (const [body, message] of [
      [{ until: 'tomorrow' }, 'Invalid pause: until: must be an RFC 3339 date and time with a zone'],
      [{ until: '2020-01-01T00:00:00Z' }, 'Invalid pause: until: must be in the future, got "2020-01-01T00:00:00Z"'],
      [{ untill: '2030-01-01T00:00:00Z' }, 'Invalid pause: unknown key "untill" (did you mean "until"?)'],
      [{ reason: 'x'.repeat(2000) }, 'Invalid pause: reason: must be at most 1024 bytes long'],
      [[], 'Invalid pause: the body must be a JSON object'],
    ] as const) {
      const response = await post('/api/v1/healthcheck/db/pause', body);
      expect(response.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(((await response.json()) as { message: string }).message).toContain(message);
    }
    expect((await status('db')).state).not.toBe('paused');
    for (const path of ['/api/v1/healthcheck/nope/pause', '/api/v1/healthcheck/nope/resume']) {
      const response = await post(path);
      expect(response.status, path).toBe(404);
      expect(await response.json()).toEqual({ message: 'Healthcheck nope not found' });
    }
    // Without credentials: refused before anything.
    const anonymous = await server.request('/api/v1/healthcheck/db/pause', { method: 'POST' });
    expect(anonymous.status).toBe(401);
  });
});
