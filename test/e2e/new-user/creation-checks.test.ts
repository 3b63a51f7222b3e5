/**
 * Issue 14, item 6, against the real server and CLI: mistakes that used to be accepted and then failed every run
 * are refused at creation, saying what to write instead. A `target` given as a URL names the `protocol`/`port`/
 * `path` it maps to; a command with spaces that is no existing file names the `arguments` it most likely means.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli, startServer, type TestServer } from '../../helpers/server.ts';
import { startHttpTarget, type HttpTarget } from '../../helpers/targets.ts';
import { waitFor } from '../../helpers/wait.ts';

let server: TestServer;
let http: HttpTarget;

beforeAll(async () => {
  [server, http] = await Promise.all([startServer(), startHttpTarget()]);
}, 60_000);

afterAll(async () => {
  await Promise.all([server.kill9(), http.close()]);
});

async function create(kind: string, body: Record<string, unknown>): Promise<{ status: number; message: string }> {
  const response = await server.request(`/api/v1/healthcheck/${kind}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: response.status, message: ((await response.json()) as { message: string }).message };
}

it('an HTTP target given as a URL is refused, naming the protocol, port and path to write; the written form runs', async () => {
  const base = { name: 'web', 'valid-status': [200], timeout: '1s', interval: '1s' };
  expect(await create('http', { ...base, target: `http://127.0.0.1:${http.port}/health?full=1`, port: 80 })).toEqual({
    status: 400,
    message: `Invalid healthcheck configuration: target: must be a host name or an IP address, not a URL: write "target": "127.0.0.1", "protocol": "http", "port": ${http.port}, "path": "/health?full=1"`,
  });
  expect(
    (await create('tcp', { name: 'db', target: 'tcp://db.example:5432', port: 5432, timeout: '1s', interval: '1s' }))
      .message,
  ).toBe(
    'Invalid healthcheck configuration: target: must be a host name or an IP address, not a URL: write "target": "db.example", "port": 5432',
  );
  expect(
    (await create('tls', { name: 'cert', target: '127.0.0.1/x', port: 443, timeout: '1s', interval: '1s' })).message,
  ).toBe('Invalid healthcheck configuration: target: must be a host name or an IP address, got "127.0.0.1/x"');
  expect(
    (await create('http', { ...base, target: '127.0.0.1', protocol: 'http', port: http.port, path: '/health' })).status,
  ).toBe(201);
  await waitFor(async () => {
    const response = await server.request('/api/v1/result/web');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ success: true });
  });
}, 30_000);

it('a command with spaces that is no file is refused, suggesting arguments; an executable path with a space is accepted', async () => {
  expect(await create('command', { name: 'shell', command: 'sh -c true', timeout: '1s', interval: '1s' })).toEqual({
    status: 400,
    message:
      'Invalid healthcheck configuration: command: "sh -c true" is not a file and commands run without a shell: give the program alone and its arguments in "arguments", e.g. "command": "sh", "arguments": ["-c","true"]',
  });
  const dir = mkdtempSync(join(tmpdir(), 'vigie plugins '));
  const plugin = join(dir, 'check disk');
  writeFileSync(plugin, '#!/bin/sh\necho disk fine\n');
  chmodSync(plugin, 0o755);
  expect((await create('command', { name: 'spaced', command: plugin, timeout: '1s', interval: '1s' })).status).toBe(
    201,
  );
  await waitFor(async () => {
    const response = await server.request('/api/v1/result/spaced');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ success: true });
  });
}, 30_000);

it('the config file gets the same errors from check-config, with the key path', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vigie-create-'));
  writeFileSync(
    join(dir, 'vigie.yaml'),
    stringify({
      'data-dir': dir,
      'http-checks': [
        {
          name: 'web',
          target: 'https://example.org',
          port: 443,
          'valid-status': [200],
          timeout: '1s',
          interval: '10s',
        },
      ],
    }),
  );
  const { code, stderr } = await runCli(['check-config', join(dir, 'vigie.yaml')]);
  expect(code).toBe(1);
  expect(stderr).toContain(
    'http-checks[0].target: must be a host name or an IP address, not a URL: write "target": "example.org", "protocol": "https", "port": 443, "path": "/"',
  );
}, 30_000);
