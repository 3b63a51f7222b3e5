/**
 * The stream API of docs/http-api.md against the real server: every row of the status table, the success bodies, the
 * `default` fan-out, index search with nested conditions, the metrics, and the 503 of a full ingest backlog.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeDataDir, startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const INDEX_BY_HOST = '{:actions {:action :index :params [[:host]]}}';

let server: TestServer;

const json = (method: string, body: unknown) => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const call = async (path: string, init?: RequestInit) => {
  const response = await server.request(path, init);
  const text = await response.text();
  return {
    status: response.status,
    body: text === '' ? null : (JSON.parse(text) as Record<string, unknown>),
    headers: response.headers,
  };
};
const addStream = (name: string, config: string) =>
  call(`/api/v1/stream/${name}`, json('POST', { config: b64(config) }));
const push = (name: string, events: unknown) => call(`/api/v1/stream/${name}`, json('PUT', { events }));
const search = (name: string, query: string) =>
  call(`/api/v1/index/${name}/search`, json('POST', { query: b64(query) }));

beforeAll(async () => {
  server = await startServer({ config: { http: { 'body-limit': 200_000 } } });
});
afterAll(async () => {
  await server.kill9();
});

describe('streams', () => {
  it('adds, lists, describes, replaces and removes a stream', async () => {
    const text = '{:actions {:action :index :params [[:host]]}\n :description "by host"}';
    expect(await addStream('crud.one', text)).toMatchObject({ status: 200, body: { message: 'stream added' } });
    expect((await call('/api/v1/stream')).body?.streams).toContain('crud.one');
    const described = await call('/api/v1/stream/crud.one');
    expect(described.status).toBe(200);
    expect(Buffer.from(described.body?.config as string, 'base64').toString('utf8')).toBe(text);
    expect(described.body?.['current-time']).toBe(0);

    await push('crud.one', [{ host: 'a', time: 5_000_000_000 }]);
    expect((await call('/api/v1/stream/crud.one')).body?.['current-time']).toBe(5_000_000_000);
    const replaced = '{:actions {:action :index :params [[:service]]}}';
    expect((await addStream('crud.one', replaced)).status).toBe(200);
    const after = await call('/api/v1/stream/crud.one');
    expect(Buffer.from(after.body?.config as string, 'base64').toString('utf8')).toBe(replaced);
    expect(after.body?.['current-time']).toBe(0);

    expect(await call('/api/v1/stream/crud.one', { method: 'DELETE' })).toMatchObject({
      status: 200,
      body: { message: 'stream removed' },
    });
    expect((await call('/api/v1/stream')).body?.streams).not.toContain('crud.one');
  });

  it('answers 404 "Stream <name> not found" for an unknown stream on every route', async () => {
    const notFound = { status: 404, body: { error: 'Stream nope not found' } };
    expect(await call('/api/v1/stream/nope')).toMatchObject(notFound);
    expect(await call('/api/v1/stream/nope', { method: 'DELETE' })).toMatchObject(notFound);
    expect(await push('nope', [{ host: 'a' }])).toMatchObject(notFound);
    expect(await search('nope', '[:always-true]')).toMatchObject(notFound);
    expect(await call('/api/v1/index/nope/current-time')).toMatchObject(notFound);
    expect(
      await call('/api/v1/prometheus/remote-write/nope', { method: 'POST', body: Buffer.from('x') }),
    ).toMatchObject(notFound);
    expect(
      await call('/api/v1/opentelemetry/v1/traces/nope', {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      }),
    ).toMatchObject(notFound);
  });

  it('rejects bad configs with a 400 naming the field, the action and the problem', async () => {
    expect(await call('/api/v1/stream/bad', json('POST', {}))).toMatchObject({
      status: 400,
      body: { error: 'field config is missing' },
    });
    const blank = await call('/api/v1/stream/bad', json('POST', { config: '  ' }));
    expect(blank.status).toBe(400);
    expect(blank.body?.error).toMatch(/^field config is incorrect/);
    const base64 = await call('/api/v1/stream/bad', json('POST', { config: 'not base64!' }));
    expect(base64.status).toBe(400);
    expect(base64.body?.error).toMatch(/config.*invalid base64/);
    // Node's decoder would skip the space and the newline, and read base64url: the one decoder refuses them.
    const valid = Buffer.from('{:actions {:action :with :params [{:x "??>"}]}}').toString('base64');
    for (const config of [
      `${valid.slice(0, 8)} ${valid.slice(8)}`,
      `${valid.slice(0, 8)}\n${valid.slice(8)}`,
      valid.replace('+', '-').replace('=', ''),
    ]) {
      expect(await call('/api/v1/stream/bad', json('POST', { config }))).toMatchObject({
        status: 400,
        body: { error: 'field config is incorrect: invalid base64' },
      });
    }
    const latin1 = await call(
      '/api/v1/stream/bad',
      json('POST', { config: Buffer.from('{:actions {:action :info :params ["\xe9"]}}', 'latin1').toString('base64') }),
    );
    expect(latin1).toMatchObject({
      status: 400,
      body: { error: 'field config is incorrect: the base64 does not decode to UTF-8 text' },
    });
    const edn = await addStream('bad', '{:actions {:action :index');
    expect(edn.status).toBe(400);
    expect(edn.body?.error).toMatch(/Invalid EDN/);
    const unknown = await addStream('bad', '{:actions {:action :frobnicate}}');
    expect(unknown.status).toBe(400);
    expect(unknown.body?.error).toContain(':frobnicate');
    const params = await addStream('bad', '{:actions {:action :scale :params ["two"]}}');
    expect(params.status).toBe(400);
    expect(params.body?.error).toContain(':scale');
    const typo = await addStream('bad', '{:actions {:action :fixed-time-window :params [{:durration "10s"}]}}');
    expect(typo.status).toBe(400);
    expect(typo.body?.error).toMatch(
      /^Invalid parameter :durration for action :fixed-time-window: unknown key \(did you mean :duration\?\)/,
    );
    const name = await addStream('bad name', INDEX_BY_HOST);
    expect(name.status).toBe(400);
    expect(name.body?.error).toMatch(/Invalid stream name/);
    const output = await addStream('bad', '{:actions {:action :output! :params [:nowhere]}}');
    expect(output.status).toBe(400);
    expect(output.body?.error).toContain(':nowhere');
    expect((await call('/api/v1/stream')).body?.streams).not.toContain('bad');
  });

  it('pushes events: stamps missing times, validates the body, 500 naming the stream when an action throws', async () => {
    await addStream('push.inc', '{:actions {:action :increment :children [{:action :index :params [[:host]]}]}}');
    const before = Date.now() * 1e6;
    expect(await push('push.inc', [{ host: 'stamped', metric: 1 }])).toMatchObject({
      status: 200,
      body: { message: 'ok' },
    });
    const [stamped] = (await search('push.inc', '[:= :host "stamped"]')).body?.events as {
      time: number;
      metric: number;
    }[];
    expect(stamped?.metric).toBe(2);
    expect(stamped?.time).toBeGreaterThanOrEqual(before - 1e9);

    const failed = await push('push.inc', [
      { host: 'a', metric: 1, time: 1 },
      { host: 'b', time: 2 },
      { host: 'c', metric: 3, time: 3 },
    ]);
    expect(failed.status).toBe(500);
    expect(failed.body?.error).toMatch(/^Stream push\.inc: .*increment needs a numeric :metric/);
    const hosts = ((await search('push.inc', '[:always-true]')).body?.events as { host: string }[])
      .map((event) => event.host)
      .sort();
    expect(hosts).toEqual(['a', 'c', 'stamped']);

    expect(await call('/api/v1/stream/push.inc', json('PUT', {}))).toMatchObject({
      status: 400,
      body: { error: 'field events is missing' },
    });
    const notArray = await call('/api/v1/stream/push.inc', json('PUT', { events: { host: 'a' } }));
    expect(notArray.status).toBe(400);
    expect(notArray.body?.error).toMatch(/events/);
    const notObjects = await push('push.inc', [1, 2]);
    expect(notObjects.status).toBe(400);
    expect(notObjects.body?.error).toMatch(/events\[0\]/);
    const invalidJson = await call('/api/v1/stream/push.inc', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"events": [',
    });
    expect(invalidJson.status).toBe(400);
    expect(invalidJson.body?.error).toBe('Invalid JSON: Unexpected end of JSON input');
  });

  it('sends events pushed to "default" to every :default true stream', async () => {
    await addStream('fan.one', '{:default true :actions {:action :index :params [[:host]]}}');
    await addStream('fan.two', '{:default true :actions {:action :index :params [[:host]]}}');
    await addStream('fan.off', INDEX_BY_HOST);
    expect(await push('default', [{ host: 'fanned', time: 7 }])).toMatchObject({
      status: 200,
      body: { message: 'ok' },
    });
    for (const name of ['fan.one', 'fan.two'])
      expect((await search(name, '[:= :host "fanned"]')).body?.events).toHaveLength(1);
    expect((await search('fan.off', '[:always-true]')).body?.events).toEqual([]);
  });

  it('searches the index with nested and/or/not conditions; bad queries are 400s', async () => {
    await addStream('search', '{:actions {:action :index :params [[:host :service]]}}');
    const events = [
      { host: 'web-1', service: 'http', metric: 120, state: 'ok', time: 10 },
      { host: 'web-2', service: 'http', metric: 700, state: 'critical', time: 11 },
      { host: 'db-1', service: 'pg', metric: 5, state: 'ok', time: 12, attributes: { env: 'prod' } },
      { host: 'db-2', service: 'pg', metric: 90, state: 'warning', time: 13, attributes: { env: 'dev' } },
      { host: 'web-1', service: 'http', metric: 130, state: 'ok', time: 14 },
    ];
    expect((await push('search', events)).status).toBe(200);
    const hostsOf = async (query: string) =>
      ((await search('search', query)).body?.events as { host: string }[]).map((event) => event.host).sort();
    expect(await hostsOf('[:always-true]')).toEqual(['db-1', 'db-2', 'web-1', 'web-2']);
    expect(await hostsOf('[:and [:= :service "http"] [:> :metric 125]]')).toEqual(['web-1', 'web-2']);
    expect(
      await hostsOf(
        '[:or [:and [:= :service "pg"] [:not [:= :state "ok"]]] [:and [:= :service "http"] [:< :metric 200]]]',
      ),
    ).toEqual(['db-2', 'web-1']);
    expect(await hostsOf('[:not [:or [:= :state "ok"] [:= [:attributes :env] "dev"]]]')).toEqual(['web-2']);
    expect(await hostsOf('[:and [:= [:attributes :env] "prod"] [:not [:> :metric 10]]]')).toEqual(['db-1']);
    const [latest] = (await search('search', '[:= :host "web-1"]')).body?.events as { metric: number }[];
    expect(latest?.metric).toBe(130);
    expect(await call('/api/v1/index/search/current-time')).toMatchObject({
      status: 200,
      body: { 'current-time': 14 },
    });

    expect(await call('/api/v1/index/search/search', json('POST', {}))).toMatchObject({
      status: 400,
      body: { error: 'field query is missing' },
    });
    const edn = await search('search', '[:= :host');
    expect(edn.status).toBe(400);
    expect(edn.body?.error).toMatch(/Invalid query: Invalid EDN/);
    const condition = await search('search', '[:frob :host 1]');
    expect(condition.status).toBe(400);
    expect(condition.body?.error).toMatch(/Invalid query: .*:frob/);
  });

  it('answers 413 over the body limit and 405 with Allow for a wrong method', async () => {
    await addStream('big', INDEX_BY_HOST);
    const events = Array.from({ length: 5000 }, (_, i) => ({ host: `host-${i}`, description: 'x'.repeat(40) }));
    const tooBig = await push('big', events);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body?.error).toMatch(/limit of 200000 bytes/);
    const wrong = await call('/api/v1/stream/big', { method: 'PATCH' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('DELETE, GET, HEAD, POST, PUT');
    expect(wrong.body?.error).toMatch(/not allowed/);
  });

  it('exposes the per-stream metrics', async () => {
    await addStream('metered', '{:actions {:action :increment :children [{:action :index :params [[:host]]}]}}');
    await push('metered', [{ host: 'a', metric: 1 }, { host: 'b' }, { host: 'c', metric: 2 }]);
    const text = await (await server.request('/metrics')).text();
    expect(text).toContain('stream_events_total{name="metered"} 3');
    expect(text).toContain('stream_errors_total{name="metered"} 1');
    expect(text).toMatch(/stream_duration_seconds_count\{name="metered"\} 1/);
    expect(text).toMatch(/prometheus_remote_write_total \d+/);
    expect(text).toMatch(/otlp_spans_total \d+/);
    expect(text).toMatch(/stream_ingest_pending_events 0/);
  });
});

describe('outputs', () => {
  it('delivers :output! emissions to a configured file output and counts them', async () => {
    const path = join(makeDataDir(), 'out.jsonl');
    const withOutput = await startServer({
      config: { streams: { outputs: { lines: { type: 'file', path, 'flush-interval': '20ms' } } } },
    });
    try {
      const stream =
        '{:actions {:action :where :params [[:> :metric 10]] :children [{:action :output! :params [:lines]}]}}';
      expect((await withOutput.request('/api/v1/stream/out', json('POST', { config: b64(stream) }))).status).toBe(200);
      const events = [
        { host: 'low', metric: 1, time: 1 },
        { host: 'high', metric: 20, time: 2 },
      ];
      expect((await withOutput.request('/api/v1/stream/out', json('PUT', { events }))).status).toBe(200);
      // The output opens the file before it writes the line: wait for the line, not for the file.
      await waitFor(() => existsSync(path) && readFileSync(path, 'utf8').length > 0, {
        message: `${path} to be written`,
      });
      expect(readFileSync(path, 'utf8')).toBe(`${JSON.stringify({ host: 'high', metric: 20, time: 2 })}\n`);
      // The file can appear before the write promise settles and the counter moves.
      const metrics = await waitFor(async () => {
        const text = await (await withOutput.request('/metrics')).text();
        expect(text).toContain('stream_output_sent_total{output="lines"} 1');
        return text;
      });
      expect(metrics).toContain('stream_output_queue_size{output="lines"} 0');
    } finally {
      await withOutput.kill9();
    }
  });
});

describe('configuration limits', () => {
  it('refuses :persist with no stream directory (400) and answers 503 when the ingest backlog is full', async () => {
    const limited = await startServer({ config: { streams: { directories: [], 'max-pending-events': 5000 } } });
    try {
      const persist = await limited.request(
        '/api/v1/stream/kept',
        json('POST', { config: b64(`{:persist true ${INDEX_BY_HOST.slice(1)}`) }),
      );
      expect(persist.status).toBe(400);
      expect(await persist.json()).toEqual({
        error: 'The stream cannot be saved. No directory configured for streams',
      });

      const slow =
        '{:actions {:action :by :params [{:fields [:host]}] :children [{:action :index :params [[:host]]}]}}';
      expect((await limited.request('/api/v1/stream/slow', json('POST', { config: b64(slow) }))).status).toBe(200);
      // A batch far over the backlog is taken when nothing waits, then pushed in slices; batches that arrive
      // meanwhile do not fit and get 503 with Retry-After.
      // On a loaded machine the pushes race: a small push may get through before the big one is read (the big one
      // then finds events waiting and is the one refused), or only once it is done (the big one is then sent again,
      // a few times at most). Either way some push is refused, with Retry-After, and nothing else fails.
      const big = Array.from({ length: 150_000 }, (_, i) => ({ host: `h${i}`, time: i }));
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      const note = async (response: Response) => {
        statuses.push(response.status);
        if (response.status === 503) {
          retryAfter = response.headers.get('retry-after');
          expect((await response.json()) as unknown).toEqual({
            error: 'Too many events waiting to be processed (limit 5000), retry later',
          });
        } else await response.arrayBuffer();
      };
      for (let attempt = 0; attempt < 5 && !statuses.includes(503); attempt++) {
        const bigPush = limited.request('/api/v1/stream/slow', json('PUT', { events: big }));
        let bigDone = false;
        void bigPush.then(() => (bigDone = true));
        while (!bigDone && !statuses.includes(503)) {
          await note(
            await limited.request(
              '/api/v1/stream/slow',
              json('PUT', { events: Array.from({ length: 100 }, () => ({ host: 'small', time: 1 })) }),
            ),
          );
        }
        await note(await bigPush);
      }
      expect(statuses).toContain(503);
      expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
      expect(retryAfter).toBe('1');
      const metrics = await (await limited.request('/metrics')).text();
      expect(metrics).toMatch(/stream_ingest_rejected_total\{route="stream"\} [1-9]/);
    } finally {
      await limited.kill9();
    }
  }, 120_000);
});
