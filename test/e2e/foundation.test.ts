import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createCa, readPem } from '../helpers/certs.ts';
import { ensureBundle, readLines, runCli, startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const exec = promisify(execFile);
const servers: TestServer[] = [];
const started = async (...args: Parameters<typeof startServer>) => {
  const server = await startServer(...args);
  servers.push(server);
  return server;
};

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});

describe('the service process', () => {
  it('serves /healthz, /health and creates every table with no config file at all', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'vigie-noconfig-'));
    await ensureBundle();
    // No config file means the embedded defaults, port 9013 included: the one test bound to a fixed port,
    // because that default is what it checks.
    const child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/vigie.js'), 'serve'], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        const seen: string[] = [];
        const onLine = (l: string) => {
          seen.push(l);
          if (l.includes('vigie is serving')) resolve(l);
        };
        readLines(child.stdout, onLine);
        readLines(child.stderr, onLine);
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${seen.join('\n')}`)));
      });
      const url = (JSON.parse(line) as { url: string }).url;
      expect(url).toBe('http://127.0.0.1:9013');
      for (const path of ['/healthz', '/health']) {
        const response = await fetch(`${url}${path}`);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ message: 'ok' });
      }
      const db = new Database(join(cwd, 'data/vigie.db'), { readonly: true });
      const tables = (
        db.prepare("select name from sqlite_master where type = 'table' order by name").all() as { name: string }[]
      ).map((row) => row.name);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      db.close();
      expect(tables).toEqual(
        expect.arrayContaining([
          'healthcheck_history',
          'healthcheck_results',
          'healthcheck_uptime',
          'healthchecks',
          'index_meta',
          'index_snapshots',
          'streams',
        ]),
      );
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('exits 1 before listening on a misspelled key, naming the file and the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-badconfig-'));
    const file = join(dir, 'vigie.yaml');
    writeFileSync(file, 'http:\n  port: 0\nhttp-chekcs: []\n');
    const serve = await runCli(['serve', '--config', file]);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toContain(`${file}: http-chekcs: unknown key "http-chekcs" (did you mean "http-checks"?)`);
    const check = await runCli(['check-config', file]);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain('http-chekcs');
  });

  it('rejects integer durations and wrong types with the key path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-badconfig-'));
    const file = join(dir, 'vigie.yaml');
    writeFileSync(file, 'streams:\n  snapshot-interval: 10\n');
    const result = await runCli(['check-config', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'streams.snapshot-interval: must be a duration string such as "10s" or "1m30s", got the number 10',
    );
    writeFileSync(file, 'http:\n  port: "abc"\n');
    expect((await runCli(['check-config', file])).stderr).toContain(
      'http.port: must be an integer, got the string "abc"',
    );
  });

  it('check-config prints what would run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-goodconfig-'));
    const file = join(dir, 'vigie.yaml');
    writeFileSync(file, `data-dir: ${dir}\nhttp:\n  host: 127.0.0.1\n  port: 9999\n`);
    const result = await runCli(['check-config', file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('is valid');
    expect(result.stdout).toContain('listen: http://127.0.0.1:9999');
  });

  it('answers 405 with Allow for a wrong method on a known path, and 404 on an unknown one', async () => {
    const server = await started();
    const response = await server.request('/healthz', { method: 'DELETE' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(await response.json()).toEqual({ message: 'Method DELETE not allowed on /healthz; allowed: GET, HEAD' });
    expect((await server.request('/nowhere')).status).toBe(404);
    expect((await server.request('/health', { method: 'HEAD' })).status).toBe(200);
  });

  it('answers a wrong method in the shape of the part that registered the path, counted under its route', async () => {
    const server = await started({ config: { http: { 'basic-auth': { username: 'ops', password: 'pw' } } } });
    const auth = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
    const answer = async (path: string, method: string, headers: Record<string, string> = auth) => {
      const response = await server.request(path, { method, headers });
      return {
        status: response.status,
        allow: response.headers.get('allow'),
        body: response.status === 204 ? null : ((await response.json()) as unknown),
      };
    };
    // Both parts have paths under /api/v1/overview/, a prefix of neither: each answers in its own shape there.
    expect(await answer('/api/v1/overview/streams', 'DELETE')).toEqual({
      status: 405,
      allow: 'GET, HEAD',
      body: { error: 'Method DELETE not allowed on /api/v1/overview/streams; allowed: GET, HEAD' },
    });
    expect(await answer('/api/v1/overview/healthchecks', 'PUT')).toEqual({
      status: 405,
      allow: 'GET, HEAD',
      body: { message: 'Method PUT not allowed on /api/v1/overview/healthchecks; allowed: GET, HEAD' },
    });
    // Credentials are asked first, in the same shape.
    expect(await answer('/api/v1/overview/streams', 'DELETE', {})).toEqual({
      status: 401,
      allow: null,
      body: { error: 'Unauthorized' },
    });
    // A parametric path: the message names the route, OPTIONS answers 204 with the methods.
    expect(await answer('/api/v1/stream/any%20name', 'PATCH')).toEqual({
      status: 405,
      allow: 'DELETE, GET, HEAD, POST, PUT',
      body: { error: 'Method PATCH not allowed on /api/v1/stream/:name; allowed: DELETE, GET, HEAD, POST, PUT' },
    });
    expect(await answer('/api/v1/stream/any', 'OPTIONS')).toEqual({
      status: 204,
      allow: 'DELETE, GET, HEAD, POST, PUT',
      body: null,
    });
    // A segment too many, a trailing slash, a method HTTP routing does not serve: no path of the API.
    for (const [path, method] of [
      ['/api/v1/stream/a/b', 'PATCH'],
      ['/healthz/', 'DELETE'],
      ['/healthz', 'PROPFIND'],
    ] as const) {
      expect((await answer(path, method)).status, `${method} ${path}`).toBe(404);
    }
    // A parameter past fastify's 100 characters is refused as with a method the path serves.
    const long = `/api/v1/stream/${'x'.repeat(101)}`;
    expect((await answer(long, 'PATCH')).status).toBe(414);
    expect(await answer(long, 'PATCH')).toEqual(await answer(long, 'GET'));
    const text = await (await server.request('/metrics', { headers: auth })).text();
    expect(text).toContain('http_responses_total{method="DELETE",route="/api/v1/overview/streams",status="405"} 1');
    expect(text).toContain('http_responses_total{method="PATCH",route="/api/v1/stream/:name",status="405"} 1');
    expect(text).toContain('http_responses_total{method="OPTIONS",route="/api/v1/stream/:name",status="204"} 1');
  });

  it('answers a URL that matches no route in the body shape of the part whose prefix it is under, whatever the method', async () => {
    const server = await started({ config: { http: { 'basic-auth': { username: 'ops', password: 'pw' } } } });
    const auth = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
    const answer = async (path: string, init: RequestInit = {}) => {
      const response = await server.request(path, { ...init, headers: { ...auth, ...init.headers } });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    // Streams answer as Mirabelle, healthchecks as Cabourotte, the root as Cabourotte.
    expect(await answer('/api/v1/stream/a/b/c')).toEqual({
      status: 404,
      body: { error: 'Route GET /api/v1/stream/a/b/c not found' },
    });
    expect(await answer('/api/v1/opentelemetry?x=1')).toEqual({
      status: 404,
      body: { error: 'Route GET /api/v1/opentelemetry not found' },
    });
    expect(await answer('/api/v1/healthcheck/a/b', { method: 'PROPFIND' })).toEqual({
      status: 404,
      body: { message: 'Route PROPFIND /api/v1/healthcheck/a/b not found' },
    });
    // A prefix is a whole segment: /api/v1/streamx is under no part.
    expect(await answer('/api/v1/streamx')).toEqual({
      status: 404,
      body: { message: 'Route GET /api/v1/streamx not found' },
    });
    expect(await answer('/nowhere', { method: 'DELETE' })).toEqual({
      status: 404,
      body: { message: 'Route DELETE /nowhere not found' },
    });
    // A body that does not parse, and a refusal of the credentials, in the same shape.
    const malformed = { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } };
    expect(await answer('/api/v1/stream/a/b/c', malformed)).toEqual({
      status: 400,
      body: { error: "Invalid JSON: Expected property name or '}' in JSON at position 1" },
    });
    expect(await answer('/nowhere', malformed)).toEqual({
      status: 400,
      body: { message: "Invalid JSON: Expected property name or '}' in JSON at position 1" },
    });
    // A URL that does not decode is refused before any routing, in the same shape.
    expect(await answer('/api/v1/stream/%ff')).toEqual({
      status: 400,
      body: { error: "'/api/v1/stream/%ff' is not a valid url component" },
    });
    expect(await answer('/%ff')).toEqual({ status: 400, body: { message: "'/%ff' is not a valid url component" } });
    const refused = await server.request('/api/v1/stream/a/b/c');
    expect(refused.status).toBe(401);
    expect(Object.keys((await refused.json()) as object)).toEqual(['error']);
    const refusedAtRoot = await server.request('/nowhere');
    expect(refusedAtRoot.status).toBe(401);
    expect(Object.keys((await refusedAtRoot.json()) as object)).toEqual(['message']);
  });

  it('serves /metrics that promtool accepts, with the HTTP server metrics', async () => {
    const server = await started();
    await server.request('/healthz');
    await server.request('/nowhere');
    const text = await (await server.request('/metrics')).text();
    expect(text).toContain('http_responses_total{method="GET",route="/healthz",status="200"} 1');
    expect(text).toContain('http_responses_total{method="GET",route="?",status="404"} 1');
    expect(text).toMatch(
      /http_requests_duration_seconds_bucket\{le="0.005",method="GET",route="\/healthz",status="200"\}/,
    );
    expect(text).toContain('process_cpu_user_seconds_total');
    const dir = mkdtempSync(join(tmpdir(), 'vigie-metrics-'));
    // Mirabelle's gauge name, kept for its users' dashboards; promtool reserves `_count` for histograms and summaries.
    const upstreamNames = /^(# (HELP|TYPE) )?websocket_connections_count\b/;
    writeFileSync(
      join(dir, 'metrics.txt'),
      text
        .split('\n')
        .filter((line) => !upstreamNames.test(line))
        .join('\n'),
    );
    const { stdout, stderr } = await exec('sh', ['-c', `promtool check metrics < ${join(dir, 'metrics.txt')}`]);
    expect(stdout + stderr).not.toMatch(/error/i);
  });

  it('writes the per-check healthcheck families in the text format promtool accepts, label values escaped', async () => {
    // Labels hold no control characters (docs/hardening.md, "Labels"): a quote and a backslash are escaped.
    const labels = { team: 'a"b\\cd' };
    const server = await started({
      config: {
        'healthchecks-labels': ['team'],
        'command-checks': [
          { name: 'passes', command: 'true', interval: '1s', timeout: '1s', labels },
          { name: 'fails', command: 'false', interval: '1s', timeout: '1s' },
        ],
      },
    });
    let text = '';
    await waitFor(async () => {
      text = await (await server.request('/metrics')).text();
      expect(text).toMatch(/^healthcheck_total\{name="fails",team="",status="failure"\} [1-9]/m);
      expect(text).toMatch(/^healthcheck_total\{name="passes",team="a\\"b\\\\cd",status="success"\} [1-9]/m);
    });
    const runs = Number(/^healthcheck_duration_seconds_count\{name="passes",[^}]*\} (\d+)$/m.exec(text)?.[1]);
    expect(text).toContain(`healthcheck_duration_seconds_bucket{name="passes",team="a\\"b\\\\cd",le="+Inf"} ${runs}`);
    expect(text).toContain('healthcheck_up{name="fails",team=""} 0');
    expect(text).not.toContain('healthcheck_total{name="fails",team="",status="success"}');
    const dir = mkdtempSync(join(tmpdir(), 'vigie-metrics-'));
    writeFileSync(
      join(dir, 'metrics.txt'),
      text
        .split('\n')
        .filter((line) => !/^(# (HELP|TYPE) )?websocket_connections_count\b/.test(line))
        .join('\n'),
    );
    const { stdout, stderr } = await exec('sh', ['-c', `promtool check metrics < ${join(dir, 'metrics.txt')}`]);
    expect(stdout + stderr).not.toMatch(/error/i);
  });
});

