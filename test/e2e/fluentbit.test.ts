/**
 * The Fluent Bit input through the real server. Fluent Bit is not packaged in Debian, so the requests are those
 * its `http` output sends with `format json` (`Content-Type: application/json`, a JSON array of records with a
 * `date` key in seconds as a float).
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
  server = await startServer();
  for (const [name, isDefault] of [
    ['logs', false],
    ['all', true],
  ] as const) {
    const config = `{:default ${isDefault} :actions {:action :index :params [[:host :log]]}}`;
    expect((await server.request(`/api/v1/stream/${name}`, json('POST', { config: b64(config) }))).status).toBe(200);
  }
});
afterAll(async () => {
  await server.kill9();
});

async function search(stream: string, query: string): Promise<Record<string, unknown>[]> {
  const response = await server.request(`/api/v1/index/${stream}/search`, json('POST', { query: b64(query) }));
  return ((await response.json()) as { events: Record<string, unknown>[] }).events;
}

describe('POST /api/v1/fluentbit/<name>', () => {
  it('indexes the records with time in ns and without date, answering 200 with an empty body', async () => {
    const response = await server.request(
      '/api/v1/fluentbit/logs',
      json('POST', [
        { date: 1_735_047_872.5, host: 'fb-1', log: 'GET /health 200' },
        { date: 1_735_047_873.25, host: 'fb-1', log: 'GET /metrics 200', code: 200 },
      ]),
    );
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
    const events = await search('logs', '[:= :host "fb-1"]');
    expect(events.sort((a, b) => Number(a.time) - Number(b.time))).toEqual([
      { host: 'fb-1', log: 'GET /health 200', time: 1_735_047_872_500_000_000 },
      { host: 'fb-1', log: 'GET /metrics 200', code: 200, time: 1_735_047_873_250_000_000 },
    ]);
    expect(await search('all', '[:= :host "fb-1"]')).toEqual([]);
  });

  it('fans out to the default streams with the name default', async () => {
    expect(
      (
        await server.request(
          '/api/v1/fluentbit/default',
          json('POST', [{ date: 1_735_047_880, host: 'fb-2', log: 'x' }]),
        )
      ).status,
    ).toBe(200);
    expect(await search('all', '[:= :host "fb-2"]')).toMatchObject([{ host: 'fb-2', time: 1_735_047_880e9 }]);
  });

  it('answers 400 naming the record for a bad body, 404 for an unknown stream', async () => {
    const bad = await server.request('/api/v1/fluentbit/logs', json('POST', [{ date: 'soon' }]));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/^records\[0\]\.date must be epoch seconds/);
    const notArray = await server.request('/api/v1/fluentbit/logs', json('POST', { log: 'x' }));
    expect(notArray.status).toBe(400);
    expect(await notArray.json()).toEqual({
      error: 'the body must be a JSON array of Fluent Bit records (http output, format json)',
    });
    const notObject = await server.request('/api/v1/fluentbit/logs', json('POST', [{ date: 1 }, 'text']));
    expect(await notObject.json()).toEqual({
      error: 'records[1] must be an object (one Fluent Bit record), got "text"',
    });
    const badDate = await server.request('/api/v1/fluentbit/logs', json('POST', [{ log: 'a' }, { date: true }]));
    expect(badDate.status).toBe(400);
    expect(await badDate.json()).toEqual({
      error: 'records[1].date must be epoch seconds (json_date_format double or epoch) or an ISO 8601 date, got true',
    });
    const unknown = await server.request('/api/v1/fluentbit/nope', json('POST', []));
    expect(unknown.status).toBe(404);
  });
});

describe('Fluent Bit records the streams could not keep', () => {
  it('refuses a record whose ttl is not a number or that nests past streams.max-event-depth, naming it', async () => {
    const deep: Record<string, unknown> = { leaf: 1 };
    let nested = deep;
    for (let i = 0; i < 40; i++) nested = { inner: nested };
    for (const [records, error] of [
      [
        [
          { date: 1, log: 'a' },
          { date: 2, log: 'b', ttl: '10' },
        ],
        /^records\[1\]\.ttl must be a number/,
      ],
      [
        [{ date: 1, log: 'a', payload: nested }],
        /^records\[0\]\.payload nests objects and arrays deeper than the limit of 32/,
      ],
    ] as const) {
      const response = await server.request('/api/v1/fluentbit/logs', json('POST', records));
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toMatch(error);
    }
    expect(await search('logs', '[:= :log "a"]')).toEqual([]);
  });

  it('a restart replays what the journal holds of Fluent Bit pushes, and starts', async () => {
    const own = await startServer();
    try {
      const config = '{:actions {:action :index :params [[:host :log]]}}';
      expect((await own.request('/api/v1/stream/logs', json('POST', { config: b64(config) }))).status).toBe(200);
      const pushed = await own.request('/api/v1/fluentbit/logs', json('POST', [{ date: 5, host: 'h', log: 'kept' }]));
      expect(pushed.status).toBe(200);
      // Acknowledged before it was refused at ingest: then the journal held it, and no start got past its replay.
      await own.request('/api/v1/fluentbit/logs', json('POST', [{ date: 6, host: 'x', ttl: '10' }]));
      await own.kill9();
      const again = await startServer({ dataDir: own.dataDir });
      try {
        const response = await again.request(
          '/api/v1/index/logs/search',
          json('POST', { query: b64('[:= :host "h"]') }),
        );
        expect(((await response.json()) as { events: unknown[] }).events).toEqual([
          { host: 'h', log: 'kept', time: 5e9 },
        ]);
      } finally {
        await again.kill9();
      }
    } finally {
      await own.kill9();
    }
  });
});
