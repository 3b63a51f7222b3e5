/**
 * The compressed answers of a scope (src/server/compression.ts), over a real socket: which encoding a client
 * gets for its Accept-Encoding, what is left as it is (small answers, answers already encoded, routes outside the
 * scope, HEAD), and that what arrives decompresses to what the route sent.
 */
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gzipSync, gunzipSync } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compressAnswers } from '../../src/server/compression.ts';

const LARGE = JSON.stringify({
  checks: Array.from({ length: 200 }, (_, i) => ({ name: `check-${i}`, success: i % 7 !== 0, message: 'success' })),
});
const HTML = `<!doctype html><title>status</title>${'<p>all systems operational</p>'.repeat(100)}`;
const SMALL = JSON.stringify({ message: 'under the threshold' });
const PRECOMPRESSED = gzipSync(Buffer.from(LARGE));

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

let app: FastifyInstance;
let base: string;

/** The answer as sent: undici's fetch would decompress it. */
function rawGet(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    request(`${base}${path}`, { method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }),
      );
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

function decoded(answer: RawAnswer): string {
  const encoding = answer.headers['content-encoding'];
  if (encoding === 'br') return brotliDecompressSync(answer.body).toString('utf8');
  if (encoding === 'gzip') return gunzipSync(answer.body).toString('utf8');
  expect(encoding).toBeUndefined();
  return answer.body.toString('utf8');
}

beforeAll(async () => {
  app = Fastify();
  await app.register(async (scope) => {
    await compressAnswers(scope);
    scope.get('/in/large', async (_request, reply) => reply.type('application/json; charset=utf-8').send(LARGE));
    scope.get('/in/html', async (_request, reply) =>
      reply.type('text/html; charset=utf-8').header('vary', 'origin').send(HTML),
    );
    scope.get('/in/small', async (_request, reply) => reply.type('application/json; charset=utf-8').send(SMALL));
    scope.get('/in/object', async () => JSON.parse(LARGE) as unknown);
    scope.get('/in/encoded', async (_request, reply) =>
      reply.type('application/json').header('content-encoding', 'gzip').send(PRECOMPRESSED),
    );
    scope.get('/in/empty', async (_request, reply) => reply.code(204).send());
  });
  app.get('/out/large', async (_request, reply) => reply.type('application/json; charset=utf-8').send(LARGE));
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await app.close();
});

describe('compressed answers', () => {
  it('answers brotli to a client that accepts it, gzip to one that accepts only gzip', async () => {
    const brotli = await rawGet('/in/large', { 'accept-encoding': 'gzip, deflate, br' });
    const gzip = await rawGet('/in/large', { 'accept-encoding': 'gzip' });
    expect([brotli.status, gzip.status]).toEqual([200, 200]);
    expect([brotli.headers['content-encoding'], gzip.headers['content-encoding']]).toEqual(['br', 'gzip']);
    expect([decoded(brotli), decoded(gzip)]).toEqual([LARGE, LARGE]);
    // The length sent is the compressed one, and a cache keeps one copy per Accept-Encoding.
    for (const answer of [brotli, gzip]) {
      expect(Number(answer.headers['content-length'])).toBe(answer.body.length);
      expect(answer.body.length).toBeLessThan(LARGE.length / 4);
      expect(answer.headers.vary).toBe('accept-encoding');
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    }
  });

  it("follows the client's weights, aliases and wildcard", async () => {
    const cases: [string, string | undefined][] = [
      ['br;q=0, gzip', 'gzip'],
      ['gzip;q=0.5, br;q=0.9', 'br'],
      ['x-gzip', 'gzip'],
      // The wildcard is read as gzip, which every client decodes.
      ['*', 'gzip'],
      ['identity', undefined],
      ['deflate', undefined],
      ['', undefined],
    ];
    for (const [accept, expected] of cases) {
      const answer = await rawGet('/in/large', { 'accept-encoding': accept });
      expect(answer.headers['content-encoding'], accept).toBe(expected);
      expect(decoded(answer), accept).toBe(LARGE);
    }
    const none = await rawGet('/in/large');
    expect(none.headers['content-encoding']).toBeUndefined();
    expect(none.body.toString('utf8')).toBe(LARGE);
  });

  it('compresses a serialized object and an HTML page, and adds to a Vary the route set', async () => {
    const object = await rawGet('/in/object', { 'accept-encoding': 'br' });
    expect(object.headers['content-encoding']).toBe('br');
    expect(JSON.parse(decoded(object))).toEqual(JSON.parse(LARGE));
    const html = await rawGet('/in/html', { 'accept-encoding': 'gzip' });
    expect(html.headers['content-encoding']).toBe('gzip');
    expect(decoded(html)).toBe(HTML);
    expect(html.headers.vary).toBe('origin, accept-encoding');
  });

  it('leaves as they are a small answer, an encoded one, an empty one, and a route outside the scope', async () => {
    const small = await rawGet('/in/small', { 'accept-encoding': 'br, gzip' });
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.body.toString('utf8')).toBe(SMALL);
    const encoded = await rawGet('/in/encoded', { 'accept-encoding': 'br' });
    expect(encoded.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(encoded.body).toString('utf8')).toBe(LARGE);
    const empty = await rawGet('/in/empty', { 'accept-encoding': 'br' });
    expect([empty.status, empty.headers['content-encoding'], empty.body.length]).toEqual([204, undefined, 0]);
    const outside = await rawGet('/out/large', { 'accept-encoding': 'br, gzip' });
    expect(outside.headers['content-encoding']).toBeUndefined();
    expect(outside.body.toString('utf8')).toBe(LARGE);
    const refused = await rawGet('/in/large', { 'accept-encoding': 'br', 'x-no-compression': '1' });
    expect(refused.headers['content-encoding']).toBeUndefined();
    expect(refused.body.toString('utf8')).toBe(LARGE);
  });

  it('answers a hostile Accept-Encoding with a readable answer', async () => {
    const hostile = [
      'br;q=abc, gzip;q=',
      'gzip;q=1e309, br;q=-1',
      ','.repeat(8_000),
      `${'x;q=0.5,'.repeat(1_000)}gzip`,
      'BR',
      'identity;q=0, *;q=0',
    ];
    for (const accept of hostile) {
      const answer = await rawGet('/in/large', { 'accept-encoding': accept });
      expect(answer.status, accept.slice(0, 40)).toBe(200);
      expect(decoded(answer), accept.slice(0, 40)).toBe(LARGE);
    }
  });

  it('answers a HEAD plain, with no body: nothing is compressed to be thrown away', async () => {
    const head = await rawGet('/in/large', { 'accept-encoding': 'gzip' }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-encoding']).toBeUndefined();
    expect(head.headers['content-type']).toBe('application/json; charset=utf-8');
  });
});
