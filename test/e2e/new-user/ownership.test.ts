/**
 * Issue 14, item 4, against the real server: the API changes only what it owns. A check of the config file or
 * of a discovery source, and a stream of a stream file, are refused with 409 in create, bulk and delete, naming
 * where to change them; nothing is applied. API checks and API streams (persisted ones included) stay the API's.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeDataDir, startServer, type TestServer } from '../../helpers/server.ts';
import { startHttpTarget, startTcpTarget, type HttpTarget, type TcpTarget } from '../../helpers/targets.ts';
import { waitFor } from '../../helpers/wait.ts';

let server: TestServer;
let tcp: TcpTarget;
let discovery: HttpTarget;
let streamFile: string;

const tcpCheck = (name: string) => ({ name, target: '127.0.0.1', port: tcp.port, timeout: '1s', interval: '10s' });

beforeAll(async () => {
  tcp = await startTcpTarget();
  discovery = await startHttpTarget({
    handler: (_request, response) => response.end(JSON.stringify({ 'tcp-checks': [tcpCheck('discovered')] })),
  });
  const dataDir = makeDataDir();
  mkdirSync(join(dataDir, 'streams'));
  streamFile = join(dataDir, 'streams', 'rules.edn');
  writeFileSync(streamFile, '{:filed {:actions {:action :index :params [[:host]]}}}');
  server = await startServer({
    dataDir,
    config: {
      'tcp-checks': [tcpCheck('from-file')],
      discovery: { http: [{ name: 'cmdb', host: '127.0.0.1', port: discovery.port, path: '/checks', interval: '1s' }] },
    },
  });
  await waitFor(async () => (await server.request('/api/v1/healthcheck/discovered')).status === 200, {
    timeoutMs: 10_000,
    message: 'the first discovery',
  });
}, 60_000);

afterAll(async () => {
  await Promise.all([server.kill9(), tcp.close(), discovery.close()]);
});

async function send(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await server.request(path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const fromFile = { message: 'healthcheck from-file comes from the configuration file; change it there' };
const fromDiscovery = {
  message: 'healthcheck discovered comes from the discovery source http-discovery-cmdb; change it there',
};

it('refuses to create, replace or delete a config-file or discovered check (409), on both path forms', async () => {
  expect(await send('POST', '/api/v1/healthcheck/tcp', tcpCheck('from-file'))).toEqual({ status: 409, body: fromFile });
  expect(
    await send('POST', '/healthcheck/dns', { name: 'from-file', domain: 'localhost', timeout: '1s', interval: '10s' }),
  ).toEqual({ status: 409, body: fromFile });
  expect(await send('DELETE', '/api/v1/healthcheck/from-file')).toEqual({ status: 409, body: fromFile });
  expect(await send('POST', '/api/v1/healthcheck/tcp', tcpCheck('discovered'))).toEqual({
    status: 409,
    body: fromDiscovery,
  });
  expect(await send('DELETE', '/healthcheck/discovered')).toEqual({ status: 409, body: fromDiscovery });
  const list = (await send('GET', '/api/v1/healthcheck')).body.result as { name: string; source: string }[];
  expect(list.map(({ name, source }) => `${name}:${source}`)).toEqual([
    'discovered:http-discovery-cmdb',
    'from-file:configuration',
  ]);
});

it('refuses a bulk payload naming a config-file check, whole', async () => {
  expect(
    await send('POST', '/api/v1/healthcheck/bulk', { 'tcp-checks': [tcpCheck('api-one'), tcpCheck('from-file')] }),
  ).toEqual({ status: 409, body: fromFile });
  expect((await send('GET', '/api/v1/healthcheck/api-one')).status).toBe(404);
  // The API's own checks: created, replaced, deleted.
  expect((await send('POST', '/api/v1/healthcheck/bulk', { 'tcp-checks': [tcpCheck('api-one')] })).status).toBe(201);
  expect(
    (await send('POST', '/api/v1/healthcheck/tcp', { ...tcpCheck('api-one'), description: 'changed' })).status,
  ).toBe(201);
  expect(await send('DELETE', '/api/v1/healthcheck/api-one')).toEqual({
    status: 200,
    body: { message: 'Successfully deleted healthcheck api-one' },
  });
});

it("refuses to replace or delete a stream of a stream file (409); API streams, persisted ones too, stay the API's", async () => {
  const config = (edn: string) => ({ config: Buffer.from(edn).toString('base64') });
  const owned = { error: `stream filed comes from the file ${streamFile}; change it there` };
  expect(await send('POST', '/api/v1/stream/filed', config('{:actions {:action :info}}'))).toEqual({
    status: 409,
    body: owned,
  });
  expect(await send('DELETE', '/api/v1/stream/filed')).toEqual({ status: 409, body: owned });
  expect((await send('GET', '/api/v1/stream/filed')).status).toBe(200);

  expect(
    await send('POST', '/api/v1/stream/mine', config('{:persist true :actions {:action :index :params [[:host]]}}')),
  ).toEqual({ status: 200, body: { message: 'stream added' } });
  // Its own file (streams/mine.edn) does not make it a file stream.
  await waitFor(
    async () =>
      (await send('POST', '/api/v1/stream/mine', config('{:persist true :actions {:action :info}}'))).status === 200,
    { message: 'the re-post of a persisted stream' },
  );
  expect(await send('DELETE', '/api/v1/stream/mine')).toEqual({ status: 200, body: { message: 'stream removed' } });
});
