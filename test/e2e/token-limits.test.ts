/**
 * Tokens at their edges (docs/http-api.md, "Credentials"): a browser can log in to a server that has tokens only
 * (the token as the basic-auth password), the number of API tokens is capped (`http.max-api-tokens`), and a token
 * created on a full disk is refused with 507, stored nowhere.
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { canMountTmpfs, fillDisk, tmpfsDataDir, unmountAll } from '../helpers/tmpfs.ts';

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const READ_SECRET = 'a-read-token-secret-0123456789';
const ADMIN_SECRET = 'an-admin-token-secret-0123456789';
const asBasic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});
const admin = { authorization: `Bearer ${ADMIN_SECRET}`, 'content-type': 'application/json' };
const tokens = [
  { name: 'viewer', sha256: sha256(READ_SECRET), scopes: ['read'] },
  { name: 'root', sha256: sha256(ADMIN_SECRET), scopes: ['admin'] },
];

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  unmountAll();
});
async function start(config: Record<string, unknown>, dataDir?: string): Promise<TestServer> {
  const server = await startServer({ config, ...(dataDir ? { dataDir } : {}) });
  servers.push(server);
  return server;
}
const create = (server: TestServer, name: string) =>
  server.request('/api/v1/tokens', {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ name, scopes: ['read'] }),
  });

describe('tokens only, in a browser', () => {
  it('challenges with Basic, and takes a token as the basic-auth password, with its scopes', async () => {
    const server = await start({ http: { tokens } });
    const prompt = await server.request('/api/v1/healthcheck');
    expect(prompt.status).toBe(401);
    expect(prompt.headers.get('www-authenticate')).toMatch(/^Basic realm="vigie"/);
    expect((await server.request('/api/v1/healthcheck', { headers: asBasic('anyone', READ_SECRET) })).status).toBe(200);
    expect((await server.request('/api/v1/healthcheck', { headers: asBasic('', READ_SECRET) })).status).toBe(200);
    const write = await server.request('/api/v1/healthcheck/nope', {
      method: 'DELETE',
      headers: asBasic('anyone', READ_SECRET),
    });
    expect(write.status).toBe(403);
    expect(((await write.json()) as { message: string }).message).toContain('token:viewer');
    expect((await server.request('/api/v1/healthcheck', { headers: asBasic('viewer', 'wrong') })).status).toBe(401);
  });
});

describe('http.max-api-tokens', () => {
  it('refuses a token past the cap with a 400 naming the setting, and takes one again once another is deleted', async () => {
    const server = await start({ http: { tokens, 'max-api-tokens': 2 } });
    expect((await create(server, 'one')).status).toBe(201);
    expect((await create(server, 'two')).status).toBe(201);
    const refused = await create(server, 'three');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toBe(
      'Too many API tokens: http.max-api-tokens is 2; delete one first',
    );
    expect(
      (
        await server.request('/api/v1/tokens/one', {
          method: 'DELETE',
          headers: { authorization: admin.authorization },
        })
      ).status,
    ).toBe(200);
    expect((await create(server, 'three')).status).toBe(201);
  });
});

describe.skipIf(!canMountTmpfs())('a token created on a full disk (needs permission to mount a tmpfs)', () => {
  it('is refused with 507, stored nowhere, and the server goes on', async () => {
    const dataDir = tmpfsDataDir('8m');
    const server = await start({ http: { tokens } }, dataDir);
    fillDisk(dataDir);
    // SQLite may still have room in pages it holds: the first writes can succeed; one soon cannot.
    let answer: Response | undefined;
    let name = '';
    for (let i = 0; i < 500; i++) {
      name = `t${i}`;
      answer = await create(server, name);
      if (answer.status !== 201) break;
    }
    expect(answer?.status).toBe(507);
    expect(((await answer?.json()) as { message: string }).message).toMatch(
      /^Insufficient storage: the disk of the data directory is full; nothing was written/,
    );
    const listed = (
      (await (await server.request('/api/v1/tokens', { headers: admin })).json()) as { tokens: { name: string }[] }
    ).tokens.map((token) => token.name);
    expect(listed).not.toContain(name);
    expect((await server.request('/healthz', { headers: { authorization: admin.authorization } })).status).toBe(200);
    rmSync(join(dataDir, 'fill'));
    const again = await create(server, name);
    expect(again.status, await again.text()).toBe(201);
  }, 60_000);
});
