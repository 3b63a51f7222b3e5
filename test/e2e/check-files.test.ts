/**
 * Files named by checks (`cacert`, `cert`, `key`) against the real server (docs/hardening.md, "Files named by
 * checks"): from the API only under `healthchecks.api-files-dir`, symlinks resolved; every such file, the config
 * file's too, a regular file of at most 1 MiB read within the check's timeout. A FIFO, `/dev/zero` or a directory
 * neither stalls the process nor fills its memory.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ROOT } from '../../bin/build.mjs';
import { ensureBundle, makeDataDir, startServer, type TestServer } from '../helpers/server.ts';
import {
  createTestPki,
  startHttpTarget,
  startTlsTarget,
  type HttpTarget,
  type TestPki,
  type TlsTarget,
} from '../helpers/targets.ts';

let pki: TestPki;
let tls: TlsTarget;
let http: HttpTarget;
/** Holds a FIFO, a directory, a 2 MiB file and a valid CA outside any api-files-dir. */
let outside: string;
/** `healthchecks.api-files-dir` of the confined server. */
let filesDir: string;
let open: TestServer;
let confined: TestServer;

const mkfifo = (path: string) => execFileSync('mkfifo', [path]);

/** Runs `vigie serve` on `config` until it exits (killed after 15 s): for configs that must not start. */
async function serveUntilExit(config: Record<string, unknown>): Promise<{ code: number | null; output: string }> {
  await ensureBundle();
  const dataDir = makeDataDir();
  const file = join(dataDir, 'vigie.yaml');
  writeFileSync(file, stringify({ 'data-dir': dataDir, http: { host: '127.0.0.1', port: 0 }, ...config }));
  const child = spawn(process.execPath, [join(ROOT, 'bin/vigie.js'), 'serve', '--config', file], { stdio: 'pipe' });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(killer);
  return { code, output };
}

function files(): void {
  outside = mkdtempSync(join(tmpdir(), 'vigie-files-out-'));
  mkfifo(join(outside, 'fifo.pem'));
  mkdirSync(join(outside, 'dir.pem'));
  writeFileSync(join(outside, 'big.pem'), Buffer.alloc(2 * 1024 * 1024, 'A'));
  filesDir = mkdtempSync(join(tmpdir(), 'vigie-files-in-'));
  copyFileSync(pki.ca, join(filesDir, 'ca.pem'));
  symlinkSync(join(filesDir, 'ca.pem'), join(filesDir, 'ca-link.pem'));
  symlinkSync(pki.ca, join(filesDir, 'escape.pem'));
  mkfifo(join(filesDir, 'fifo.pem'));
  mkdirSync(join(filesDir, 'sub.pem'));
  writeFileSync(join(filesDir, 'big.pem'), Buffer.alloc(1024 * 1024 + 1, 'A'));
}

const tlsCheck = (name: string, cacert: string) => ({
  name,
  target: 'localhost',
  port: tls.port,
  cacert,
  interval: '1s',
  timeout: '1s',
});

beforeAll(async () => {
  pki = createTestPki();
  [tls, http] = await Promise.all([
    startTlsTarget(pki.server),
    startHttpTarget({ handler: (_request, response) => response.end('ok') }),
  ]);
  files();
  // One at a time: a server that failed to start is not left running by the other's failure.
  open = await startServer({ config: { 'tls-checks': [tlsCheck('cfg-ok', pki.ca)] } });
  confined = await startServer({ config: { healthchecks: { 'api-files-dir': filesDir } } });
});

afterAll(async () => {
  await Promise.all([open?.kill9(), confined?.kill9(), tls?.close(), http?.close()]);
});

async function post(server: TestServer, kind: string, body: unknown) {
  const response = await server.request(`/api/v1/healthcheck/${kind}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as { message: string; result?: { message: string } },
  };
}

const oneOffTls = (cacert: string, extra: Record<string, unknown> = {}) => ({
  name: 'one-off-tls',
  target: 'localhost',
  port: tls.port,
  timeout: '2s',
  'one-off': true,
  cacert,
  ...extra,
});

describe('files of the config file', () => {
  const cases = () =>
    [
      ['fifo', join(outside, 'fifo.pem'), `${join(outside, 'fifo.pem')}: is not a regular file`],
      ['zero', '/dev/zero', '/dev/zero: is not a regular file'],
      ['dir', join(outside, 'dir.pem'), `${join(outside, 'dir.pem')}: is not a regular file`],
      ['big', join(outside, 'big.pem'), `${join(outside, 'big.pem')}: is 2097152 bytes, more than the limit of 1 MiB`],
    ] as const;

  it('a FIFO, /dev/zero, a directory or a file over 1 MiB fail the start at once, naming the check', async () => {
    for (const [name, cacert, problem] of cases()) {
      const started = performance.now();
      const { code, output } = await serveUntilExit({ 'tls-checks': [tlsCheck(`cfg-${name}`, cacert)] });
      expect(code, output).toBe(1);
      expect(output).toContain(
        `tls-checks[0]: Fail to initialize healthcheck cfg-${name}: Fail to load the ca certificate: ${problem}`,
      );
      expect(performance.now() - started).toBeLessThan(15_000);
    }
  });

  it('a reload naming one is refused whole; the running checks go on', async () => {
    for (const [name, cacert, problem] of cases()) {
      open.writeConfig({ 'tls-checks': [tlsCheck('cfg-ok', pki.ca), tlsCheck(`cfg-${name}`, cacert)] });
      open.process.kill('SIGHUP');
      await open.waitForLog(
        new RegExp(`reload of healthchecks refused: .*${problem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
      );
    }
    const response = await open.request('/api/v1/result/cfg-ok');
    expect(await response.json()).toMatchObject({ success: true });
    expect((await open.request('/api/v1/healthcheck/cfg-zero')).status).toBe(404);
  });
});