describe('basic auth', () => {
  it('checks the credentials for real', async () => {
    const server = await started({
      config: { http: { 'basic-auth': { username: 'ops', password: 's3cret:with:colons' } } },
    });
    const auth = (user: string, password: string) => ({
      authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
    });
    const none = await server.request('/api/v1/healthcheck');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    expect((await server.request('/api/v1/healthcheck', { headers: auth('ops', 'wrong') })).status).toBe(401);
    expect((await server.request('/api/v1/healthcheck', { headers: auth('other', 's3cret:with:colons') })).status).toBe(
      401,
    );
    expect((await server.request('/metrics', { headers: auth('ops', 'wrong') })).status).toBe(401);
    const ok = await server.request('/api/v1/healthcheck', { headers: auth('ops', 's3cret:with:colons') });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ result: [] });
    // The probes reveal nothing and load balancers rarely send credentials (docs/http-api.md, "Shared routes").
    const probe = await server.request('/healthz');
    expect(probe.status).toBe(200);
    expect(await probe.json()).toEqual({ message: 'ok' });
  });
});

describe('TLS', () => {
  it('serves HTTPS with the configured certificate', async () => {
    const ca = createCa();
    const leaf = ca.issue('server', { dns: ['localhost'], ips: ['127.0.0.1'] });
    const server = await started({ config: { http: { key: leaf.key, cert: leaf.cert } } });
    expect(server.url).toMatch(/^https:\/\//);
    const dispatcher = new Agent({ connect: { ca: readPem(ca.cert) } });
    const response = await undiciFetch(`${server.url}/healthz`, { dispatcher });
    expect(response.status).toBe(200);
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('requires a client certificate signed by cacert (mutual TLS)', async () => {
    const ca = createCa();
    const leaf = ca.issue('server', { dns: ['localhost'], ips: ['127.0.0.1'] });
    const client = ca.issue('client', { client: true });
    const server = await started({ config: { http: { key: leaf.key, cert: leaf.cert, cacert: ca.cert } } });
    const withCert = new Agent({
      connect: { ca: readPem(ca.cert), cert: readPem(client.cert), key: readPem(client.key) },
    });
    expect((await undiciFetch(`${server.url}/healthz`, { dispatcher: withCert })).status).toBe(200);
    const withoutCert = new Agent({ connect: { ca: readPem(ca.cert) } });
    await expect(undiciFetch(`${server.url}/healthz`, { dispatcher: withoutCert })).rejects.toThrow();
    const other = createCa('Other CA').issue('intruder', { client: true });
    const wrongCa = new Agent({
      connect: { ca: readPem(ca.cert), cert: readPem(other.cert), key: readPem(other.key) },
    });
    await expect(undiciFetch(`${server.url}/healthz`, { dispatcher: wrongCa })).rejects.toThrow();
  });
});

describe('signals', () => {
  it('SIGHUP with a broken config logs the error and keeps serving; a valid one is applied', async () => {
    const server = await started();
    server.writeConfig('http:\n  port: 0\nstreams:\n  snapshot-interval: nope\n');
    server.process.kill('SIGHUP');
    const refused = await server.waitForLog(/reload refused/);
    expect(refused).toContain('streams.snapshot-interval');
    expect((await server.request('/healthz')).status).toBe(200);
    server.writeConfig({});
    server.process.kill('SIGHUP');
    await server.waitForLog(/config reloaded/);
    expect((await server.request('/healthz')).status).toBe(200);
  });

  it('SIGTERM stops the server, closes the database and exits 0', async () => {
    const server = await started();
    expect((await server.request('/healthz')).status).toBe(200);
    expect(await server.stop()).toBe(0);
    expect(server.logs.some((line) => line.includes('vigie stopped'))).toBe(true);
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });
});
