/**
 * Caps on a check's labels (docs/hardening.md, "Labels"): at most `healthchecks.max-labels` labels, keys of at
 * most `max-label-key-bytes` and values of at most `max-label-value-bytes` bytes, refused with a 400 naming the
 * field through the API (one check and bulk), at startup for the config file, and for a discovery source, which
 * all go through one validation.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpTarget, startHttpTarget } from '../helpers/targets.ts';
import { runCli, startServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const labels = (count: number, value = 'v') =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`l${i}`, value]));

describe('check labels', () => {
  let server: TestServer;
  let source: HttpTarget;
  let payload = '{}';

  const tcp = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    target: '127.0.0.1',
    port: 9,
    timeout: '1s',
    interval: '1h',
    ...extra,
  });
  const create = (body: unknown, kind = 'tcp') =>
    server.request(`/api/v1/healthcheck/${kind}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    source = await startHttpTarget({ handler: (_request, response) => response.end(payload) });
    server = await startServer({
      config: {
        healthchecks: { 'max-labels': 64 },
        discovery: { http: [{ name: 'cmdb', host: '127.0.0.1', port: source.port, path: '/checks', interval: '1s' }] },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await server?.kill9();
    await source?.close();
  });

  it('accepts 64 labels and values of 1 KiB; refuses 65 labels, a 1025-byte value and a 257-byte key, naming the field', async () => {
    expect((await create(tcp('max', { labels: labels(64, 'é'.repeat(512)) }))).status).toBe(201);

    const tooMany = await create(tcp('many', { labels: labels(65) }));
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toEqual({
      message:
        'Invalid healthcheck configuration: labels: has 65 labels, more than the limit of 64 (healthchecks.max-labels)',
      errors: [{ field: 'labels', message: 'has 65 labels, more than the limit of 64 (healthchecks.max-labels)' }],
    });

    const long = await create(tcp('long', { labels: { team: `${'é'.repeat(512)}x` } }));
    expect(long.status).toBe(400);
    expect(await long.json()).toMatchObject({
      message:
        'Invalid healthcheck configuration: labels.team: is 1025 bytes long, more than the limit of 1024 (healthchecks.max-label-value-bytes)',
      errors: [{ field: 'labels.team' }],
    });

    const key = await create(tcp('key', { labels: { ['k'.repeat(257)]: 'v' } }));
    expect(key.status).toBe(400);
    expect(((await key.json()) as { message: string }).message).toMatch(
      /^Invalid healthcheck configuration: labels: the key "k{20}\.\.\." is 257 bytes long, more than the limit of 256 \(healthchecks\.max-label-key-bytes\)$/,
    );

    // A heartbeat check has labels of its own schema: the same caps.
    expect((await create({ name: 'hb', interval: '1h', labels: labels(65) }, 'heartbeat')).status).toBe(400);

    const bulk = await server.request('/api/v1/healthcheck/bulk', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ 'tcp-checks': [tcp('fine'), tcp('bulky', { labels: labels(65) })] }),
    });
    expect(bulk.status).toBe(400);
    expect(((await bulk.json()) as { message: string }).message).toBe(
      'Invalid healthcheck configuration: check "bulky" (tcp-checks[1]): labels: has 65 labels, more than the limit of 64 (healthchecks.max-labels)',
    );
    const names = ((await (await server.request('/healthcheck')).json()) as { name: string }[]).map(
      (check) => check.name,
    );
    expect(names).toContain('max');
    expect(names).not.toContain('many');
    expect(names).not.toContain('fine');
  });

  it('refuses a discovery payload with a check over the caps, and keeps running what it had', async () => {
    payload = JSON.stringify({ 'tcp-checks': [tcp('disc-ok')] });
    await waitFor(async () => (await server.request('/api/v1/healthcheck/disc-ok')).status === 200, {
      timeoutMs: 10_000,
    });
    payload = JSON.stringify({
      'tcp-checks': [tcp('disc-ok'), tcp('disc-big', { labels: { big: 'x'.repeat(1025) } })],
    });
    await server.waitForLog(
      /labels\.big: is 1025 bytes long, more than the limit of 1024 \(healthchecks\.max-label-value-bytes\)/,
      10_000,
    );
    expect((await server.request('/api/v1/healthcheck/disc-big')).status).toBe(404);
    expect((await server.request('/api/v1/healthcheck/disc-ok')).status).toBe(200);
  });

  it('refuses a config file whose check is over the caps, and the caps are config keys', async () => {
    const file = join(server.dataDir, 'labels.yaml');
    writeFileSync(
      file,
      `tcp-checks:\n  - {name: a, target: x, port: 80, timeout: 1s, interval: 10s, labels: ${JSON.stringify(labels(65))}}\n`,
    );
    const checked = await runCli(['check-config', file]);
    expect(checked.code).toBe(1);
    expect(checked.stderr).toContain(
      `${file}: tcp-checks[0].labels: has 65 labels, more than the limit of 64 (healthchecks.max-labels)`,
    );
    writeFileSync(
      file,
      `healthchecks: {max-labels: 2, max-label-value-bytes: 4, max-label-key-bytes: 8}\ntcp-checks:\n  - {name: a, target: x, port: 80, timeout: 1s, interval: 10s, labels: {env: prod}}\n  - {name: b, target: x, port: 80, timeout: 1s, interval: 10s, labels: {env: staging}}\n`,
    );
    expect((await runCli(['check-config', file])).stderr).toContain(
      `${file}: tcp-checks[1].labels.env: is 7 bytes long, more than the limit of 4 (healthchecks.max-label-value-bytes)`,
    );
  }, 90_000);
});
