/**
 * Hostile and careless API clients against the real server (docs/hardening.md): each case checks that the
 * service stays healthy (`/healthz` answers quickly during and after), answers the documented error, and loses
 * nothing it had accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const json = (method: string, body: unknown) => ({ method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

let server: TestServer;

const call = async (path: string, init?: RequestInit) => {
  const response = await server.request(path, init);
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : (JSON.parse(text) as Record<string, unknown>) };
};
const addStream = (name: string, config: string) => call(`/api/v1/stream/${name}`, json('POST', { config: b64(config) }));
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
  server = await startServer({ config: { http: { 'body-limit': 4_000_000 } } });
});
afterAll(async () => {
  await server.kill9();
});

describe('regular expressions run in linear time', () => {
  it('a catastrophic-backtracking :regex on a hostile event leaves the service healthy and the event processed', async () => {
    const config = '{:actions {:action :sdo :children [{:action :where :params [[:regex :service "(a+)+$"]] :children [{:action :index :params [[:host]]}]} {:action :index :params [[:host]]}]}}';
    expect((await addStream('regex.hostile', config)).status).toBe(200);
    const hostile = `${'a'.repeat(40)}!`;
    expect((await push('regex.hostile', [{ host: 'evil', service: hostile, time: 1 }, { host: 'fine', service: 'aaaa', time: 2 }])).status).toBe(200);
    await expectHealthy();
    const found = await search('regex.hostile', '[:always-true]');
    expect((found.body?.events as { host: string }[]).map((event) => event.host).sort()).toEqual(['evil', 'fine']);
  });

  it('refuses backreferences and lookaround with a 400 that says why', async () => {
    const backreference = await addStream('regex.backref', '{:actions {:action :where :params [[:regex :host "(a)\\\\1"]]}}');
    expect(backreference.status).toBe(400);
    expect(backreference.body?.error).toContain('backreferences (\\1) are not supported: the linear-time engine (RE2) cannot run them');
    expect((await addStream('regex.ok', '{:actions {:action :index :params [[:host]]}}')).status).toBe(200);
    const lookahead = await search('regex.ok', '[:regex :host "a(?=b)"]');
    expect(lookahead.status).toBe(400);
    expect(lookahead.body?.error).toContain('lookaround');
    await push('regex.ok', [{ host: 'WEB-1', time: 1 }]);
    expect((await search('regex.ok', '[:regex :host "(?i)web-[0-9]"]')).body?.events).toHaveLength(1);
  });
});
