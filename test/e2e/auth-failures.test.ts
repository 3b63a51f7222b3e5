/**
 * Repeated authentication failures from one address are slowed (docs/hardening.md, "Guessing credentials"): past
 * `http.max-auth-failures` wrong credentials within `http.auth-failure-window`, every request of that address that
 * needs credentials is a 429 until the window ends, a right credential included (else the guesses could go on).
 * Other addresses are not concerned; reads without any credential, and right credentials, do not count; a right
 * heartbeat token is never refused.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const RIGHT = basic('ops', 'pw');
const WRONG = basic('ops', 'guess');
const WINDOW_MS = 3_000;

let server: TestServer;
beforeAll(async () => {
  server = await startServer({
    config: {
      http: {
        host: '0.0.0.0',
        'basic-auth': { username: 'ops', password: 'pw' },
        'max-auth-failures': 3,
        'auth-failure-window': `${WINDOW_MS}ms`,
        public: ['badges'],
      },
      // Public badges answer for checks that say so (or that a public status page shows).
      'heartbeat-checks': [{ name: 'cron', interval: '1h', token: 'the-cron-jobs-own-token', badge: 'public' }],
    },
  });
});
afterAll(async () => {
  await server?.stop();
});

/** A GET from a chosen loopback address. */
function get(
  path: string,
  from: string,
  authorization?: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port: url.port,
        path: url.pathname + url.search,
        localAddress: from,
        headers: authorization ? { authorization } : {},
      },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      },
    );
    request.on('error', reject);
    request.end();
  });
}

const metric = async (name: string) => {
  const text = (await get('/metrics', '127.0.0.9', RIGHT)).body;
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 'NaN');
};

describe('repeated authentication failures', () => {
  it('answer 429 to the address past the limit, right credentials included, until the window ends; other addresses go on', async () => {
    // Without any credential, and with the right one: nothing counts.
    for (let i = 0; i < 5; i++) expect((await get('/api/v1/healthcheck', '127.0.0.2')).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await get('/api/v1/healthcheck', '127.0.0.2', RIGHT)).status).toBe(200);

    for (let i = 0; i < 3; i++) expect((await get('/api/v1/healthcheck', '127.0.0.2', WRONG)).status).toBe(401);
    const limited = await get('/api/v1/healthcheck', '127.0.0.2', RIGHT);
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.body)).toEqual({
      message: expect.stringMatching(
        /^Too many failed authentications from 127\.0\.0\.2 \(http\.max-auth-failures: 3 within 3000 ms\): retry in \d+ s$/,
      ),
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await get('/api/v1/healthcheck', '127.0.0.2', WRONG)).status).toBe(429);
    // A public route needs no credential, and stays open.
    expect((await get('/api/v1/badge/cron/status.svg', '127.0.0.2')).status).toBe(200);

    // Another address is not concerned.
    expect((await get('/api/v1/healthcheck', '127.0.0.3', RIGHT)).status).toBe(200);
    expect(await metric('http_auth_failures_total')).toBe(3);
    expect(await metric('http_auth_limited_total')).toBe(2);

    // Once the window has passed, the address is heard again (a refused request does not count as a failure).
    await waitFor(async () => (await get('/api/v1/healthcheck', '127.0.0.2', RIGHT)).status === 200, {
      timeoutMs: WINDOW_MS + 15_000,
      intervalMs: 200,
      message: 'the address heard again',
    });
  });

  it('counts wrong heartbeat tokens too, and never refuses a right one (a cron job behind the same NAT)', async () => {
    for (let i = 0; i < 3; i++) expect((await get('/api/v1/heartbeat/cron?token=wrong', '127.0.0.4')).status).toBe(401);
    expect((await get('/api/v1/heartbeat/cron?token=wrong', '127.0.0.4')).status).toBe(429);
    expect((await get('/api/v1/healthcheck', '127.0.0.4', RIGHT)).status).toBe(429);
    expect((await get('/api/v1/heartbeat/cron?token=the-cron-jobs-own-token', '127.0.0.4')).status).toBe(200);
  });
});
