/**
 * HTTP discovery end to end (docs/configuration.md, "discovery"): the real server polls a local source at
 * startup, reconciles added / changed / removed checks under `http-discovery-<name>`, changes nothing on broken
 * JSON or one invalid check, and runs the last good payload after a restart while the source is down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

interface CheckJson {
  name: string;
  source: string;
  port?: number;
}

describe('HTTP discovery', () => {
  let source: HttpTarget;
  let target: HttpTarget;
  let server: TestServer;
  let payload: string;

  const tcp = (name: string, port: number) => ({ name, target: '127.0.0.1', port, timeout: '1s', interval: '10s' });
  const checks = async () => (await (await server.request('/healthcheck')).json()) as CheckJson[];
  const names = async () => (await checks()).map((check) => check.name);
  const config = () => ({
    'tcp-checks': [tcp('from-config', target.port)],
    discovery: {
      http: [
        {
          name: 'cmdb',
          host: '127.0.0.1',
          port: source.port,
          path: '/checks',
          query: { env: 'prod' },
          headers: { authorization: 'Basic x' },
          interval: '1s',
        },
      ],
    },
  });

  beforeAll(async () => {
    target = await startHttpTarget();
    payload = JSON.stringify({ 'tcp-checks': [tcp('disc-a', target.port), tcp('disc-b', target.port)] });
    source = await startHttpTarget({ handler: (_request, response) => response.end(payload) });
    server = await startServer({ config: config() });
  }, 60_000);

  afterAll(async () => {
    await server?.kill9();
    await Promise.all([source?.close(), target?.close()]);
  });

  it('polls at startup and runs the discovered checks under their source', async () => {
    await waitFor(async () => (await names()).includes('disc-b'), {
      timeoutMs: 3_000,
      message: 'the first poll at startup',
    });
    const list = await checks();
    expect(list.find((check) => check.name === 'disc-a')?.source).toBe('http-discovery-cmdb');
    expect(list.find((check) => check.name === 'from-config')).toBeDefined();
    const request = source.requests[0];
    expect(request?.path).toBe('/checks');
    expect(request?.query.get('env')).toBe('prod');
    expect(request?.headers['user-agent']).toBe('Cabourotte');
    expect(request?.headers.authorization).toBe('Basic x');
  });

  it('adds, changes and removes checks of its own source only', async () => {
    payload = JSON.stringify({
      'tcp-checks': [tcp('disc-a', target.port + 0), tcp('disc-c', target.port)],
      'http-checks': [],
    });
    await waitFor(
      async () => {
        const now = await names();
        return now.includes('disc-c') && !now.includes('disc-b');
      },
      { timeoutMs: 5_000 },
    );
    expect(await names()).toContain('from-config');
    payload = JSON.stringify({ 'tcp-checks': [{ ...tcp('disc-a', target.port), timeout: '2s' }] });
    await waitFor(
      async () => {
        const list = await checks();
        return (
          !list.some((check) => check.name === 'disc-c') &&
          (list.find((check) => check.name === 'disc-a') as { timeout?: string } | undefined)?.timeout === '2s'
        );
      },
      { timeoutMs: 5_000 },
    );
  });

  it('changes nothing on broken JSON or one invalid check, logs why, and counts the failure', async () => {
    const before = await names();
    payload = '{"tcp-checks": [';
    await server.waitForLog(/fail to convert the payload from json/, 5_000);
    payload = JSON.stringify({
      'tcp-checks': [
        tcp('disc-new', target.port),
        { name: 'bad', target: '127.0.0.1', timeout: '1s', interval: '10s' },
      ],
    });
    await server.waitForLog(/HTTP discovery error: .*bad/, 5_000);
    expect(await names()).toEqual(before);
    const metrics = await (await server.request('/metrics')).text();
    expect(metrics).toMatch(/http_discovery_failures_total\{name="cmdb",reason="json"\} [1-9]/);
    expect(metrics).toMatch(/http_discovery_failures_total\{name="cmdb",reason="invalid"\} [1-9]/);
    expect(metrics).toMatch(/http_discovery_responses_total\{name="cmdb",status="success"\} [1-9]/);
    expect(metrics).toMatch(/http_discovery_duration_seconds_count\{name="cmdb"\} [1-9]/);
  });

  it('runs the last good payload after a restart while the source is down', async () => {
    payload = JSON.stringify({ 'tcp-checks': [tcp('disc-last', target.port)] });
    await waitFor(async () => (await names()).includes('disc-last'), { timeoutMs: 5_000 });
    await server.stop();
    source.handle((_request, response) => {
      response.statusCode = 503;
      response.end('down');
    });
    server = await startServer({ dataDir: server.dataDir, config: config() });
    const list = await checks();
    expect(list.find((check) => check.name === 'disc-last')?.source).toBe('http-discovery-cmdb');
    await server.waitForLog(/request failed, status 503/, 5_000);
    expect(await names()).toContain('disc-last');
  }, 60_000);

  it('takes its checks away when the source leaves the config (SIGHUP)', async () => {
    server.writeConfig({ 'tcp-checks': [tcp('from-config', target.port)] });
    server.process.kill('SIGHUP');
    await waitFor(async () => !(await names()).includes('disc-last'), { timeoutMs: 5_000 });
    expect(await names()).toEqual(['from-config']);
  });
});
