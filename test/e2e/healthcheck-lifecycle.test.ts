/**
 * The healthcheck part across the process's life: restart and `kill -9` durability, SIGHUP reconciliation of
 * config checks, a Cabourotte YAML loading unchanged, and bad check definitions in the file.
 *
 * Whether a check was kept or restarted is decided in-process (test/healthcheck/registry/reconciler.test.ts, fake
 * clock); here, without timing windows, from the run counter `healthcheck_total`: a kept check's counter goes on, a
 * replaced check starts a new series from zero.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli, startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget, startTcpTarget, type TcpTarget } from '../helpers/targets.ts';

interface Result {
  name: string;
  success: boolean;
  'healthcheck-timestamp': number;
  message: string;
  source: string;
  labels?: Record<string, string>;
}

const servers: TestServer[] = [];
let tcp: TcpTarget;
let http: HttpTarget;
/** Requests received by the HTTP target, per path. */
const arrivals = new Map<string, number>();
const arrived = (path: string) => arrivals.get(path) ?? 0;

beforeAll(async () => {
  [tcp, http] = await Promise.all([
    startTcpTarget(),
    startHttpTarget({
      handler: (request, response) => {
        arrivals.set(request.path, arrived(request.path) + 1);
        response.end('ok');
      },
    }),
  ]);
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.kill9()));
});

afterAll(async () => {
  await Promise.all([tcp.close(), http.close()]);
});

async function started(options: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}

async function post(server: TestServer, kind: string, definition: Record<string, unknown>): Promise<void> {
  const response = await server.request(`/api/v1/healthcheck/${kind}`, {
    method: 'POST',
    body: JSON.stringify(definition),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status).toBe(201);
}

async function results(server: TestServer): Promise<Result[]> {
  return ((await (await server.request('/api/v1/result')).json()) as { result: Result[] }).result;
}

async function checkNames(server: TestServer): Promise<string[]> {
  return ((await (await server.request('/healthcheck')).json()) as { name: string }[]).map((check) => check.name);
}

/** Runs of a check since it was registered, as `healthcheck_total` counts them (0 without a series). */
async function runCount(server: TestServer, name: string): Promise<number> {
  const text = await (await server.request('/metrics')).text();
  let runs = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`healthcheck_total{name="${name}",`)) runs += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return runs;
}

const tcpCheck = (name: string, interval = '500ms') => ({
  name,
  target: '127.0.0.1',
  port: tcp.port,
  timeout: '500ms',
  interval,
});

describe('durability', () => {
  it('brings every API check back after SIGTERM, scheduled, with its last result shown at once', async () => {
    const first = await started({});
    await post(first, 'tcp', tcpCheck('kept-a'));
    await post(first, 'tcp', tcpCheck('kept-b'));
    await vi.waitFor(async () => expect((await results(first)).map((r) => r.name)).toEqual(['kept-a', 'kept-b']), {
      timeout: 5000,
      interval: 100,
    });
    const before = await results(first);
    expect(await first.stop()).toBe(0);

    const second = await started({ dataDir: first.dataDir });
    const shown = await results(second);
    expect(shown.map((r) => r.name)).toEqual(['kept-a', 'kept-b']);
    for (const result of shown) {
      expect(result['healthcheck-timestamp']).toBeGreaterThanOrEqual(
        before.find((r) => r.name === result.name)!['healthcheck-timestamp'],
      );
    }
    expect(await checkNames(second)).toEqual(['kept-a', 'kept-b']);
    const restartedAt = Math.floor(Date.now() / 1000);
    await vi.waitFor(
      async () => {
        const now = await results(second);
        expect(now.every((r) => r['healthcheck-timestamp'] > restartedAt && r.success)).toBe(true);
      },
      { timeout: 5000, interval: 200 },
    );
  });

  it('keeps every acknowledged check and the flushed results through kill -9', async () => {
    // Results wait at most write-delay before they are written (30 s by default): 1 s here.
    const first = await started({ config: { healthchecks: { 'write-delay': '1s' } } });
    await post(first, 'tcp', tcpCheck('old'));
    await vi.waitFor(async () => expect((await results(first)).map((r) => r.name)).toEqual(['old']), {
      timeout: 5000,
      interval: 100,
    });
    // Results reach SQLite within write-delay (definitions before the 201): wait until the database holds it.
    const database = new Database(join(first.dataDir, 'vigie.db'), { readonly: true });
    try {
      const stored = database.prepare("select count(*) as n from healthcheck_results where name = 'old'");
      await vi.waitFor(() => expect((stored.get() as { n: number }).n).toBe(1), { timeout: 5000, interval: 100 });
    } finally {
      database.close();
    }
    await post(first, 'tcp', tcpCheck('acknowledged', '1h'));
    await first.kill9();

    const second = await started({ dataDir: first.dataDir });
    expect(await checkNames(second)).toEqual(['acknowledged', 'old']);
    expect((await results(second)).map((r) => r.name)).toEqual(['old']);
  });
});

