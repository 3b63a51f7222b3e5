/** The alerting examples shipped in docs/alerting.md pass their own `vigie test` files, run by the real CLI, and the
 *  ntfy output of its "Templates" section sends what it says, through the real server. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PACKAGE_ROOT } from '../../src/paths.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { waitFor } from '../helpers/wait.ts';

const dir = join(PACKAGE_ROOT, 'docs/examples/alerting');
const vigieTest = (streams: string, tests: string) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(PACKAGE_ROOT, 'src/main.ts'), 'test', '--streams', join(dir, streams), '--tests', join(dir, tests)], { encoding: 'utf8' });

it('docs/examples/alerting passes vigie test', () => {
  const run = vigieTest('streams.edn', 'tests.edn');
  expect(run.stdout).toContain('3 passed, 0 failed');
  expect(run.status).toBe(0);
}, 30_000);

it('the notification channels of docs/alerting.md pass vigie test', () => {
  const run = vigieTest('channels.edn', 'channels-tests.edn');
  expect(run.stdout).toContain('4 passed, 0 failed');
  expect(run.status).toBe(0);
}, 30_000);

describe('the ntfy example of docs/alerting.md ("Templates")', () => {
  let receiver: HttpTarget;
  let server: TestServer;
  afterAll(async () => {
    await server?.kill9();
    await receiver?.close();
  });

  it('sends the title header rendered from its template, through the real server', async () => {
    const doc = readFileSync(join(PACKAGE_ROOT, 'docs/alerting.md'), 'utf8');
    const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => parse(match[1] as string) as unknown);
    type Outputs = Record<string, Record<string, unknown>>;
    const outputs = blocks
      .map((block) => (block as { streams?: { outputs?: Outputs } }).streams?.outputs)
      .find((one) => one?.ntfy !== undefined);
    const ntfy = outputs?.ntfy as Record<string, unknown>;
    expect(ntfy.headers).toEqual({ 'content-type': 'text/plain', title: 'Vigie: {{healthcheck}}' });
    receiver = await startHttpTarget();
    server = await startServer({ config: { streams: { outputs: { ntfy: { ...ntfy, url: `${receiver.origin}/my-alerts`, 'flush-interval': '20ms' } } } } });
    const json = (method: string, body: unknown) => ({ method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const stream = Buffer.from('{:actions {:action :output! :params [:ntfy]}}').toString('base64');
    expect((await server.request('/api/v1/stream/alerts', json('POST', { config: stream }))).status).toBe(200);
    const event = { healthcheck: 'web', state: 'critical', description: 'HTTP healthcheck on 127.0.0.1:8080: status 500' };
    expect((await server.request('/api/v1/stream/alerts', json('PUT', { events: [event] }))).status).toBe(200);
    const request = await waitFor(() => receiver.requests.find((one) => one.path === '/my-alerts') ?? false, { timeoutMs: 10_000 });
    expect(request.headers.title).toBe('Vigie: web');
    expect(request.headers['content-type']).toBe('text/plain');
    expect(request.body).toBe('web is critical: HTTP healthcheck on 127.0.0.1:8080: status 500');
  }, 60_000);
});
