/**
 * Gzip bodies on the Fluent Bit input through the real server: what Fluent Bit's `http` output sends with
 * `format json` and `compress gzip` (`Content-Encoding: gzip`). The decompressed size is bounded by the body
 * limit: a body that inflates past it (a gzip bomb) gets 413 and is counted, as are broken gzip and unknown
 * encodings.
 */
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

const BODY_LIMIT = 1024 * 1024;
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

let server: TestServer;

beforeAll(async () => {
  server = await startServer({ config: { http: { 'body-limit': BODY_LIMIT } } });
  const config = b64('{:actions {:action :index :params [[:host :log]]}}');
  const added = await server.request('/api/v1/stream/logs', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ config }),
  });
  expect(added.status).toBe(200);
});
afterAll(async () => {
  await server.stop();
});

function post(body: Buffer, encoding = 'gzip'): Promise<Response> {
  return server.request('/api/v1/fluentbit/logs', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-encoding': encoding },
    body,
  });
}

async function search(query: string): Promise<Record<string, unknown>[]> {
  const response = await server.request('/api/v1/index/logs/search', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: b64(query) }),
  });
  return ((await response.json()) as { events: Record<string, unknown>[] }).events;
}

async function refused(reason: string): Promise<number> {
  const text = await (await server.request('/metrics')).text();
  return Number(
    new RegExp(`^stream_ingest_refused_bodies_total\\{route="fluentbit",reason="${reason}"\\} (\\d+)`, 'm').exec(
      text,
    )?.[1] ?? 0,
  );
}

describe('POST /api/v1/fluentbit/<name> with Content-Encoding: gzip', () => {
  it('indexes the records of a gzip body with time in ns', async () => {
    const records = [
      { date: 1_735_047_872.5, host: 'gz-1', log: 'GET /health 200' },
      { date: 1_735_047_873.25, host: 'gz-1', log: 'GET /metrics 200', code: 200 },
    ];
    const response = await post(gzipSync(JSON.stringify(records)));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
    const events = await search('[:= :host "gz-1"]');
    expect(events.sort((a, b) => Number(a.time) - Number(b.time))).toEqual([
      { host: 'gz-1', log: 'GET /health 200', time: 1_735_047_872_500_000_000 },
      { host: 'gz-1', log: 'GET /metrics 200', code: 200, time: 1_735_047_873_250_000_000 },
    ]);
  });

  it('accepts a body that inflates to just under the body limit', async () => {
    const records = Array.from({ length: 9000 }, (_, i) => ({
      date: 1_735_047_900 + i,
      host: 'gz-big',
      log: `line ${i} ${'x'.repeat(60)}`,
    }));
    const json = Buffer.from(JSON.stringify(records));
    expect(json.length).toBeGreaterThan(BODY_LIMIT * 0.7);
    expect(json.length).toBeLessThan(BODY_LIMIT);
    expect((await post(gzipSync(json))).status).toBe(200);
    expect(await search('[:= :host "gz-big"]')).toHaveLength(9000);
  });

  it('refuses a gzip bomb with 413 and counts it', async () => {
    const before = await refused('too_large');
    // 64 MiB of JSON whitespace: under 70 KiB compressed, 64 times the limit once inflated.
    const bomb = gzipSync(Buffer.concat([Buffer.from('['), Buffer.alloc(64 * BODY_LIMIT, 0x20), Buffer.from(']')]));
    expect(bomb.length).toBeLessThan(BODY_LIMIT / 8);
    const response = await post(bomb);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      error: `Fluent Bit body inflates to more than the limit of ${BODY_LIMIT} bytes`,
    });
    expect(await refused('too_large')).toBe(before + 1);
    // The server is still serving ingestion.
    expect((await post(gzipSync(JSON.stringify([{ date: 1_735_048_000, host: 'gz-after', log: 'ok' }])))).status).toBe(
      200,
    );
    expect(await search('[:= :host "gz-after"]')).toHaveLength(1);
  });

  it('refuses a compressed body over the body limit with 413', async () => {
    const response = await post(gzipSync(randomBytes(BODY_LIMIT + 4096)));
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: string }).error).toBe(
      `Request body is larger than the limit of ${BODY_LIMIT} bytes`,
    );
  });

  it('answers 400 for a body that is not gzip, and 415 for another encoding, counting both', async () => {
    const invalidBefore = await refused('invalid_gzip');
    const broken = await post(Buffer.from('[{"date": 1, "log": "not compressed"}]'));
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: string }).error).toMatch(/^invalid gzip body: /);
    expect(await refused('invalid_gzip')).toBe(invalidBefore + 1);

    const unsupported = await post(Buffer.from('[]'), 'br');
    expect(unsupported.status).toBe(415);
    expect(await unsupported.json()).toEqual({ error: 'Unsupported Content-Encoding "br": expected gzip or none' });
    expect(await refused('unsupported_encoding')).toBe(1);
  });

  it('still reads uncompressed bodies', async () => {
    const response = await post(
      Buffer.from(JSON.stringify([{ date: 1_735_048_100, host: 'plain', log: 'x' }])),
      'identity',
    );
    expect(response.status).toBe(200);
    expect(await search('[:= :host "plain"]')).toEqual([{ host: 'plain', log: 'x', time: 1_735_048_100e9 }]);
  });
});
