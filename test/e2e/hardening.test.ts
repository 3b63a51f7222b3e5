/**
 * Hostile and careless API clients against the real server (docs/hardening.md): each case checks that the
 * service stays healthy (`/healthz` answers quickly during and after), answers the documented error, and loses
 * nothing it had accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

let server: TestServer;

const call = async (path: string, init?: RequestInit) => {
  const response = await server.request(path, init);
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : (JSON.parse(text) as Record<string, unknown>) };
};
const addStream = (name: string, config: string) =>
  call(`/api/v1/stream/${name}`, json('POST', { config: b64(config) }));
const push = (name: string, events: unknown) => call(`/api/v1/stream/${name}`, json('PUT', { events }));
const search = (name: string, query: string, extra: Record<string, unknown> = {}) =>
  call(`/api/v1/index/${name}/search`, json('POST', { query: b64(query), ...extra }));

/** `/healthz` must answer 200 within `withinMs`. */
async function expectHealthy(withinMs = 500): Promise<void> {
  const started = performance.now();
  const response = await server.request('/healthz', { signal: AbortSignal.timeout(5_000) });
  expect(response.status).toBe(200);
  await response.text();
  expect(performance.now() - started).toBeLessThan(withinMs);
}

beforeAll(async () => {
  server = await startServer({
    config: { http: { 'body-limit': 4_000_000 }, streams: { 'max-forks': 5, 'max-index-entries': 100 } },
  });
});
afterAll(async () => {
  await server.kill9();
});

describe('regular expressions run in linear time', () => {
  it('a catastrophic-backtracking :regex on a hostile event leaves the service healthy and the event processed', async () => {
    const config =
      '{:actions {:action :sdo :children [{:action :where :params [[:regex :service "(a+)+$"]] :children [{:action :index :params [[:host]]}]} {:action :index :params [[:host]]}]}}';
    expect((await addStream('regex.hostile', config)).status).toBe(200);
    const hostile = `${'a'.repeat(40)}!`;
    expect(
      (
        await push('regex.hostile', [
          { host: 'evil', service: hostile, time: 1 },
          { host: 'fine', service: 'aaaa', time: 2 },
        ])
      ).status,
    ).toBe(200);
    await expectHealthy();
    const found = await search('regex.hostile', '[:always-true]');
    expect((found.body?.events as { host: string }[]).map((event) => event.host).sort()).toEqual(['evil', 'fine']);
  });

  it('refuses backreferences and lookaround with a 400 that says why', async () => {
    const backreference = await addStream(
      'regex.backref',
      '{:actions {:action :where :params [[:regex :host "(a)\\\\1"]]}}',
    );
    expect(backreference.status).toBe(400);
    expect(backreference.body?.error).toContain(
      'backreferences (\\1) are not supported: the linear-time engine (RE2) cannot run them',
    );
    expect((await addStream('regex.ok', '{:actions {:action :index :params [[:host]]}}')).status).toBe(200);
    const lookahead = await search('regex.ok', '[:regex :host "a(?=b)"]');
    expect(lookahead.status).toBe(400);
    expect(lookahead.body?.error).toContain('lookaround');
    await push('regex.ok', [{ host: 'WEB-1', time: 1 }]);
    expect((await search('regex.ok', '[:regex :host "(?i)web-[0-9]"]')).body?.events).toHaveLength(1);
  });
});

describe('bounded work per request', () => {
  it('a stream config nested 100,000 levels deep is a 400 naming the limit', async () => {
    const deep = `{:actions ${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const response = await addStream('deep.config', deep);
    expect(response.status).toBe(400);
    expect(response.body?.error).toContain('collections nest deeper than the limit of 200 levels');
    const query = await search('regex.ok', `${'[:not '.repeat(50_000)}[:always-true]${']'.repeat(50_000)}`);
    expect(query.status).toBe(400);
    expect(query.body?.error).toContain('limit of 200 levels');
    await expectHealthy();
  });

  it('an event nested deeper than 32 levels is a 400 naming the limit, and nothing of the batch is half-pushed', async () => {
    expect((await addStream('deep.events', '{:actions {:action :index :params [[:host]]}}')).status).toBe(200);
    // Written by hand: JSON.stringify itself cannot go that deep.
    const nested = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    const body = `{"events":[{"host":"a","time":1},{"host":"b","time":2,"deep":${nested}}]}`;
    const response = await call('/api/v1/stream/deep.events', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(400);
    expect(response.body?.error).toContain(
      'events[1].deep nests objects and arrays deeper than the limit of 32 levels',
    );
    expect((await search('deep.events', '[:always-true]')).body?.events).toEqual([]);
    await expectHealthy();
  });

  it('index search is capped by limit and says when it was cut', async () => {
    expect((await addStream('search.cap', '{:actions {:action :index :params [[:host]]}}')).status).toBe(200);
    await push(
      'search.cap',
      Array.from({ length: 50 }, (_, i) => ({ host: `h${i}`, time: i + 1 })),
    );
    const cut = await search('search.cap', '[:always-true]', { limit: 10 });
    expect(cut.status).toBe(200);
    expect(cut.body?.events).toHaveLength(10);
    expect(cut.body?.truncated).toBe(true);
    const whole = await search('search.cap', '[:always-true]');
    expect(whole.body).toMatchObject({ truncated: false });
    expect(whole.body?.events).toHaveLength(50);
    const tooMany = await search('search.cap', '[:always-true]', { limit: 1_000_000 });
    expect(tooMany).toMatchObject({
      status: 400,
      body: { error: 'field limit is incorrect: expected an integer from 1 to 100000 (streams.max-search-limit)' },
    });
  });
});

describe('cardinality caps with a voice', () => {
  it('past streams.max-forks new keys are dropped, counted by reason and warned about once, known keys still flow', async () => {
    const config =
      '{:actions {:action :by :params [{:fields [:host]}] :children [{:action :index :params [[:host]]}]}}';
    expect((await addStream('cap.forks', config)).status).toBe(200);
    expect(
      (
        await push(
          'cap.forks',
          Array.from({ length: 20 }, (_, i) => ({ host: `h${i}`, time: i + 1 })),
        )
      ).status,
    ).toBe(200);
    expect((await push('cap.forks', [{ host: 'h0', time: 100, metric: 7 }])).status).toBe(200);
    await expectHealthy();
    const found = (await search('cap.forks', '[:always-true]')).body?.events as { host: string; metric?: number }[];
    expect(found.map((event) => event.host).sort()).toEqual(['h0', 'h1', 'h2', 'h3', 'h4']);
    expect(found.find((event) => event.host === 'h0')?.metric).toBe(7);
    const metrics = await (await server.request('/metrics')).text();
    expect(metrics).toContain('stream_dropped_events_total{name="cap.forks",reason="fork_limit"} 15');
    expect(
      server.logs.filter((line) => line.includes('events dropped at a cardinality cap (fork_limit)')),
    ).toHaveLength(1);
  });

  it('past streams.max-index-entries new keys are not indexed and counted', async () => {
    expect((await addStream('cap.index', '{:actions {:action :index :params [[:host]]}}')).status).toBe(200);
    expect(
      (
        await push(
          'cap.index',
          Array.from({ length: 120 }, (_, i) => ({ host: `h${i}`, time: i + 1 })),
        )
      ).status,
    ).toBe(200);
    expect((await search('cap.index', '[:always-true]')).body?.events).toHaveLength(100);
    const metrics = await (await server.request('/metrics')).text();
    expect(metrics).toContain('stream_dropped_events_total{name="cap.index",reason="index_full"} 20');
  });
});
