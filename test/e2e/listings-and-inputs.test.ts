/**
 * Small edges of the API (docs/hardening.md): a heartbeat check's token digest is the admin's to read, the uptime
 * report keeps to RFC 3339's four-digit years, and labels refuse control characters as names do, by every path a
 * check comes in (the API, the config file, a discovery payload).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import { parseBulk } from '../../src/healthcheck/admission/api-input.ts';
import { DEFAULT_LABEL_LIMITS } from '../../src/healthcheck/kinds/index.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const READ_TOKEN = 'read-scoped-api-token-0123456789';
const OWN_TOKEN = 'the-backup-jobs-own-token';
const ADMIN = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
const READ = { authorization: `Bearer ${READ_TOKEN}` };

let server: TestServer;
beforeAll(async () => {
  server = await startServer({
    config: {
      http: {
        'basic-auth': { username: 'ops', password: 'pw' },
        tokens: [{ name: 'reader', sha256: sha256(READ_TOKEN), scopes: ['read'] }],
      },
      'heartbeat-checks': [{ name: 'backup', interval: '1h', token: OWN_TOKEN }],
    },
  });
});
afterAll(async () => {
  await server?.kill9();
});

const get = async (path: string, headers: Record<string, string>) => {
  const response = await server.request(path, { headers });
  return { status: response.status, text: await response.text() };
};

describe("a heartbeat check's token-sha256", () => {
  it('is listed to admin credentials only: a read token could match it against tokens it guesses offline', async () => {
    for (const path of ['/api/v1/healthcheck', '/api/v1/healthcheck/backup', '/healthcheck', '/healthcheck/backup']) {
      const asReader = await get(path, READ);
      expect(asReader.status, path).toBe(200);
      expect(asReader.text, path).not.toContain('token-sha256');
      expect(asReader.text, path).toContain('"name":"backup"');
      expect((await get(path, ADMIN)).text, path).toContain(`"token-sha256":"${sha256(OWN_TOKEN)}"`);
    }
  });
});

describe('the uptime report', () => {
  it('refuses a period past the years RFC 3339 can write, naming the parameter', async () => {
    for (const [query, field] of [
      ['to=253402300800', 'to'],
      ['to=999999999999', 'to'],
      ['from=9999-12-31T23:30:00Z', 'from'],
      ['to=9999-12-31T23:59:59Z', 'to'],
    ] as const) {
      const answer = await get(`/api/v1/report/uptime?${query}`, READ);
      expect(answer.status, query).toBe(400);
      expect(JSON.parse(answer.text), query).toMatchObject({
        message: expect.stringMatching(new RegExp(`^Invalid report: ${field}: must be at most 9999-12-31T23:00:00Z`)),
      });
    }
    const latest = await get('/api/v1/report/uptime?from=9999-12-30T00:00:00Z&to=9999-12-31T23:00:00Z', READ);
    expect(latest.status).toBe(200);
    expect(JSON.parse(latest.text)).toMatchObject({ to: '9999-12-31T23:00:00.000Z' });
  });
});

describe('labels', () => {
  const check = (labels: Record<string, string>) => ({ name: 'job', interval: '1h', labels });
  const cases: [Record<string, string>, string][] = [
    [{ 'team\n': 'ops' }, 'labels: the key "team\\n" must not contain control characters'],
    [{ team: 'ops\u001b[31m' }, 'labels.team: must not contain control characters'],
    [{ team: 'a\u0085b' }, 'labels.team: must not contain control characters'],
  ];

  it('refuse control characters through the API', async () => {
    for (const [labels, message] of cases) {
      const response = await server.request('/api/v1/healthcheck/heartbeat', {
        method: 'POST',
        headers: { ...ADMIN, 'content-type': 'application/json' },
        body: JSON.stringify(check(labels)),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ message: `Invalid healthcheck configuration: ${message}` });
    }
  });

  it('refuse them in the config file and in a discovery payload', () => {
    for (const [labels, message] of cases) {
      expect(() => parseConfigText(JSON.stringify({ 'heartbeat-checks': [check(labels)] }), 'vigie.yaml')).toThrow(
        `vigie.yaml: heartbeat-checks[0].${message}`,
      );
      expect(() => parseBulk({ 'heartbeat-checks': [check(labels)] }, DEFAULT_LABEL_LIMITS)).toThrow(
        `Invalid healthcheck configuration: check "job" (heartbeat-checks[0]): ${message}`,
      );
    }
  });
});
