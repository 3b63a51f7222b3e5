import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseCheck, prepareCheck } from '../../../../src/healthcheck/kinds/index.ts';
import {
  closedPort,
  createTestPki,
  type HttpTarget,
  startHttpTarget,
  startTcpTarget,
  type TestPki,
} from '../../../helpers/targets.ts';
import { check } from '../run.ts';

describe('HTTP check against a plain HTTP server', () => {
  let target: HttpTarget;
  beforeAll(async () => {
    target = await startHttpTarget();
  });
  afterEach(() => {
    target.requests.length = 0;
    target.handle((_request, response) => response.end('ok'));
  });
  afterAll(() => target.close());

  const http = (raw: Record<string, unknown>): Promise<string> =>
    check('http', { target: '127.0.0.1', port: target.port, 'valid-status': [200], ...raw });

  it('succeeds when the status is in valid-status, with exactly one request', async () => {
    expect(await http({ path: '/health' })).toBe('success');
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]?.path).toBe('/health');
  });

  it('fails with the status and the HTML-escaped body when the status is not in valid-status', async () => {
    target.handle((_request, response) => {
      response.statusCode = 500;
      response.end(`<b>oops</b> & 'x' "y"`);
    });
    expect(await http({ 'valid-status': [200, 201, 400] })).toBe(
      `HTTP request failed: status 500. Body: '&lt;b&gt;oops&lt;/b&gt; &amp; &#39;x&#39; &#34;y&#34;'`,
    );
    target.handle((_request, response) => {
      response.statusCode = 400;
      response.end();
    });
    expect(await http({ 'valid-status': [200, 201, 400] })).toBe('success');
  });

  it('quotes only the first 1000 bytes of the body', async () => {
    target.handle((_request, response) => {
      response.statusCode = 503;
      response.end('a'.repeat(1500));
    });
    expect(await http({})).toBe(`HTTP request failed: status 503. Body: '${'a'.repeat(1000)}'`);
  });

  it('sends User-Agent Cabourotte, the custom headers and the body, even on GET', async () => {
    expect(await http({ headers: { Foo: 'Bar' }, body: 'hello' })).toBe('success');
    const request = target.requests[0];
    expect(request?.method).toBe('GET');
    expect(request?.headers['user-agent']).toBe('Cabourotte');
    expect(request?.headers.foo).toBe('Bar');
    expect(request?.headers['content-length']).toBe('5');
    expect(request?.body).toBe('hello');
  });

  it('lets a user-agent header override the default one', async () => {
    await http({ headers: { 'USER-AGENT': 'probe/1.0' } });
    expect(target.requests[0]?.headers['user-agent']).toBe('probe/1.0');
  });

  it('sends the configured method and body', async () => {
    expect(await http({ method: 'POST', body: '{"a":1}' })).toBe('success');
    expect(await http({ method: 'HEAD' })).toBe('success');
    expect(await http({ method: 'PATCH', body: 'p' })).toBe('success');
    expect(target.requests.map((request) => `${request.method} ${request.body}`)).toEqual([
      'POST {"a":1}',
      'HEAD ',
      'PATCH p',
    ]);
  });

  it('merges query with the query of the path, sorted by key, spaces as +', async () => {
    expect(await http({ path: '/echo?x=1', query: { b: '2', a: '1 2' } })).toBe('success');
    expect(target.requests[0]?.url).toBe('/echo?a=1+2&b=2&x=1');
    await http({ query: { trololo: 'huhu', a: 'b&c=d' } });
    expect(target.requests[1]?.url).toBe('/?a=b%26c%3Dd&trololo=huhu');
  });

  it('overrides the Host header with host', async () => {
    await http({ host: 'vhost.example' });
    expect(target.requests[0]?.headers.host).toBe('vhost.example');
  });

  it('requires every body-regexp to match the body', async () => {
    target.handle((_request, response) => response.end('github.com/appclacks/cabourotte/ !'));
    expect(await http({ 'body-regexp': ['github.com/appclacks/cabourotte/*', '(?i)CABOUROTTE'] })).toBe('success');
    expect(await http({ 'body-regexp': ['cabourotte', 'trololo*'] })).toBe(
      'healthcheck body does not match regex trololo*: github.com/appclacks/cabourotte/ !',
    );
  });

  it('checks a redirect itself unless redirect is true', async () => {
    target.handle((request, response) => {
      if (request.path === '/final') {
        response.end('arrived');
        return;
      }
      response.writeHead(302, { location: '/final' });
      response.end();
    });
    expect(await http({ path: '/start' })).toBe(`HTTP request failed: status 302. Body: ''`);
    expect(await http({ path: '/start', 'valid-status': [302] })).toBe('success');
    expect(target.requests.map((request) => request.path)).toEqual(['/start', '/start']);
    expect(await http({ path: '/start', redirect: true, 'body-regexp': ['^arrived$'] })).toBe('success');
    expect(target.requests.map((request) => request.path)).toEqual(['/start', '/start', '/start', '/final']);
  });

  it('follows redirects as Go does: 10 requests at most, 303 as a GET, 307 with the method and body', async () => {
    target.handle((request, response) => {
      const hop = Number(request.path.slice(1));
      if (request.path === '/see-other') response.writeHead(303, { location: '/final' }).end();
      else if (request.path === '/temporary') response.writeHead(307, { location: '/final' }).end();
      else if (request.path === '/final' || hop >= 10) response.end('arrived');
      else response.writeHead(302, { location: `/${hop + 1}` }).end();
    });
    expect(await http({ path: '/1', redirect: true, 'body-regexp': ['^arrived$'] })).toBe('success');
    expect(target.requests.map((request) => request.path)).toEqual([
      '/1',
      '/2',
      '/3',
      '/4',
      '/5',
      '/6',
      '/7',
      '/8',
      '/9',
      '/10',
    ]);
    expect(target.requests[1]?.headers.referer).toBe(`http://127.0.0.1:${target.port}/1`);
    target.requests.length = 0;
    // Go's url.Error names the Location that was not followed.
    expect(await http({ path: '/0', redirect: true })).toBe(
      'HTTP request failed: Get "/10": stopped after 10 redirects',
    );
    expect(target.requests).toHaveLength(10);
    target.requests.length = 0;
    expect(await http({ path: '/see-other', method: 'POST', body: 'form', redirect: true })).toBe('success');
    expect(target.requests.map((request) => [request.method, request.path, request.body])).toEqual([
      ['POST', '/see-other', 'form'],
      ['GET', '/final', ''],
    ]);
    target.requests.length = 0;
    expect(await http({ path: '/temporary', method: 'POST', body: 'form', redirect: true })).toBe('success');
    expect(target.requests.map((request) => [request.method, request.path, request.body])).toEqual([
      ['POST', '/temporary', 'form'],
      ['POST', '/final', 'form'],
    ]);
  });

  it('keeps a host override through a relative redirect, still connecting to the target (Go issue 22233)', async () => {
    target.handle((request, response) => {
      if (request.path === '/final') response.end('arrived');
      else response.writeHead(302, { location: '/final' }).end();
    });
    expect(await http({ path: '/start', host: 'vhost.example', redirect: true, 'body-regexp': ['^arrived$'] })).toBe(
      'success',
    );
    expect(target.requests.map((request) => [request.path, request.headers.host])).toEqual([
      ['/start', 'vhost.example'],
      ['/final', 'vhost.example'],
    ]);
  });

  it('drops the host override and the credentials on a redirect to another host', async () => {
    target.handle((request, response) => {
      if (request.path === '/final') response.end('arrived');
      else response.writeHead(302, { location: `http://localhost:${target.port}/final` }).end();
    });
    const headers = { Authorization: 'Bearer secret', Cookie: 'a=1', 'X-Kept': 'yes' };
    expect(await http({ path: '/start', host: 'vhost.example', headers, redirect: true })).toBe('success');
    const [first, second] = target.requests;
    expect([first?.headers.host, first?.headers.authorization, first?.headers.cookie]).toEqual([
      'vhost.example',
      'Bearer secret',
      'a=1',
    ]);
    expect([
      second?.headers.host,
      second?.headers.authorization,
      second?.headers.cookie,
      second?.headers['x-kept'],
    ]).toEqual([`localhost:${target.port}`, undefined, undefined, 'yes']);
  });

  it('fails on a Location it cannot follow, naming it, and leaves the server alone', async () => {
    const locations: Record<string, string> = {
      '/file': 'file:///etc/passwd',
      '/broken': 'http://[::1',
      '/loop': '/loop',
    };
    target.handle((request, response) => response.writeHead(302, { location: locations[request.path] ?? '/' }).end());
    expect(await http({ path: '/file', redirect: true })).toBe(
      'HTTP request failed: Get "file:///etc/passwd": unsupported protocol scheme "file"',
    );
    expect(await http({ path: '/broken', redirect: true })).toMatch(
      new RegExp(
        `^HTTP request failed: Get "http://127.0.0.1:${target.port}/broken": failed to parse Location header "http://\\[::1": `,
      ),
    );
    target.requests.length = 0;
    expect(await http({ path: '/loop', redirect: true })).toBe(
      'HTTP request failed: Get "/loop": stopped after 10 redirects',
    );
    expect(target.requests).toHaveLength(10);
  });

  it('fails a run whose request Node refuses to send, and runs again', async () => {
    expect(await http({ path: '/a b' })).toMatch(
      /^HTTP request failed: Get "http:\/\/127\.0\.0\.1:\d+\/a b": Request path contains unescaped characters/,
    );
    expect(await http({ path: '/ok' })).toBe('success');
  });

  it('binds source-ip', async () => {
    expect(await http({ 'source-ip': '127.0.0.1' })).toBe('success');
    expect(target.requests[0]?.remoteAddress).toBe('127.0.0.1');
  });

  it('reuses its keep-alive connection from one run to the next', async () => {
    const prepared = await prepareCheck(
      parseCheck('http', {
        name: 'keep',
        target: '127.0.0.1',
        port: target.port,
        'valid-status': [200],
        timeout: '1s',
        interval: '10s',
      }),
    );
    try {
      await prepared.run(AbortSignal.timeout(1000));
      // Runs are an interval apart: by the next one, undici has marked the connection free (it does so a tick
      // after the body ends; a run started in the same tick would open a second connection of the shared pool).
      await new Promise((resolve) => setImmediate(resolve));
      await prepared.run(AbortSignal.timeout(1000));
    } finally {
      await prepared.close();
    }
    expect(target.requests).toHaveLength(2);
    expect(target.requests[1]?.remotePort).toBe(target.requests[0]?.remotePort);
  });

  it('shares the connections of checks that connect the same way, and a closed check leaves the others running', async () => {
    const prepare = (name: string, raw: Record<string, unknown> = {}) =>
      prepareCheck(
        parseCheck('http', {
          name,
          target: '127.0.0.1',
          port: target.port,
          'valid-status': [200],
          timeout: '1s',
          interval: '10s',
          ...raw,
        }),
      );
    const first = await prepare('first');
    const second = await prepare('second');
    const insecure = await prepare('insecure', { insecure: true });
    const nextTick = () => new Promise((resolve) => setImmediate(resolve));
    try {
      await first.run(AbortSignal.timeout(1000));
      await nextTick();
      await second.run(AbortSignal.timeout(1000));
      await nextTick();
      await insecure.run(AbortSignal.timeout(1000));
      expect(target.requests[1]?.remotePort).toBe(target.requests[0]?.remotePort);
      // Other connection settings: a pool of its own.
      expect(target.requests[2]?.remotePort).not.toBe(target.requests[0]?.remotePort);
      await first.close();
      await first.close();
      await nextTick();
      await second.run(AbortSignal.timeout(1000));
      expect(target.requests[3]?.remotePort).toBe(target.requests[0]?.remotePort);
    } finally {
      await second.close();
      await insecure.close();
    }
    // The last user closed the shared pool: a new check opens a new connection.
    const third = await prepare('third');
    try {
      expect(await third.run(AbortSignal.timeout(1000))).toBeUndefined();
    } finally {
      await third.close();
    }
    expect(target.requests[4]?.remotePort).not.toBe(target.requests[0]?.remotePort);
  });

  it('stops reading an endless body at the limit of body-regexp or json, without waiting for the timeout', async () => {
    target.handle((_request, response) => {
      response.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const pump = () => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once('drain', pump);
      };
      pump();
    });
    const started = performance.now();
    expect(await http({ timeout: '10s', interval: '20s', 'body-regexp': ['b'] })).toBe(
      'healthcheck body is larger than 10485760 bytes, the limit of body-regexp',
    );
    expect(await http({ timeout: '10s', interval: '20s', json: [{ path: '/a', equals: 1 }] })).toBe(
      'healthcheck body is larger than 1048576 bytes, the limit of the json conditions',
    );
    expect(await http({ timeout: '10s', interval: '20s', 'valid-status': [201], 'body-regexp': ['b'] })).toMatch(
      /^HTTP request failed: status 200\. Body: 'a{1000}'$/,
    );
    expect(performance.now() - started).toBeLessThan(9000);
  });

  it('bounds the body read by the timeout', async () => {
    target.handle((_request, response) => {
      response.writeHead(200, { 'content-length': '100' });
      response.write('partial');
    });
    const started = performance.now();
    expect(await http({ timeout: '300ms', interval: '1s' })).toBe('Fail to read request body: timed out after 300ms');
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('HTTP check failures before any response', () => {
  it('reports a refused connection with the Go-style method and the full URL', async () => {
    const port = await closedPort();
    expect(
      await check('http', { target: '127.0.0.1', port, path: '/foo', query: { a: '1' }, 'valid-status': [200] }),
    ).toBe(`HTTP request failed: Get "http://127.0.0.1:${port}/foo?a=1": connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(await check('http', { target: '127.0.0.1', port, method: 'DELETE', 'valid-status': [200] })).toMatch(
      new RegExp(`^HTTP request failed: Delete "http://127.0.0.1:${port}": connect ECONNREFUSED`),
    );
  });

  it('times out on a server that accepts and never answers', async () => {
    const silent = await startTcpTarget();
    try {
      const started = performance.now();
      expect(
        await check('http', {
          target: '127.0.0.1',
          port: silent.port,
          'valid-status': [200],
          timeout: '300ms',
          interval: '1s',
        }),
      ).toBe(`HTTP request failed: Get "http://127.0.0.1:${silent.port}": timed out after 300ms`);
      expect(performance.now() - started).toBeLessThan(2000);
      expect(silent.connections).toBeGreaterThanOrEqual(1);
    } finally {
      await silent.close();
    }
  });
});

describe('HTTP check over IPv6', () => {
  it('reaches a server on ::1', async () => {
    const target = await startHttpTarget({ host: '::1' });
    try {
      expect(await check('http', { target: '::1', port: target.port, path: '/v6', 'valid-status': [200] })).toBe(
        'success',
      );
      expect(target.requests[0]?.remoteAddress).toBe('::1');
    } finally {
      await target.close();
    }
  });
});

describe('HTTPS check', () => {
  let pki: TestPki;
  let server: HttpTarget;
  let selfSigned: HttpTarget;
  let mutual: HttpTarget;
  beforeAll(async () => {
    pki = createTestPki();
    server = await startHttpTarget({ tls: pki.server });
    selfSigned = await startHttpTarget({ tls: pki.selfSigned });
    mutual = await startHttpTarget({ tls: { ...pki.server, ca: pki.ca } });
  });
  afterAll(async () => {
    await Promise.all([server.close(), selfSigned.close(), mutual.close()]);
  });

  const https = (port: number, raw: Record<string, unknown> = {}): Promise<string> =>
    check('http', { target: '127.0.0.1', port, protocol: 'https', 'valid-status': [200], ...raw });

  it('verifies the server against cacert', async () => {
    expect(await https(server.port, { cacert: pki.ca })).toBe('success');
    expect(
      await check('http', {
        target: 'localhost',
        port: server.port,
        protocol: 'https',
        'valid-status': [200],
        cacert: pki.ca,
      }),
    ).toBe('success');
  });

  it('fails on a certificate no trusted CA signed', async () => {
    const message = await https(server.port);
    expect(message).toMatch(new RegExp(`^HTTP request failed: Get "https://127.0.0.1:${server.port}": `));
    expect(message).toMatch(/issuer certificate|self-signed|unable to verify/);
    expect(await https(selfSigned.port, { cacert: pki.ca })).toMatch(/self-signed certificate/);
  });

  it('accepts any certificate when insecure', async () => {
    expect(await https(selfSigned.port, { insecure: true })).toBe('success');
  });

  it('verifies the name given by server-name (either spelling)', async () => {
    expect(await https(server.port, { cacert: pki.ca, 'server-name': 'localhost' })).toBe('success');
    const message = await https(server.port, { cacert: pki.ca, servername: 'nope.example' });
    expect(message).toMatch(/^HTTP request failed: Get "https:\/\/127\.0\.0\.1:\d+": .*nope\.example/);
  });

  it('presents the client certificate to an mTLS server', async () => {
    expect(await https(mutual.port, { cacert: pki.ca, cert: pki.client.cert, key: pki.client.key })).toBe('success');
    expect(mutual.requests).toHaveLength(1);
    expect(await https(mutual.port, { cacert: pki.ca })).toMatch(/^HTTP request failed: Get "https:/);
    expect(mutual.requests).toHaveLength(1);
  });

  it('fails to prepare when a certificate file cannot be read', async () => {
    const def = parseCheck('http', {
      name: 'x',
      target: '127.0.0.1',
      port: server.port,
      protocol: 'https',
      'valid-status': [200],
      timeout: '1s',
      interval: '1s',
      cacert: `${pki.dir}/missing.pem`,
    });
    await expect(prepareCheck(def)).rejects.toThrow(/^Fail to load the ca certificate: ENOENT/);
    const withCert = parseCheck('http', {
      name: 'x',
      target: '127.0.0.1',
      port: server.port,
      protocol: 'https',
      'valid-status': [200],
      timeout: '1s',
      interval: '1s',
      cert: `${pki.dir}/missing.pem`,
      key: pki.client.key,
    });
    await expect(prepareCheck(withCert)).rejects.toThrow(/^Fail to load certificates: ENOENT/);
  });
});
