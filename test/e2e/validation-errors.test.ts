/**
 * Every validation error of a body at once (docs/http-api.md, "Validation errors"), through the real server: a
 * refused body answers `errors: [{field, message}]`, one per field, beside `message`, the first of them worded as
 * it always was. The schema's problems and the rules checked after it (interval at least the timeout, a regular
 * expression that compiles, cert and key together...) are listed together, for checks of every kind, bulk bodies,
 * maintenance windows, status pages, incidents and tokens. Nothing is created by a refused body.
 *
 * And the `url` shorthand of HTTP checks (docs/checks.md, "HTTP"): expanded to protocol, target, port and path, a
 * conflict with those fields named, userinfo and other schemes refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

interface Refusal {
  message: string;
  errors: { field: string; message: string }[];
}

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ config: { 'status-pages': [{ slug: 'public', title: 'Public', groups: [] }] } });
});
afterAll(async () => {
  await server?.stop();
});

const post = (path: string, body: unknown) =>
  server.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function refused(path: string, body: unknown, status = 400): Promise<Refusal> {
  const response = await post(path, body);
  const answer = (await response.json()) as Refusal;
  expect(response.status, JSON.stringify(answer)).toBe(status);
  return answer;
}

const fieldsOf = (refusal: Refusal) => refusal.errors.map((error) => error.field);
const exists = async (path: string) => (await server.request(path)).status === 200;

describe('a refused check', () => {
  it('lists every problem: four of the rules checked after the schema', async () => {
    const answer = await refused('/api/v1/healthcheck/http', {
      name: 'four',
      target: 'example.com',
      port: 70000,
      interval: '1s',
      timeout: '5s',
      'valid-status': [42],
      'body-regexp': ['('],
    });
    expect(answer.message).toBe(
      'Invalid healthcheck configuration: interval: must be greater than or equal to the timeout (interval 1s < timeout 5s)',
    );
    expect(answer.errors).toEqual([
      { field: 'interval', message: 'must be greater than or equal to the timeout (interval 1s < timeout 5s)' },
      { field: 'port', message: 'must be between 1 and 65535, got 70000' },
      { field: 'valid-status[0]', message: 'must be between 100 and 599, got 42' },
      { field: 'body-regexp[0]', message: expect.stringMatching(/^must be a valid RE2 regular expression/) },
    ]);
    expect(await exists('/api/v1/healthcheck/four')).toBe(false);
  });

  it('lists each wrong state field, not only the first', async () => {
    const answer = await refused('/api/v1/healthcheck/tcp', {
      name: 'states',
      target: '127.0.0.1',
      port: 80,
      interval: '10s',
      timeout: '1s',
      'failure-threshold': 0,
      'success-threshold': 101,
      degraded: { 'response-time': '-1s' },
    });
    expect(fieldsOf(answer)).toEqual(['failure-threshold', 'success-threshold', 'degraded.response-time']);
    expect(await exists('/api/v1/healthcheck/states')).toBe(false);
  });

  it("lists the schema's problems with the others, an unknown key first, as the message has always named it", async () => {
    const answer = await refused('/api/v1/healthcheck/http', {
      name: 'mixed',
      target: 'http://127.0.0.1:8080/health',
      port: 80,
      interval: '10s',
      prot: 'https',
      cert: '/etc/client.pem',
    });
    expect(answer.message).toBe('Invalid healthcheck configuration: unknown key "prot" (did you mean "port"?)');
    expect(answer.errors).toEqual([
      { field: 'prot', message: 'unknown key "prot" (did you mean "port"?)' },
      { field: 'timeout', message: 'is required' },
      { field: 'valid-status', message: 'is required' },
      { field: 'target', message: expect.stringContaining('not a URL') },
      { field: 'key', message: 'is required when cert is set (a client certificate needs both)' },
    ]);
  });

  it('the three refusals of the issue at once: url was unknown, timeout and valid-status missing', async () => {
    const answer = await refused('/api/v1/healthcheck/http', { name: 'kuma', url: 'https://example.com/' });
    expect(fieldsOf(answer)).toEqual(['timeout', 'valid-status', 'interval']);
  });

  it('names each field of another kind posted to a kind (a form of the wrong kind)', async () => {
    const answer = await refused('/api/v1/healthcheck/tcp', {
      name: 'db',
      target: '127.0.0.1',
      port: 5432,
      interval: '10s',
      timeout: '1s',
      query: { a: 'b' },
      'valid-status': [200],
    });
    expect(answer.message).toBe('Invalid healthcheck configuration: unknown key "query"');
    expect(answer.errors).toEqual([
      { field: 'query', message: 'unknown key "query"' },
      { field: 'valid-status', message: 'unknown key "valid-status"' },
    ]);
    expect(await exists('/api/v1/healthcheck/db')).toBe(false);
  });

  it('of a heartbeat check lists the schema and its own rules together', async () => {
    const answer = await refused('/api/v1/healthcheck/heartbeat', {
      name: 'cron',
      interval: '0s',
      grace: '-1s',
      token: 'short',
    });
    expect(fieldsOf(answer).sort()).toEqual(['grace', 'interval', 'token']);
  });

  it('in a bulk body: every check, each field named by its list and position; nothing applied', async () => {
    const answer = await refused('/api/v1/healthcheck/bulk', {
      'http-checks': [
        { name: 'ok', target: '127.0.0.1', port: 80, interval: '1m', timeout: '1s', 'valid-status': [200] },
        { name: 'bad-port', target: '127.0.0.1', port: 0, interval: '1m', timeout: '1s', 'valid-status': [200] },
      ],
      'tcp-checks': [
        { name: 'ok', target: '127.0.0.1', port: 80, interval: '1m', timeout: '1s' },
        { name: 'no-timeout', target: '127.0.0.1', port: 80, interval: '1m' },
      ],
      'smtp-checks': 'nope',
    });
    expect(answer.message).toBe(
      'Invalid healthcheck configuration: check "bad-port" (http-checks[1]): port: must be between 1 and 65535, got 0',
    );
    expect(answer.errors).toEqual([
      { field: 'http-checks[1].port', message: 'must be between 1 and 65535, got 0' },
      { field: 'tcp-checks[0].name', message: 'duplicate name "ok" (also http-checks[0])' },
      { field: 'tcp-checks[1].timeout', message: 'is required' },
      { field: 'smtp-checks', message: 'must be a list' },
    ]);
    expect(await exists('/api/v1/healthcheck/ok')).toBe(false);
  });
});

describe('other bodies', () => {
  it('a maintenance window', async () => {
    const answer = await refused('/api/v1/maintenance', {
      name: 'a/b',
      start: 'tomorrow',
      duration: '1h',
      every: '30m',
      colour: 'red',
    });
    expect(answer.message).toBe('Invalid maintenance window: unknown key "colour"');
    expect(fieldsOf(answer)).toEqual(['colour', 'name', 'start', 'every']);
    const list = (await (await server.request('/api/v1/maintenance')).json()) as { result: unknown[] };
    expect(list.result).toEqual([]);
  });

  it('a status page', async () => {
    const answer = await refused('/api/v1/status-page', {
      slug: 'Bad Slug',
      title: 'T',
      groups: [
        { name: 'both', checks: ['a'], labels: { x: 'y' } },
        { name: 'names', checks: ['a/b', 'ok'] },
      ],
    });
    expect(fieldsOf(answer)).toEqual(['slug', 'groups[0]', 'groups[1].checks[0]']);
    expect(await exists('/api/v1/status-page/Bad%20Slug')).toBe(false);
  });

  it('an incident, and an update of one', async () => {
    const answer = await refused('/api/v1/incident', {
      title: 'Down',
      status: 'exploded',
      message: 'm',
      pages: ['public', 'nope'],
      checks: ['a/b'],
    });
    expect(answer.message).toMatch(/^Invalid incident: status: must be one of/);
    expect(fieldsOf(answer)).toEqual(['status', 'pages[1]', 'checks[0]']);
    const incidents = (await (await server.request('/api/v1/incident')).json()) as { result: unknown[] };
    expect(incidents.result).toEqual([]);
    const created = await post('/api/v1/incident', { title: 'Slow', status: 'investigating', message: 'm' });
    const { id } = ((await created.json()) as { result: { id: number } }).result;
    const update = await refused(`/api/v1/incident/${id}/update`, { status: 'fine', extra: 1 });
    expect(fieldsOf(update)).toEqual(['extra', 'message', 'status']);
  });

  it('a token', async () => {
    const answer = await refused('/api/v1/tokens', { name: 'bad name', scopes: ['root', 'read'], colour: 1 });
    expect(answer.message).toMatch(/^Invalid token: unknown key "colour"/);
    expect(fieldsOf(answer)).toEqual(['colour', 'name', 'scopes[0]']);
    const tokens = (await (await server.request('/api/v1/tokens')).json()) as { tokens: unknown[] };
    expect(tokens.tokens).toEqual([]);
  });
});

describe('the url of an HTTP check', () => {
  const listed = async (name: string) =>
    (await (await server.request(`/api/v1/healthcheck/${name}`)).json()) as Record<string, unknown>;
  const create = (name: string, url: string, extra: Record<string, unknown> = {}) =>
    post('/api/v1/healthcheck/http', {
      name,
      url,
      interval: '1h',
      timeout: '1s',
      'valid-status': [200],
      ...extra,
    });

  it('expands to protocol, target, port and path; the listing shows those fields, not url', async () => {
    expect((await create('by-url', 'https://example.com:8443/health?full=1&x=%20')).status).toBe(201);
    const definition = await listed('by-url');
    expect(definition).toMatchObject({
      protocol: 'https',
      target: 'example.com',
      port: 8443,
      path: '/health?full=1&x=%20',
    });
    expect(definition).not.toHaveProperty('url');
    expect(definition).not.toHaveProperty('query');
    // The listing posts back as is.
    const again = await post('/api/v1/healthcheck/http', definition);
    expect(again.status).toBe(201);

    expect((await create('default-https', 'https://example.com')).status).toBe(201);
    expect(await listed('default-https')).toMatchObject({ protocol: 'https', port: 443, path: '/' });
    expect((await create('default-http', 'http://example.com/a')).status).toBe(201);
    expect(await listed('default-http')).toMatchObject({ protocol: 'http', port: 80, path: '/a' });
    expect((await create('ipv6', 'http://[::1]:9/x')).status).toBe(201);
    expect(await listed('ipv6')).toMatchObject({ target: '::1', port: 9, path: '/x' });
  });

  it('runs: a one-off check of this very server by its url', async () => {
    const response = await post('/api/v1/healthcheck/http', {
      name: 'self',
      url: `${server.url}/healthz`,
      timeout: '2s',
      'one-off': true,
      'valid-status': [200],
    });
    const answer = (await response.json()) as { result: { success: boolean; message: string } };
    expect(response.status, JSON.stringify(answer)).toBe(201);
    expect(answer.result.success).toBe(true);
  });

  it('refuses the fields it stands for beside it, userinfo, other schemes and fragments', async () => {
    const both = await refused('/api/v1/healthcheck/http', {
      name: 'both',
      url: 'https://example.com/',
      target: 'example.com',
      port: 443,
      interval: '1h',
      timeout: '1s',
      'valid-status': [200],
    });
    expect(both.errors).toEqual([
      {
        field: 'url',
        message: 'give either url or target, port, not both (url stands for protocol, target, port, path, query)',
      },
    ]);
    for (const [url, problem] of [
      ['https://user:secret@example.com/', 'must not carry a user name or password'],
      ['ftp://example.com/', 'must be an http:// or https:// URL'],
      ['example.com/health', 'must be an http:// or https:// URL'],
      ['https://example.com/#top', 'must not have a fragment'],
    ] as const) {
      const answer = await refused('/api/v1/healthcheck/http', {
        name: 'bad-url',
        url,
        interval: '1h',
        timeout: '1s',
        'valid-status': [200],
      });
      expect(answer.errors, url).toEqual([{ field: 'url', message: expect.stringContaining(problem) }]);
      expect(answer.message).not.toContain('secret');
    }
    expect(await exists('/api/v1/healthcheck/both')).toBe(false);
    expect(await exists('/api/v1/healthcheck/bad-url')).toBe(false);
  });
});