describe('replacing an API check', () => {
  it('keeps a check posted again with the same definition running untouched, and restarts a changed one', async () => {
    const server = await started({});
    const check = {
      name: 'api-keep',
      target: '127.0.0.1',
      port: http.port,
      path: '/api-keep',
      'valid-status': [200],
      timeout: '500ms',
      interval: '1s',
    };
    await post(server, 'http', check);
    await vi.waitFor(async () => expect(await runCount(server, 'api-keep')).toBeGreaterThanOrEqual(3), {
      timeout: 6000,
      interval: 100,
    });
    const before = await runCount(server, 'api-keep');
    await post(server, 'http', check);
    // Kept: the counter goes on. A restarted check would start again from 0 and need 2 s to reach 3 runs.
    expect(await runCount(server, 'api-keep')).toBeGreaterThanOrEqual(before);
    await post(server, 'http', { ...check, path: '/api-changed' });
    expect(await runCount(server, 'api-keep')).toBeLessThan(3);
    await vi.waitFor(() => expect(arrived('/api-changed')).toBeGreaterThanOrEqual(1), { timeout: 5000, interval: 50 });
    const stopped = arrived('/api-keep');
    // Two more runs of the new definition, one interval apart: the old one would have run meanwhile.
    await vi.waitFor(() => expect(arrived('/api-changed')).toBeGreaterThanOrEqual(3), { timeout: 5000, interval: 50 });
    expect(arrived('/api-keep')).toBe(stopped);
  });
});