describe('files of API checks without healthchecks.api-files-dir', () => {
  it('refuses cacert, cert and key with a 400 naming the field, in one-off, periodic and bulk bodies', async () => {
    const refused = await post(open, 'tls', oneOffTls(pki.ca));
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe(
      `Invalid healthcheck configuration: cacert: ${pki.ca} cannot be read by an API check: healthchecks.api-files-dir is not set`,
    );
    const client = await post(open, 'http', {
      name: 'client-cert',
      target: '127.0.0.1',
      port: http.port,
      interval: '10s',
      timeout: '1s',
      'valid-status': [200],
      cert: pki.client.cert,
      key: pki.client.key,
    });
    expect(client.status).toBe(400);
    expect(client.body.message).toMatch(
      /^Invalid healthcheck configuration: cert: .* healthchecks\.api-files-dir is not set$/,
    );
    const bulk = await open.request('/api/v1/healthcheck/bulk', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        'grpc-checks': [{ name: 'g', target: '127.0.0.1', port: 1, interval: '10s', timeout: '1s', cacert: pki.ca }],
      }),
    });
    expect(bulk.status).toBe(400);
    expect(((await bulk.json()) as { message: string }).message).toContain('check "g" (grpc-checks[0]): cacert: ');
    expect((await (await open.request('/api/v1/healthcheck')).json()) as { result: unknown[] }).toMatchObject({
      result: expect.not.arrayContaining([expect.objectContaining({ name: 'g' })]),
    });
  });

  it('four one-off checks on a FIFO are refused at once, and the thread pool still resolves names', async () => {
    const started = performance.now();
    const answers = await Promise.all(
      [1, 2, 3, 4].map((i) => post(open, 'tls', oneOffTls(join(outside, 'fifo.pem'), { name: `fifo-${i}` }))),
    );
    expect(answers.map((answer) => answer.status)).toEqual([400, 400, 400, 400]);
    expect(performance.now() - started).toBeLessThan(2_000);
    const after = performance.now();
    const probe = await post(open, 'http', {
      name: 'after-fifo',
      target: 'localhost',
      port: http.port,
      timeout: '2s',
      'one-off': true,
      'valid-status': [200],
    });
    expect(probe.status, JSON.stringify(probe.body)).toBe(201);
    expect(performance.now() - after).toBeLessThan(2_000);
  });
});

describe('files of API checks under healthchecks.api-files-dir', () => {
  it('accepts a regular file inside it, or a link to one inside it', async () => {
    for (const file of ['ca.pem', 'ca-link.pem']) {
      const answer = await post(confined, 'tls', oneOffTls(join(filesDir, file)));
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    }
  });

  it('refuses a path outside it, a link out of it, a FIFO, a directory and a file over 1 MiB, naming the field', async () => {
    const cases: [string, string][] = [
      [pki.ca, `cacert: ${pki.ca} is outside healthchecks.api-files-dir (${filesDir})`],
      [join(filesDir, '..', 'x.pem'), `cacert: ${join(filesDir, '..', 'x.pem')} is outside healthchecks.api-files-dir`],
      [
        join(filesDir, 'escape.pem'),
        `cacert: ${join(filesDir, 'escape.pem')} resolves to ${pki.ca}, outside healthchecks.api-files-dir`,
      ],
      [join(filesDir, 'fifo.pem'), `cacert: ${join(filesDir, 'fifo.pem')}: is not a regular file`],
      [join(filesDir, 'sub.pem'), `cacert: ${join(filesDir, 'sub.pem')}: is not a regular file`],
      [
        join(filesDir, 'big.pem'),
        `cacert: ${join(filesDir, 'big.pem')}: is 1048577 bytes, more than the limit of 1 MiB`,
      ],
      [join(filesDir, 'missing.pem'), `cacert: ${join(filesDir, 'missing.pem')}: no such file`],
    ];
    for (const [cacert, message] of cases) {
      const answer = await post(confined, 'tls', oneOffTls(cacert));
      expect(answer.status, cacert).toBe(400);
      expect(answer.body.message, cacert).toContain(`Invalid healthcheck configuration: ${message}`);
    }
  });
});
