/**
 * A service with many checks, as the dashboard's scale test and bench see it: `count` TCP checks named
 * `check-00000`… against one local listener, an hour apart so that only their first runs load the service,
 * labelled `shard=0`…`9`, created through the bulk API; resolves once every check has its first result.
 */
import type { TestServer } from './server.ts';

export async function createManyChecks(server: TestServer, port: number, count: number): Promise<void> {
  const checks = Array.from({ length: count }, (_, i) => ({
    name: `check-${String(i).padStart(5, '0')}`,
    target: '127.0.0.1',
    port,
    interval: '1h',
    timeout: '2s',
    labels: { shard: String(i % 10) },
  }));
  const created = await server.request('/api/v1/healthcheck/bulk', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ 'tcp-checks': checks }),
  });
  if (created.status !== 201)
    throw new Error(`the bulk of ${count} checks answered ${created.status}: ${await created.text()}`);
  // The first runs keep the service busy for a while. A plain loop, not vitest's waitFor: benchmarks use this too.
  const deadline = Date.now() + 150_000;
  for (;;) {
    const results = ((await (await server.request('/api/v1/result')).json()) as { result: unknown[] }).result.length;
    if (results === count) return;
    if (Date.now() > deadline) throw new Error(`${results} of ${count} checks had a first result after 150 s`);
    // eslint-disable-next-line no-restricted-syntax -- polls the results (above); the benches run this outside vitest's waitFor
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}