describe('config-file checks', () => {
  const httpCheck = (name: string, path: string) => ({
    name,
    target: '127.0.0.1',
    port: http.port,
    path,
    'valid-status': [200],
    timeout: '500ms',
    interval: '1s',
  });

  it('reconciles on SIGHUP: unchanged keeps running untouched, changed restarts, removed stops and its result vanishes', async () => {
    const server = await started({
      config: {
        'http-checks': [httpCheck('keep', '/keep'), httpCheck('change', '/change'), httpCheck('remove', '/remove')],
      },
    });
    await vi.waitFor(
      async () => {
        for (const name of ['keep', 'change', 'remove'])
          expect(await runCount(server, name), name).toBeGreaterThanOrEqual(3);
      },
      { timeout: 6000, interval: 100 },
    );
    expect((await results(server)).map((r) => `${r.name}:${r.source}`)).toEqual([
      'change:configuration',
      'keep:configuration',
      'remove:configuration',
    ]);
    const keepRuns = await runCount(server, 'keep');

    server.writeConfig({ 'http-checks': [httpCheck('keep', '/keep'), httpCheck('change', '/changed')] });
    server.process.kill('SIGHUP');
    const line = JSON.parse(await server.waitForLog(/config healthchecks reconciled/)) as {
      added: number;
      removed: number;
      kept: number;
    };
    expect(line).toMatchObject({ added: 1, removed: 1, kept: 1 });
    expect((await results(server)).map((r) => r.name)).toEqual(['change', 'keep']);
    // Kept: its counter goes on; restarted: a new series, far from 3 runs right after the reload.
    expect(await runCount(server, 'keep')).toBeGreaterThanOrEqual(keepRuns);
    expect(await runCount(server, 'change')).toBeLessThan(3);
    const removedRuns = arrived('/remove');
    await vi.waitFor(() => expect(arrived('/changed')).toBeGreaterThanOrEqual(2), { timeout: 6000, interval: 100 });
    expect(arrived('/remove')).toBe(removedRuns);
    expect(await (await server.request('/api/v1/result/remove')).json()).toEqual({
      message: 'Result not found for healthcheck remove',
    });
    expect(await (await server.request('/metrics')).text()).not.toContain('name="remove"');
  });

  it('keeps running unchanged when a reload brings a bad check, and names the key', async () => {
    const server = await started({ config: { 'tcp-checks': [tcpCheck('steady')] } });
    server.writeConfig({ 'tcp-checks': [tcpCheck('steady'), { ...tcpCheck('broken'), port: 0 }] });
    server.process.kill('SIGHUP');
    const line = await server.waitForLog(/reload refused/);
    expect(line).toContain('tcp-checks[1].port');
    expect(await checkNames(server)).toEqual(['steady']);
  });

  it("takes an API check's name back when the config file names it, at restart and at reload; the API may not take it again", async () => {
    const dns = (name: string) => ({ name, domain: 'localhost', timeout: '1s', interval: '1m' });
    const first = await started({});
    await post(first, 'dns', dns('shared'));
    expect(await (await first.request('/healthcheck/shared')).json()).toMatchObject({ source: 'api', kind: 'dns' });
    await first.stop();
    const second = await started({ dataDir: first.dataDir, config: { 'tcp-checks': [tcpCheck('shared')] } });
    expect(await (await second.request('/healthcheck/shared')).json()).toMatchObject({
      source: 'configuration',
      kind: 'tcp',
    });
    const refused = await second.request('/api/v1/healthcheck/dns', {
      method: 'POST',
      body: JSON.stringify(dns('shared')),
      headers: { 'content-type': 'application/json' },
    });
    expect(refused.status).toBe(409);
    await post(second, 'dns', dns('later'));
    second.writeConfig({ 'tcp-checks': [tcpCheck('shared'), tcpCheck('later')] });
    second.process.kill('SIGHUP');
    await second.waitForLog(/config healthchecks reconciled/);
    expect(await (await second.request('/healthcheck/later')).json()).toMatchObject({
      source: 'configuration',
      kind: 'tcp',
    });
  });

  it('loads a Cabourotte YAML unchanged: its checks run with source configuration and the labels reach the metrics', async () => {
    const yaml = `
http:
  host: 127.0.0.1
  port: 0
healthchecks-labels: [env]
result-buffer: 1000
http-checks:
  - name: web
    description: my http
    target: 127.0.0.1
    port: ${http.port}
    protocol: http
    path: /cabourotte
    method: GET
    valid-status: [200]
    timeout: 1s
    interval: 1s
    servername: localhost
    headers: {X-Foo: bar}
    labels: {env: prod}
tcp-checks:
  - {name: db, target: 127.0.0.1, port: ${tcp.port}, timeout: 1s, interval: 1s, should-fail: false}
command-checks:
  - {name: disk, command: "true", arguments: [], timeout: 1s, interval: 1s}
exporters:
  http:
    - {name: http-exporter, host: 127.0.0.1, port: 9595, path: /, protocol: http}
`;
    const server = await started({ config: yaml });
    await vi.waitFor(
      async () => {
        const shown = await results(server);
        expect(shown.map((r) => `${r.name}:${r.source}:${r.success}`)).toEqual([
          'db:configuration:true',
          'disk:configuration:true',
          'web:configuration:true',
        ]);
      },
      { timeout: 5000, interval: 100 },
    );
    expect((await results(server)).find((r) => r.name === 'web')).toMatchObject({
      summary: `HTTP healthcheck my http on 127.0.0.1:${http.port}`,
      labels: { env: 'prod' },
    });
    expect(http.requests.some((request) => request.path === '/cabourotte' && request.headers['x-foo'] === 'bar')).toBe(
      true,
    );
    expect(await (await server.request('/metrics')).text()).toMatch(
      /^healthcheck_total\{name="web",env="prod",status="success"\} \d+$/m,
    );
  });

  it('refuses a bad check in the file at startup and in check-config, naming the file, the list, the position and the field', async () => {
    const dir = (await started({})).dataDir;
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      `http-checks:\n  - {name: a, target: x, port: 80, valid-status: [200], timeout: 1s, interval: 10s}\n  - {name: b, target: x, port: 80, valid-status: [200], timeout: 1s, interval: 10s, method: BREW}\n`,
    );
    const checked = await runCli(['check-config', file]);
    expect(checked.code).toBe(1);
    expect(checked.stderr).toContain(`${file}: http-checks[1].method: `);
    const served = await runCli(['serve', '--config', file]);
    expect(served.code).toBe(1);
    expect(served.stderr).toContain(`${file}: http-checks[1].method: `);
    writeFileSync(
      file,
      `tcp-checks:\n  - {name: a, target: x, port: 80, timeout: 1s, interval: 10s}\ndns-checks:\n  - {name: a, domain: x, timeout: 1s, interval: 10s}\n`,
    );
    expect((await runCli(['check-config', file])).stderr).toContain(
      'dns-checks[0].name: duplicate name "a" (also tcp-checks[0])',
    );
    // Three CLI processes, each loading the whole bundle: on a loaded 2-core machine that alone can take 20 s.
  }, 90_000);
});
