/**
 * The exporters end to end (docs/alerting.md): the real server runs checks against a local HTTP target and hands
 * every result to an HTTP collector that records bodies, one that hangs, a Riemann-protocol server that is down
 * at start and comes up later, and a local stream whose index shows the results.
 */
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, type HttpTarget, type RecordedRequest, sentHeader, startHttpTarget } from '../helpers/targets.ts';
import { type RiemannServer, startRiemannServer } from '../helpers/riemann-server.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('exporters', () => {
  let server: TestServer;
  let target: HttpTarget;
  let collector: HttpTarget;
  let hanging: HttpTarget;
  let riemann: RiemannServer | null = null;
  let riemannPort: number;

  beforeAll(async () => {
    target = await startHttpTarget({
      handler: (request, response) => {
        if (request.path === '/slow') setTimeout(() => response.end('ok'), 100);
        else response.end('ok');
      },
    });
    collector = await startHttpTarget();
    hanging = await startHttpTarget({ handler: () => undefined });
    riemannPort = await closedPort();
    const check = (name: string) => ({
      name,
      target: '127.0.0.1',
      port: target.port,
      protocol: 'http',
      path: `/${name}`,
      'valid-status': [200],
      timeout: '1s',
      interval: '1s',
      labels: { env: 'test', team: 'core' },
    });
    server = await startServer({
      config: {
        'http-checks': [check('web'), check('api'), { ...check('slow'), degraded: { 'response-time': '20ms' } }],
        'tcp-checks': [{ name: 'down', target: '127.0.0.1', port: await closedPort(), timeout: '1s', interval: '1s' }],
        exporters: {
          http: [
            {
              name: 'collector',
              host: '127.0.0.1',
              port: collector.port,
              path: '/results',
              // Header names compare case-insensitively: the body is JSON whatever this says.
              headers: { authorization: 'Bearer x', 'Content-Type': 'text/plain' },
            },
            {
              name: 'hanging',
              host: '127.0.0.1',
              port: hanging.port,
              path: '/',
              timeout: '500ms',
              retries: 1,
              'queue-size': 5,
            },
          ],
          riemann: [{ name: 'riemann', host: '127.0.0.1', port: riemannPort, ttl: '30s' }],
          stream: [{ name: 'into-streams', stream: 'checks' }],
        },
      },
    });
    const added = await server.request('/api/v1/stream/checks', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ config: b64('{:actions {:action :index :params [[:healthcheck]]}}') }),
    });
    expect(added.status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await server?.kill9();
    await Promise.all([target?.close(), collector?.close(), hanging?.close(), riemann?.close()]);
  });

  it('POSTs JSON arrays of results in the API result shape to the HTTP collector', async () => {
    await waitFor(
      () =>
        collector.requests.some((request) => request.body.includes('"down"')) &&
        collector.requests.some((request) => request.body.includes('"web"')),
      { timeoutMs: 10_000 },
    );
    const request = collector.requests[0];
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/results');
    expect(sentHeader(request as RecordedRequest, 'content-type')).toEqual(['application/json']);
    expect(request?.headers.authorization).toBe('Bearer x');
    const results = collector.requests.flatMap((r) => JSON.parse(r.body) as Record<string, unknown>[]);
    const web = results.find((result) => result.name === 'web');
    expect(Object.keys(web ?? {})).toEqual([
      'name',
      'summary',
      'labels',
      'success',
      'healthcheck-timestamp',
      'message',
      'duration',
      'source',
    ]);
    expect(web).toMatchObject({
      success: true,
      message: 'success',
      labels: { env: 'test', team: 'core' },
      source: 'configuration',
    });
    const down = results.find((result) => result.name === 'down');
    expect(down).toMatchObject({ success: false, source: 'configuration' });
  });

  it('sends a degraded check\'s results as they were: the exporters carry no state (docs/checks.md, "States")', async () => {
    await waitFor(async () => {
      const state = await server.request('/api/v1/healthcheck/slow/state');
      return state.status === 200 && ((await state.json()) as { state: string }).state === 'degraded';
    });
    const slow = await waitFor(
      () =>
        collector.requests
          .flatMap((r) => JSON.parse(r.body) as Record<string, unknown>[])
          .find((result) => result.name === 'slow') ?? false,
    );
    expect(slow).toMatchObject({ success: true, message: 'success' });
    expect(Object.keys(slow)).toEqual([
      'name',
      'summary',
      'labels',
      'success',
      'healthcheck-timestamp',
      'message',
      'duration',
      'source',
    ]);
  });

  it('keeps the checks on schedule while a collector hangs, and counts what it drops', async () => {
    const runs = async () => {
      const text = await (await server.request('/metrics')).text();
      return Number(/healthcheck_total\{name="web",status="success"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const before = await runs();
    const startedAt = Date.now();
    await waitFor(async () => (await runs()) >= before + 4, { timeoutMs: 8_000, message: 'four more runs of web' });
    // Four runs at 1 s take about 4 s; a check blocked behind the hanging collector would take far longer.
    expect(Date.now() - startedAt).toBeLessThan(6_500);
    expect(hanging.requests.length).toBeGreaterThan(0);
    const metrics = await waitFor(
      async () => {
        const text = await (await server.request('/metrics')).text();
        return /exporter_dropped_total\{name="hanging",reason="queue_full"\} [1-9]/.test(text) && text;
      },
      { timeoutMs: 10_000 },
    );
    expect(metrics).toMatch(/exporter_queue_size\{name="hanging"\} [0-5]\b/);
    expect(metrics).toMatch(/exporter_failures_total\{name="hanging"\} [1-9]/);
    expect(metrics).toMatch(/exporter_sent_total\{name="collector"\} [1-9]/);
    expect(metrics).toMatch(/exporter_duration_seconds_count\{name="collector",status="success"\} [1-9]/);
    const result = await server.request('/api/v1/result/web');
    expect(result.status).toBe(200);
  });

  it('delivers to a Riemann server that comes up after the start, one event per result as upstream maps it', async () => {
    // While its server is down, the exporter's failed attempts to reach it are counted.
    await waitFor(
      async () =>
        /exporter_failures_total\{name="riemann"\} [1-9]/.test(await (await server.request('/metrics')).text()),
      {
        timeoutMs: 10_000,
        message: 'exporter_failures_total of the riemann exporter while its server is down',
      },
    );
    riemann = await startRiemannServer(riemannPort);
    const server_ = riemann;
    await waitFor(
      () =>
        server_.events.some((event) => event.attributes?.some((a) => a.key === 'healthcheck' && a.value === 'down')) &&
        server_.events.some((event) => event.state === 'ok'),
      { timeoutMs: 15_000 },
    );
    const web = server_.events.find((event) =>
      event.attributes?.some((a) => a.key === 'healthcheck' && a.value === 'web'),
    );
    expect(web).toMatchObject({
      service: 'cabourotte-healthcheck',
      host: hostname(),
      state: 'ok',
      tags: ['cabourotte'],
      ttl: 30,
    });
    expect(web?.description).toMatch(/^HTTP healthcheck .*: success$/);
    expect(web?.time_micros).toBe((web?.time ?? 0) * 1_000_000);
    expect(typeof web?.metric_sint64).toBe('number');
    expect(Object.fromEntries((web?.attributes ?? []).map((a) => [a.key, a.value]))).toEqual({
      healthcheck: 'web',
      source: 'configuration',
      env: 'test',
      team: 'core',
    });
    const down = server_.events.find((event) => event.attributes?.some((a) => a.value === 'down'));
    expect(down?.state).toBe('critical');
  });

  it('pushes every result into the local stream, where the index shows it', async () => {
    const search = async () => {
      const response = await server.request('/api/v1/index/checks/search', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: b64('[:always-true]') }),
      });
      return ((await response.json()) as { events: Record<string, unknown>[] }).events;
    };
    const events = await waitFor(
      async () => {
        const found = await search();
        return found.length >= 3 && found;
      },
      { timeoutMs: 10_000 },
    );
    const web = events.find((event) => event.healthcheck === 'web');
    expect(web).toMatchObject({
      service: 'cabourotte-healthcheck',
      host: hostname(),
      state: 'ok',
      source: 'configuration',
      env: 'test',
      team: 'core',
      ttl: 60,
      tags: ['cabourotte'],
    });
    expect(typeof web?.metric).toBe('number');
    expect(web?.time).toBeGreaterThan(1e18);
    expect(events.find((event) => event.healthcheck === 'down')?.state).toBe('critical');
  });
});
