/**
 * docs/http-api.md's healthcheck statuses, row by row, on both path forms, against the real server process and real
 * local targets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { closedPort, startHttpTarget, startTcpTarget, type HttpTarget, type TcpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const FORMS = [
  { prefix: '/api/v1', wrap: true },
  { prefix: '', wrap: false },
] as const;

let server: TestServer;
let tcp: TcpTarget;
let http: HttpTarget;
let closed: number;

beforeAll(async () => {
  [server, tcp, http, closed] = await Promise.all([
    startServer({ config: { http: { 'body-limit': 4096 } } }),
    startTcpTarget(),
    startHttpTarget(),
    closedPort(),
  ]);
});

afterAll(async () => {
  await Promise.all([server.kill9(), tcp.close(), http.close()]);
});

function send(method: string, path: string, body?: unknown, contentType = 'application/json') {
  return server.request(path, {
    method,
    ...(body === undefined
      ? {}
      : { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': contentType } }),
  });
}

// Response bodies are checked field by field with expect(), which does the type checking that matters here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

async function json(response: Response | Promise<Response>): Promise<{ status: number; body: Loose }> {
  const res = await response;
  return { status: res.status, body: await res.json() };
}

function tcpCheck(name: string, extra: Record<string, unknown> = {}) {
  return { name, target: '127.0.0.1', port: tcp.port, timeout: '1s', interval: '1m', ...extra };
}

function unwrap(body: Loose, wrap: boolean): Loose[] {
  if (wrap) {
    expect(Object.keys(body)).toEqual(['result']);
    return body.result;
  }
  expect(Array.isArray(body)).toBe(true);
  return body;
}

describe.each(FORMS)('the healthcheck API under "$prefix/"', ({ prefix, wrap }) => {
  const tag = wrap ? 'long' : 'short';

  it('creates a check (201), lists it sorted by name with kind and source, and gets it', async () => {
    for (const name of [`${tag}-b`, `${tag}-a`]) {
      expect(
        await json(send('POST', `${prefix}/healthcheck/tcp`, tcpCheck(name, { labels: { env: 'test' } }))),
      ).toEqual({
        status: 201,
        body: { message: 'Healthcheck successfully added' },
      });
    }
    const listed = unwrap((await json(send('GET', `${prefix}/healthcheck`))).body, wrap).filter((check) =>
      check.name.startsWith(tag),
    );
    expect(listed.map((check) => check.name)).toEqual([`${tag}-a`, `${tag}-b`]);
    const expected = {
      name: `${tag}-a`,
      description: '',
      interval: '1m0s',
      'one-off': false,
      source: 'api',
      labels: { env: 'test' },
      target: '127.0.0.1',
      port: tcp.port,
      timeout: '1s',
      'should-fail': false,
      kind: 'tcp',
    };
    expect(listed[0]).toEqual(expected);
    expect(await json(send('GET', `${prefix}/healthcheck/${tag}-a`))).toEqual({ status: 200, body: expected });
  });

  it('replaces a check posted again under the same name', async () => {
    await send('POST', `${prefix}/healthcheck/tcp`, tcpCheck(`${tag}-r`));
    expect(
      (
        await send('POST', `${prefix}/healthcheck/dns`, {
          name: `${tag}-r`,
          domain: 'localhost',
          timeout: '1s',
          interval: '1m',
        })
      ).status,
    ).toBe(201);
    const { body } = await json(send('GET', `${prefix}/healthcheck/${tag}-r`));
    expect(body).toMatchObject({ kind: 'dns', domain: 'localhost' });
    const all = unwrap((await json(send('GET', `${prefix}/healthcheck`))).body, wrap);
    expect(all.filter((check) => check.name === `${tag}-r`)).toHaveLength(1);
  });

  it('runs a one-off check at once: 201 with the result on success, nothing stored', async () => {
    const { status, body } = await json(
      send('POST', `${prefix}/healthcheck/http`, {
        name: `${tag}-once`,
        target: '127.0.0.1',
        port: http.port,
        'valid-status': [200],
        timeout: '2s',
        'one-off': true,
      }),
    );
    expect(status).toBe(201);
    expect(body.message).toBe(`One-off healthcheck ${tag}-once successfully executed`);
    expect(body.result).toMatchObject({
      name: `${tag}-once`,
      success: true,
      message: 'success',
      source: 'api',
      summary: `HTTP healthcheck on 127.0.0.1:${http.port}`,
    });
    expect(typeof body.result['healthcheck-timestamp']).toBe('number');
    expect(Number.isInteger(body.result.duration)).toBe(true);
    expect((await send('GET', `${prefix}/healthcheck/${tag}-once`)).status).toBe(404);
    expect((await send('GET', `${prefix}/result/${tag}-once`)).status).toBe(404);
  });

  it('answers 500 with the reason and the result when a one-off check fails', async () => {
    const { status, body } = await json(
      send('POST', `${prefix}/healthcheck/tcp`, {
        name: `${tag}-once-ko`,
        target: '127.0.0.1',
        port: closed,
        timeout: '1s',
        'one-off': true,
      }),
    );
    expect(status).toBe(500);
    expect(body.message).toMatch(
      new RegExp(
        `^Execution of one off healthcheck ${tag}-once-ko failed: TCP connection failed on 127\\.0\\.0\\.1:${closed}: .*ECONNREFUSED`,
      ),
    );
    expect(body.result).toMatchObject({ name: `${tag}-once-ko`, success: false });
    expect(body.message).toBe(`Execution of one off healthcheck ${tag}-once-ko failed: ${body.result.message}`);
  });

  it('deletes a check (200), then answers 404 for it', async () => {
    await send('POST', `${prefix}/healthcheck/tcp`, tcpCheck(`${tag}-del`));
    expect(await json(send('DELETE', `${prefix}/healthcheck/${tag}-del`))).toEqual({
      status: 200,
      body: { message: `Successfully deleted healthcheck ${tag}-del` },
    });
    expect(await json(send('DELETE', `${prefix}/healthcheck/${tag}-del`))).toEqual({
      status: 404,
      body: { message: `Healthcheck ${tag}-del not found` },
    });
    expect(await json(send('GET', `${prefix}/healthcheck/${tag}-del`))).toEqual({
      status: 404,
      body: { message: `Healthcheck ${tag}-del not found` },
    });
  });

  it('answers 404 for the result of an unknown check', async () => {
    expect(await json(send('GET', `${prefix}/result/nope`))).toEqual({
      status: 404,
      body: { message: 'Result not found for healthcheck nope' },
    });
  });

  it('answers 400 Invalid JSON naming what the parser found, for a body that is not JSON', async () => {
    expect(await json(send('POST', `${prefix}/healthcheck/tcp`, '{"name": "x",'))).toEqual({
      status: 400,
      body: { message: 'Invalid JSON: Expected double-quoted property name in JSON at position 13' },
    });
    expect(await json(send('POST', `${prefix}/healthcheck/tcp`, '{"name": "x"'))).toEqual({
      status: 400,
      body: { message: "Invalid JSON: Expected ',' or '}' after property value in JSON at position 12" },
    });
    // A key that would reach Object.prototype once merged is refused, and said so.
    expect(
      await json(
        send(
          'POST',
          `${prefix}/healthcheck/tcp`,
          JSON.stringify({ name: 'x' }).replace('{', '{"__proto__": {"polluted": 1}, '),
        ),
      ),
    ).toEqual({
      status: 400,
      body: { message: 'Invalid JSON: Object contains forbidden prototype property' },
    });
    expect(await json(send('POST', `${prefix}/healthcheck/tcp`, ''))).toEqual({
      status: 400,
      body: { message: 'Invalid JSON: the body is empty' },
    });
    // Spelled with escapes, or as constructor.prototype: refused the same.
    const forbidden = { status: 400, body: { message: 'Invalid JSON: Object contains forbidden prototype property' } };
    expect(
      await json(
        send(
          'POST',
          `${prefix}/healthcheck/tcp`,
          JSON.stringify(tcpCheck(`${tag}-esc`)).replace('{', '{"\\u005f_proto__": {"polluted": 1}, '),
        ),
      ),
    ).toEqual(forbidden);
    expect(
      await json(
        send(
          'POST',
          `${prefix}/healthcheck/tcp`,
          JSON.stringify(tcpCheck(`${tag}-ctor`)).replace('{', '{"constructor": {"prototype": {"polluted": 1}}, '),
        ),
      ),
    ).toEqual(forbidden);
    expect(
      await json(
        send(
          'POST',
          `${prefix}/healthcheck/tcp`,
          JSON.stringify(tcpCheck(`${tag}-ctor`)).replace(
            '{',
            '{"const\\u0072uctor": {"prototype": {"polluted": 1}}, ',
          ),
        ),
      ),
    ).toEqual(forbidden);
    // The words themselves, and escapes, in values are not keys: such a body is taken.
    const words = { ...tcpCheck(`${tag}-words`), description: 'the constructor of __proto__, caf\u00e9' };
    expect((await send('POST', `${prefix}/healthcheck/tcp`, JSON.stringify(words))).status).toBe(201);
  });

  it('answers 415 naming application/json for another content type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const { status, body } = await json(
        send('POST', `${prefix}/healthcheck/tcp`, JSON.stringify(tcpCheck('x')), type),
      );
      expect(status).toBe(415);
      expect(body.message).toContain('application/json');
    }
  });

  it('answers 400 naming the field for an invalid definition', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['tcp', tcpCheck('bad', { port: 70000 }), /^Invalid healthcheck configuration: port: .*65535/],
      ['tcp', tcpCheck('bad', { interval: '500ms' }), /^Invalid healthcheck configuration: interval: .*timeout/],
      ['tcp', tcpCheck('bad', { timeout: 10 }), /^Invalid healthcheck configuration: timeout: .*duration/],
      ['tcp', tcpCheck('bad/name'), /^Invalid healthcheck configuration: name: .*"\/"/],
      ['tcp', tcpCheck('bad', { tagret: 'x' }), /^Invalid healthcheck configuration: unknown key "tagret"/],
      [
        'http',
        { name: 'bad', target: 'x', port: 80, 'valid-status': [], timeout: '1s', interval: '1m' },
        /^Invalid healthcheck configuration: valid-status: /,
      ],
      [
        'http',
        {
          name: 'bad',
          target: 'x',
          port: 80,
          'valid-status': [200],
          'body-regexp': ['('],
          timeout: '1s',
          interval: '1m',
        },
        /^Invalid healthcheck configuration: body-regexp\[0\]: /,
      ],
      ['tcp', [1, 2], /^Invalid healthcheck configuration: /],
    ];
    for (const [kind, definition, message] of cases) {
      const { status, body } = await json(send('POST', `${prefix}/healthcheck/${kind}`, definition));
      expect(status, JSON.stringify(definition)).toBe(400);
      expect(body.message).toMatch(message);
    }
    expect((await send('GET', `${prefix}/healthcheck/bad`)).status).toBe(404);
  });

  it('answers 413 naming the limit for a body over it', async () => {
    const { status, body } = await json(
      send('POST', `${prefix}/healthcheck/tcp`, tcpCheck('big', { description: 'x'.repeat(5000) })),
    );
    expect(status).toBe(413);
    expect(body.message).toContain('4096');
  });

  it('answers 405 with Allow for a wrong method on a known path', async () => {
    for (const path of [`${prefix}/healthcheck`, `${prefix}/healthcheck/x`, `${prefix}/result`]) {
      const response = await send('PUT', path, {});
      expect(response.status, path).toBe(405);
      expect(response.headers.get('allow')).toContain('GET');
      expect(Object.keys((await response.json()) as object)).toEqual(['message']);
    }
  });

  it('still reaches checks named like a kind with GET and DELETE', async () => {
    await send('POST', `${prefix}/healthcheck/tcp`, tcpCheck('http'));
    expect((await json(send('GET', `${prefix}/healthcheck/http`))).body).toMatchObject({ name: 'http', kind: 'tcp' });
    // POST /healthcheck/http is its own route; other methods there answer as on any check's path.
    const put = await send('PUT', `${prefix}/healthcheck/http`, {});
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('DELETE, GET, HEAD, POST');
    expect((await send('DELETE', `${prefix}/healthcheck/http`)).status).toBe(200);
    expect(await json(send('POST', `${prefix}/healthcheck/nope`, tcpCheck('x')))).toEqual({
      status: 404,
      body: {
        message:
          'Unknown healthcheck kind "nope": expected http, tcp, dns, tls, websocket, grpc, smtp, imap, pop3, domain, icmp, command, heartbeat or bulk',
      },
    });
  });

  it('lists a check with every field it was given, labels included, in upstream key order', async () => {
    await send(
      'POST',
      `${prefix}/healthcheck/tcp`,
      tcpCheck(`${tag}-fields`, { labels: { env: 'prod' }, 'source-ip': '127.0.0.1' }),
    );
    const { body } = await json(send('GET', `${prefix}/healthcheck/${tag}-fields`));
    expect(Object.keys(body)).toEqual([
      'name',
      'description',
      'interval',
      'one-off',
      'source',
      'labels',
      'target',
      'port',
      'source-ip',
      'timeout',
      'should-fail',
      'kind',
    ]);
    expect(body).toMatchObject({ labels: { env: 'prod' }, 'source-ip': '127.0.0.1', kind: 'tcp', source: 'api' });
    await send('DELETE', `${prefix}/healthcheck/${tag}-fields`);
  });

  it('lists results sorted by name, and gets one', async () => {
    await send('POST', `${prefix}/healthcheck/tcp`, tcpCheck(`${tag}-res-z`, { interval: '1s', timeout: '1s' }));
    await send(
      'POST',
      `${prefix}/healthcheck/tcp`,
      tcpCheck(`${tag}-res-y`, { interval: '1s', timeout: '1s', port: closed }),
    );
    await waitFor(
      async () => {
        const results = unwrap((await json(send('GET', `${prefix}/result`))).body, wrap).filter((result) =>
          result.name.startsWith(`${tag}-res`),
        );
        expect(results.map((result) => result.name)).toEqual([`${tag}-res-y`, `${tag}-res-z`]);
      },
      { intervalMs: 100 },
    );
    const { status, body } = await json(send('GET', `${prefix}/result/${tag}-res-z`));
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual([
      'name',
      'summary',
      'success',
      'healthcheck-timestamp',
      'message',
      'duration',
      'source',
    ]);
    expect(body).toMatchObject({
      name: `${tag}-res-z`,
      success: true,
      message: 'success',
      source: 'api',
      summary: `TCP healthcheck on 127.0.0.1:${tcp.port}`,
    });
    expect(Math.abs(body['healthcheck-timestamp'] - Date.now() / 1000)).toBeLessThan(10);
    const failed = (await json(send('GET', `${prefix}/result/${tag}-res-y`))).body;
    expect(failed).toMatchObject({
      success: false,
      message: expect.stringMatching(new RegExp(`^TCP connection failed on 127\\.0\\.0\\.1:${closed}: `)),
    });
  });
});

describe('bulk', () => {
  let bulkServer: TestServer;
  beforeAll(async () => {
    bulkServer = await startServer({
      config: {
        'tcp-checks': [{ name: 'from-config', target: '127.0.0.1', port: closed, timeout: '1s', interval: '1m' }],
      },
    });
  });
  afterAll(() => bulkServer.kill9());

  const bulk = (prefix: string, payload: unknown) =>
    bulkServer.request(`${prefix}/healthcheck/bulk`, {
      method: 'POST',
      body: JSON.stringify(payload),
      headers: { 'content-type': 'application/json' },
    });
  const names = async () =>
    ((await (await bulkServer.request('/healthcheck')).json()) as { name: string; source: string }[]).map(
      (c) => `${c.name}:${c.source}`,
    );
  const tcpDef = (name: string) => ({ name, target: '127.0.0.1', port: closed, timeout: '1s', interval: '1m' });

  it('makes the API set exactly the payload (201), leaving config checks alone, on both path forms', async () => {
    expect(
      await json(
        bulk('/api/v1', {
          'tcp-checks': [tcpDef('a'), tcpDef('b')],
          'dns-checks': [{ name: 'c', domain: 'localhost', timeout: '1s', interval: '1m' }],
        }),
      ),
    ).toEqual({
      status: 201,
      body: { message: 'Healthchecks successfully added' },
    });
    expect(await names()).toEqual(['a:api', 'b:api', 'c:api', 'from-config:configuration']);
    expect(
      (
        await bulk('', {
          'http-checks': [
            { name: 'd', target: '127.0.0.1', port: closed, 'valid-status': [200], timeout: '1s', interval: '1m' },
          ],
          'tcp-checks': [tcpDef('a')],
        })
      ).status,
    ).toBe(201);
    expect(await names()).toEqual(['a:api', 'd:api', 'from-config:configuration']);
  });

  it('rejects a payload with a bad check (400 naming the check and the field) and changes nothing', async () => {
    const before = await names();
    const { status, body } = await json(
      bulk('/api/v1', { 'tcp-checks': [tcpDef('new-1'), { ...tcpDef('broken'), port: 0 }] }),
    );
    expect(status).toBe(400);
    expect(body.message).toMatch(/^Invalid healthcheck configuration: check "broken" \(tcp-checks\[1\]\): port: /);
    expect(await names()).toEqual(before);
  });

  it('rejects one-off checks and duplicate names in a payload', async () => {
    const before = await names();
    const oneOff = await json(bulk('/api/v1', { 'tcp-checks': [{ ...tcpDef('o'), 'one-off': true }] }));
    expect(oneOff.status).toBe(400);
    expect(oneOff.body.message).toMatch(/check "o" \(tcp-checks\[0\]\).*one-off/);
    const duplicate = await json(
      bulk('/api/v1', {
        'tcp-checks': [tcpDef('same')],
        'dns-checks': [{ name: 'same', domain: 'localhost', timeout: '1s', interval: '1m' }],
      }),
    );
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.message).toMatch(/check "same" \(dns-checks\[0\]\): name: duplicate .*tcp-checks\[0\]/);
    const unknownKey = await json(bulk('/api/v1', { 'tcp-check': [] }));
    expect(unknownKey.status).toBe(400);
    expect(unknownKey.body.message).toContain('"tcp-check"');
    expect(await names()).toEqual(before);
  });
});

describe('disabled APIs', () => {
  it('serves neither the healthcheck nor the result routes when both are disabled in the http section', async () => {
    const disabled = await startServer({
      config: { http: { 'disable-healthcheck-api': true, 'disable-result-api': true } },
    });
    try {
      for (const path of [
        '/api/v1/healthcheck',
        '/healthcheck',
        '/api/v1/result',
        '/result',
        '/api/v1/result/x/history',
      ]) {
        expect((await disabled.request(path)).status, path).toBe(404);
      }
      expect(
        (
          await disabled.request('/api/v1/healthcheck/tcp', {
            method: 'POST',
            body: '{}',
            headers: { 'content-type': 'application/json' },
          })
        ).status,
      ).toBe(404);
      expect((await disabled.request('/healthz')).status).toBe(200);
    } finally {
      await disabled.kill9();
    }
  });

  it('keeps the result routes when only the healthcheck API is disabled', async () => {
    const partial = await startServer({ config: { http: { 'disable-healthcheck-api': true } } });
    try {
      expect((await partial.request('/api/v1/healthcheck')).status).toBe(404);
      expect(await (await partial.request('/api/v1/result')).json()).toEqual({ result: [] });
    } finally {
      await partial.kill9();
    }
  });
});
