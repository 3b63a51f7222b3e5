/**
 * The nesting limits come from the config (streams.max-edn-depth, streams.max-event-depth; docs/configuration.md):
 * past them the real server answers 400 naming the limit and its key, and keeps serving.
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
beforeAll(async () => {
  server = await startServer({ config: { streams: { 'max-edn-depth': 12, 'max-event-depth': 4 } } });
});
afterAll(async () => {
  await server.kill9();
});

const call = async (path: string, init: RequestInit) => {
  const response = await server.request(path, init);
  return { status: response.status, body: (await response.json()) as { error?: string; events?: unknown[] } };
};

describe('configured nesting limits', () => {
  it('a stream config deeper than streams.max-edn-depth is a 400 naming the limit and the key', async () => {
    const deep = `{:actions ${'{:action :sdo :children ['.repeat(6)}${']}'.repeat(6)}}`;
    const refused = await call('/api/v1/stream/deep', json('POST', { config: b64(deep) }));
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain('collections nest deeper than the limit of 12 levels (streams.max-edn-depth)');
    expect(
      (
        await call(
          '/api/v1/stream/flat',
          json('POST', { config: b64('{:actions {:action :index :params [[:host]]}}') }),
        )
      ).status,
    ).toBe(200);
  });

  it('an event deeper than streams.max-event-depth is a 400 naming the limit and the key; within it the event is indexed', async () => {
    const refused = await call(
      '/api/v1/stream/flat',
      json('PUT', { events: [{ host: 'a', time: 1, deep: { b: { c: { d: { e: 1 } } } } }] }),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain(
      'events[0].deep nests objects and arrays deeper than the limit of 4 levels (streams.max-event-depth)',
    );
    expect(
      (await call('/api/v1/stream/flat', json('PUT', { events: [{ host: 'b', time: 1, deep: { b: { c: 1 } } }] })))
        .status,
    ).toBe(200);
    const found = await call('/api/v1/index/flat/search', json('POST', { query: b64('[:always-true]') }));
    expect(found.body.events).toEqual([{ host: 'b', time: 1, deep: { b: { c: 1 } } }]);
    expect((await server.request('/healthz')).status).toBe(200);
  });
});
