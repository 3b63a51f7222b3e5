/**
 * Floods and lockouts (docs/hardening.md, "Heartbeat floods", "Guessing credentials", "The audit log under a
 * flood"): the bytes of reports waiting to be written are capped, a valid heartbeat token is never locked out by
 * someone else's wrong guesses from the same address, `?token=` takes heartbeat tokens only, and anonymous changes
 * count as failed authentications whose audit rows cannot push the history out.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const OWN_TOKEN = 'the-backup-jobs-own-token';
const HEARTBEAT_TOKEN = 'heartbeat-scoped-api-token-0123';
const READ_TOKEN = 'read-scoped-api-token-0123456789';
const ADMIN = `Basic ${Buffer.from('ops:pw').toString('base64')}`;
const CHECKS = 100;
const MAX_PENDING_BYTES = 1024 * 1024;

let server: TestServer;
beforeAll(async () => {
  server = await startServer({
    config: {
      http: {
        'basic-auth': { username: 'ops', password: 'pw' },
        tokens: [
          { name: 'cron', sha256: sha256(HEARTBEAT_TOKEN), scopes: ['heartbeat'] },
          { name: 'reader', sha256: sha256(READ_TOKEN), scopes: ['read'] },
        ],
        'max-auth-failures': 10,
        'auth-failure-window': '1m',
      },
      healthchecks: { 'max-pending-bytes': MAX_PENDING_BYTES },
      'heartbeat-checks': [
        { name: 'backup', interval: '1h', token: OWN_TOKEN },
        ...Array.from({ length: CHECKS }, (_, i) => ({ name: `job-${i}`, interval: '1h' })),
      ],
    },
  });
});
afterAll(async () => {
  await server?.kill9();
});

/** A request from a chosen loopback address. */
function send(
  path: string,
  from: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port: url.port,
        path: url.pathname + url.search,
        method: options.method ?? 'GET',
        localAddress: from,
        headers: options.headers ?? {},
      },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

async function metric(line: RegExp): Promise<number> {
  const text = await (await server.request('/metrics', { headers: { authorization: ADMIN } })).text();
  return Number(line.exec(text)?.[1] ?? Number.NaN);
}

describe('heartbeat floods', () => {
  it('hold at most healthchecks.max-pending-bytes of reports waiting; the rest folds into the aggregates, counted', async () => {
    const body = `backup failed: ${'x'.repeat(4096 - 15)}`;
    const reports = 2_000;
    let next = 0;
    const held: number[] = [];
    let flooding = true;
    const sampler = (async () => {
      while (flooding) held.push(await metric(/^healthcheck_pending_bytes (\d+)$/m));
    })();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < reports) {
          const i = next++;
          const answer = await send(`/api/v1/heartbeat/job-${i % CHECKS}/fail`, '127.0.0.1', {
            method: 'POST',
            headers: { authorization: ADMIN, 'content-type': 'text/plain' },
            body,
          });
          expect(answer.status).toBe(200);
        }
      }),
    );
    flooding = false;
    await sampler;
    // Without the cap, 2,000 reports of 4 KiB would wait (20 a check, under history-size and max-pending-results):
    // 16 MB at two bytes a character. With it, reaching the cap writes what waits, and what came meanwhile folds.
    expect(held.length).toBeGreaterThan(0);
    expect(Math.max(...held)).toBeLessThanOrEqual(MAX_PENDING_BYTES);
    expect(await metric(/^healthcheck_results_folded_total\{reason="pending_bytes"\} (\d+)$/m)).toBeGreaterThan(0);
    // Every report still counts in its check's uptime.
    await waitFor(async () => {
      let runs = 0;
      for (let i = 0; i < CHECKS; i += 33) {
        const answer = await send(`/api/v1/result/job-${i}/uptime`, '127.0.0.1', { headers: { authorization: ADMIN } });
        runs += (JSON.parse(answer.body) as { uptime: { '24h': { runs: number } } }).uptime['24h'].runs;
      }
      return runs === 4 * (reports / CHECKS);
    });
  });
});

describe('heartbeat tokens and the failure limit', () => {
  it("a valid heartbeat token is never locked out by the address's wrong guesses; everything else is", async () => {
    const from = '127.0.0.3';
    for (let i = 0; i < 10; i++) {
      const guess = await send('/api/v1/healthcheck', from, { headers: { authorization: `Bearer guess-${i}` } });
      expect(guess.status).toBe(401);
    }
    expect((await send('/api/v1/healthcheck', from, { headers: { authorization: ADMIN } })).status).toBe(429);
    expect((await send(`/api/v1/heartbeat/backup?token=${OWN_TOKEN}`, from)).status).toBe(200);
    expect(
      (await send('/api/v1/heartbeat/backup', from, { headers: { authorization: `Bearer ${OWN_TOKEN}` } })).status,
    ).toBe(200);
    expect(
      (await send('/api/v1/heartbeat/job-1', from, { headers: { authorization: `Bearer ${HEARTBEAT_TOKEN}` } })).status,
    ).toBe(200);
    expect((await send(`/api/v1/heartbeat/job-1?token=${HEARTBEAT_TOKEN}`, from)).status).toBe(200);
    // A wrong heartbeat token is still a guess, refused at the limit.
    expect((await send('/api/v1/heartbeat/backup?token=wrong-token-0123456789', from)).status).toBe(429);
  });

  it('?token= takes heartbeat tokens only; other tokens go as bearers', async () => {
    const from = '127.0.0.4';
    expect((await send(`/api/v1/heartbeat/job-2?token=${READ_TOKEN}`, from)).status).toBe(401);
    expect(
      (await send('/api/v1/heartbeat/job-2', from, { headers: { authorization: `Bearer ${READ_TOKEN}` } })).status,
    ).toBe(403);
  });
});

describe('anonymous changes', () => {
  it('count as failed authentications, and a flood of them writes a bounded number of audit rows, the rest counted', async () => {
    const from = '127.0.0.5';
    const answers: number[] = [];
    for (let i = 0; i < 300; i++) {
      const answer = await send(`/api/v1/healthcheck/flood-${i}`, from, { method: 'DELETE' });
      answers.push(answer.status);
    }
    expect(answers.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(answers.slice(10)).toEqual(Array(290).fill(429));
    const audit = JSON.parse(
      (await send('/api/v1/audit?limit=1000', '127.0.0.1', { headers: { authorization: ADMIN } })).body,
    ) as { result: { address: string }[] };
    expect(audit.result.filter((row) => row.address === from)).toHaveLength(10);
    expect(await metric(/^audit_rows_skipped_total\{reason="auth_limited"\} (\d+)$/m)).toBe(290);
  });
});
