/**
 * Check states end to end (docs/checks.md, "States"): the real server with HTTP, HTTPS and TLS checks against local
 * servers the test steers. A check failing one run in four never goes down; three failures make a check down and two
 * successes bring it back, each change kept with its message (the events route, the uptime report's outages), shown
 * by the result routes, `/metrics`, the badge and the status page; a slow answer and a certificate 10 days from its
 * expiry make a check degraded while its results stay successes.
 */
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa } from '../helpers/certs.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

interface Status {
  name: string;
  success: boolean;
  'healthcheck-timestamp': number;
  message: string;
  state: string;
  'state-since': number;
  degraded?: string;
}

interface StateEvent {
  at: string;
  previous: string;
  state: string;
  message: string;
}

interface HistoryEntry {
  success: boolean;
  'healthcheck-timestamp': number;
}

const MAX_EVENTS = 6;

describe('check states in the running service', () => {
  let http: HttpTarget;
  let https: HttpTarget;
  let server: TestServer;
  /** What `/toggle` answers. */
  let toggle = 200;
  let flaps = 0;
  let cappedFlaps = 0;

  beforeAll(async () => {
    http = await startHttpTarget({
      handler: (request, response: ServerResponse) => {
        if (request.path === '/flap') {
          flaps++;
          response.statusCode = flaps % 4 === 0 ? 500 : 200;
          response.end('flap');
        } else if (request.path === '/flap-capped') {
          // Its own count: shared with the other flapping check, every failure could land on that one.
          cappedFlaps++;
          response.statusCode = cappedFlaps % 2 === 0 ? 500 : 200;
          response.end('flap');
        } else if (request.path === '/toggle') {
          response.statusCode = toggle;
          response.end(`toggle ${toggle}`);
        } else if (request.path === '/slow') setTimeout(() => response.end('slow'), 400);
        else response.end('ok');
      },
    });
    const ca = createCa();
    const soon = ca.issue('ten-days', { dns: ['localhost'], ips: ['127.0.0.1'], days: 10 });
    https = await startHttpTarget({ tls: soon });
    const check = (name: string, path: string, more: Record<string, unknown> = {}) => ({
      name,
      target: '127.0.0.1',
      port: http.port,
      path,
      'valid-status': [200],
      interval: '1s',
      timeout: '900ms',
      ...more,
    });
    server = await startServer({
      config: {
        healthchecks: {
          'start-tick': '100ms',
          'write-delay': '1s',
          // Every request of the status page renders it anew.
          'status-page-cache': '0s',
        },
        'http-checks': [
          check('flappy', '/flap', { interval: '300ms', timeout: '250ms' }),
          check('breaks', '/toggle'),
          check('slow', '/slow', { degraded: { 'response-time': '200ms' } }),
          {
            ...check('cert-https', '/', { degraded: { 'expiry-warning': '720h' } }),
            port: https.port,
            protocol: 'https',
            cacert: ca.cert,
          },
        ],
        'tls-checks': [
          {
            name: 'cert-tls',
            target: '127.0.0.1',
            port: https.port,
            cacert: ca.cert,
            interval: '1s',
            timeout: '900ms',
            degraded: { 'expiry-warning': '720h' },
          },
        ],
        'status-pages': [
          { slug: 'main', title: 'Main', groups: [{ name: 'All', checks: ['breaks', 'slow', 'flappy'] }] },
        ],
      },
    });
  }, 60_000);
  afterAll(async () => {
    await server?.kill9();
    await http?.close();
    await https?.close();
  });

  /** The latest result (Cabourotte's shape) with the check's state (its own route), read one after the other. */
  const status = async (name: string): Promise<Status> => {
    const result = await server.request(`/api/v1/result/${name}`);
    const state = await server.request(`/api/v1/healthcheck/${name}/state`);
    expect([result.status, state.status], name).toEqual([200, 200]);
    return { ...((await result.json()) as Status), ...((await state.json()) as Pick<Status, 'state' | 'state-since'>) };
  };
  const events = async (name: string): Promise<StateEvent[]> => {
    const response = await server.request(`/api/v1/healthcheck/${name}/events`);
    expect(response.status, await response.clone().text()).toBe(200);
    return ((await response.json()) as { result: StateEvent[] }).result;
  };
  const history = async (name: string): Promise<HistoryEntry[]> =>
    ((await (await server.request(`/api/v1/result/${name}/history`)).json()) as { result: HistoryEntry[] }).result;
  const component = async (name: string): Promise<string | undefined> => {
    const summary = (await (await server.request('/status/main/summary.json')).json()) as {
      components: { name: string; status: string; group: boolean }[];
    };
    return summary.components.find((one) => one.name === name && !one.group)?.status;
  };
  const badge = async (name: string): Promise<string> =>
    await (await server.request(`/api/v1/badge/${name}/status.svg`)).text();
  const stateMetric = async (name: string): Promise<Record<string, number>> => {
    const text = await (await server.request('/metrics')).text();
    const states: Record<string, number> = {};
    for (const match of text.matchAll(new RegExp(`^healthcheck_state\\{name="${name}",state="(\\w+)"\\} (\\d)$`, 'gm')))
      states[match[1] as string] = Number(match[2]);
    return states;
  };

  it('a check failing one run in four never goes down', async () => {
    await waitFor(async () => (await history('flappy')).filter((entry) => !entry.success).length >= 4, {
      timeoutMs: 20_000,
    });
    const changes = await events('flappy');
    expect(changes.map((change) => change.state)).not.toContain('down');
    expect(changes.some((change) => change.previous === 'up' && change.state === 'pending')).toBe(true);
    expect(changes.some((change) => change.previous === 'pending' && change.state === 'up')).toBe(true);
    expect(['up', 'pending']).toContain((await status('flappy')).state);
    // Pending is up on the badge and operational on the page.
    expect(await badge('flappy')).toContain('>up<');
    expect(await component('flappy')).toBe('operational');
  }, 30_000);

  it('three failures make a check down, two successes bring it back; each change is kept and shown', async () => {
    await waitFor(async () => (await status('breaks')).state === 'up', { timeoutMs: 10_000 });
    expect(await badge('breaks')).toContain('>up<');
    toggle = 500;
    const down = await waitFor(
      async () => {
        const now = await status('breaks');
        return now.state === 'down' && now;
      },
      { timeoutMs: 15_000 },
    );
    expect(down.success).toBe(false);
    let changes = await events('breaks');
    const toPending = changes.find((change) => change.state === 'pending');
    const toDown = changes.find((change) => change.state === 'down');
    expect(toPending).toMatchObject({ previous: 'up', message: expect.stringContaining('status 500') });
    // The change to down says why it began: the first failure's message.
    expect(toDown).toMatchObject({ previous: 'pending', message: toPending?.message });
    // Three failures in a row, up to the change (results are stamped in whole seconds, one a second here).
    const downS = Date.parse(toDown?.at ?? '') / 1000;
    const failures = (await history('breaks')).filter(
      (entry) => !entry.success && entry['healthcheck-timestamp'] <= downS,
    );
    expect(failures.length).toBe(3);
    expect(down['state-since']).toBe(downS);
    expect(await stateMetric('breaks')).toEqual({
      up: 0,
      pending: 0,
      down: 1,
      degraded: 0,
      paused: 0,
      maintenance: 0,
    });
    expect(await badge('breaks')).toContain('>down<');
    expect(await component('breaks')).toBe('major_outage');

    toggle = 200;
    const up = await waitFor(
      async () => {
        const now = await status('breaks');
        return now.state === 'up' && now;
      },
      { timeoutMs: 15_000 },
    );
    changes = await events('breaks');
    const toUp = changes.at(-1);
    expect(toUp).toMatchObject({ previous: 'down', state: 'up', message: 'success' });
    const upS = Date.parse(toUp?.at ?? '') / 1000;
    expect(up['state-since']).toBe(upS);
    const recovery = (await history('breaks')).filter(
      (entry) => entry['healthcheck-timestamp'] > downS && entry['healthcheck-timestamp'] <= upS,
    );
    // Down while the failures went on, then two successes in a row.
    expect(recovery.filter((entry) => entry.success).length).toBe(2);
    expect(recovery.at(-1)?.success).toBe(true);
    expect(await component('breaks')).toBe('operational');

    // The outage, in the uptime report (JSON and CSV).
    const report = (await (await server.request('/api/v1/report/uptime')).json()) as {
      result: { name: string; outages: { start: string; end?: string; duration: number; message: string }[] }[];
    };
    const outages = report.result.find((row) => row.name === 'breaks')?.outages;
    expect(outages).toEqual([
      {
        start: new Date(downS * 1000).toISOString(),
        end: new Date(upS * 1000).toISOString(),
        duration: upS - downS,
        message: toPending?.message,
      },
    ]);
    const csv = await (await server.request('/api/v1/report/uptime?format=csv')).text();
    expect(csv.split('\r\n')[0]).toMatch(/,outages$/);
    expect(csv).toContain(new Date(downS * 1000).toISOString());
  }, 60_000);

  it('a slow answer makes a check degraded, its result still a success', async () => {
    const slow = await waitFor(
      async () => {
        const now = await status('slow');
        return now.state === 'degraded' && now;
      },
      { timeoutMs: 10_000 },
    );
    expect(slow.success).toBe(true);
    expect(slow.message).toBe('success');
    expect(slow.degraded).toMatch(/^response time \d+ms is over 200ms \(degraded\.response-time\)$/);
    // Cabourotte's result shape, plus `degraded` only: the state is in its own route.
    const raw = (await (await server.request('/api/v1/result/slow')).json()) as Record<string, unknown>;
    expect(Object.keys(raw)).toEqual([
      'name',
      'summary',
      'success',
      'healthcheck-timestamp',
      'message',
      'duration',
      'source',
      'degraded',
    ]);
    expect((await events('slow')).at(-1)).toMatchObject({
      state: 'degraded',
      message: expect.stringMatching(/^response time \d+ms is over 200ms/),
    });
    expect(await badge('slow')).toContain('>degraded<');
    expect(await component('slow')).toBe('degraded_performance');
    expect((await stateMetric('slow')).degraded).toBe(1);
  }, 20_000);

  it('a certificate 10 days from its expiry makes HTTPS and TLS checks degraded', async () => {
    for (const name of ['cert-https', 'cert-tls']) {
      const cert = await waitFor(
        async () => {
          const now = await status(name);
          return now.state === 'degraded' && now;
        },
        { timeoutMs: 10_000 },
      );
      expect(cert.success, name).toBe(true);
      expect(cert.degraded, name).toMatch(
        /^the certificate expires at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC, within 720h0m0s \(degraded\.expiry-warning\)$/,
      );
    }
  }, 30_000);

  it('keeps at most max-events-per-check changes of a check', async () => {
    const capped = await startServer({
      config: {
        healthchecks: { 'start-tick': '100ms', 'write-delay': '1s', 'max-events-per-check': MAX_EVENTS },
        'http-checks': [
          {
            name: 'flappy',
            target: '127.0.0.1',
            port: http.port,
            path: '/flap-capped',
            'valid-status': [200],
            interval: '200ms',
            timeout: '150ms',
          },
        ],
      },
    });
    const db = new Database(join(capped.dataDir, 'vigie.db'), { readonly: true });
    const count = () =>
      (db.prepare(`select count(*) as n from healthcheck_events where name = 'flappy'`).get() as { n: number }).n;
    try {
      // Two changes every two runs: past the cap within seconds, and trimmed to it at each write.
      await waitFor(() => count() === MAX_EVENTS, { timeoutMs: 20_000 });
      await waitFor(async () => (await capped.request('/api/v1/result/flappy/history')).ok);
      const runs = async () =>
        (
          (await (await capped.request('/api/v1/result/flappy/uptime')).json()) as {
            uptime: { '1h': { runs: number } };
          }
        ).uptime['1h'].runs;
      const before = await runs();
      await waitFor(async () => (await runs()) >= before + 8, { timeoutMs: 20_000 });
      await waitFor(() => count() === MAX_EVENTS, { timeoutMs: 10_000 });
    } finally {
      db.close();
      await capped.kill9();
    }
  }, 90_000);

  it('refuses bad thresholds, degraded conditions and event queries, naming the field', async () => {
    const create = (body: Record<string, unknown>) =>
      server.request('/api/v1/healthcheck/tcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bad', target: '127.0.0.1', port: 1, timeout: '1s', interval: '1s', ...body }),
      });
    for (const [body, message] of [
      [{ 'failure-threshold': 0 }, 'failure-threshold: must be an integer between 1 and 100, got 0'],
      [{ 'success-threshold': 101 }, 'success-threshold: must be an integer between 1 and 100, got 101'],
      [{ 'failure-threshold': 2.5 }, 'failure-threshold: must be an integer'],
      [{ degraded: {} }, 'degraded: needs response-time, expiry-warning or both'],
      [{ degraded: { 'response-time': '0s' } }, 'degraded.response-time: must be greater than 0, got "0s"'],
      [{ degraded: { slow: '1s' } }, 'unknown key "slow"'],
    ] as const) {
      const response = await create(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(((await response.json()) as { message: string }).message).toContain(message);
    }
    expect((await server.request('/api/v1/healthcheck/bad')).status).toBe(404);

    for (const [query, status, message] of [
      ['from=yesterday', 400, 'Invalid events query: from: must be an RFC 3339 date and time'],
      ['from=2026-02-30T00:00:00Z', 400, 'Invalid events query: from: "2026-02-30T00:00:00Z" is not a date and time'],
      ['from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z', 400, 'Invalid events query: to: must be after from'],
      ['limit=0', 400, 'Invalid events query: limit: must be an integer between 1 and 10000, got "0"'],
    ] as const) {
      const response = await server.request(`/api/v1/healthcheck/breaks/events?${query}`);
      expect(response.status, query).toBe(status);
      expect(((await response.json()) as { message: string }).message, query).toContain(message);
    }
    const unknown = await server.request('/api/v1/healthcheck/nope/events');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ message: 'Healthcheck nope not found' });
  });
});
