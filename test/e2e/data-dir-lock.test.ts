/**
 * One process per data directory (docs/durability.md "One process per data directory"): `<data-dir>/lock` is held
 * while serving, a second `vigie serve` on the directory exits 1 naming the lock and the holder's PID, a lock left
 * by `kill -9` (or naming a PID now used by another process) does not block a restart, a SIGTERM removes it, and
 * of two servers started at once exactly one serves.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { makeDataDir, runCli, startServer, type TestServer } from '../helpers/server.ts';
import { canMountTmpfs, fillDisk, tmpfsDataDir, unmountAll } from '../helpers/tmpfs.ts';

const running: TestServer[] = [];
afterEach(async () => {
  for (const server of running.splice(0)) await server.kill9();
});

/** Starts a server; a server that serves is kept for cleanup, one that exits before serving gives its error. */
async function start(dataDir: string): Promise<TestServer | Error> {
  // A start may watch a lock for 10 s before it takes it over, on a busy machine.
  const result = await startServer({ dataDir, readyTimeoutMs: 60_000 }).catch((error: unknown) => error as Error);
  if (!(result instanceof Error)) running.push(result);
  return result;
}

const lockOf = (dataDir: string) => join(dataDir, 'lock');

it('refuses a second server on the data directory, naming the lock file and the PID that holds it', async () => {
  const first = await start(makeDataDir());
  if (first instanceof Error) throw first;
  const held = JSON.parse(readFileSync(lockOf(first.dataDir), 'utf8')) as { pid: number };
  expect(held.pid).toBe(first.process.pid);

  const second = await start(first.dataDir);
  expect(second).toBeInstanceOf(Error);
  const message = (second as Error).message;
  expect(message).toContain('exited with code 1');
  expect(message).toContain(lockOf(first.dataDir));
  expect(message).toContain(`PID ${first.process.pid}`);

  // `migrate` writes the database too: it is refused the same way while a server holds the directory.
  writeFileSync(join(first.dataDir, 'migrate.yaml'), `data-dir: ${first.dataDir}\n`);
  const migrate = await runCli(['migrate', '--config', join(first.dataDir, 'migrate.yaml')]);
  expect(migrate.code).toBe(1);
  expect(migrate.stderr).toContain(`PID ${first.process.pid}`);

  // The first one is untouched and still serving.
  expect((await first.request('/healthz')).status).toBe(200);
}, 120_000);

it('exits 1 naming the lock file when it cannot be used (a directory in its place)', async () => {
  const dataDir = makeDataDir();
  mkdirSync(lockOf(dataDir));
  const refused = await start(dataDir);
  expect(refused).toBeInstanceOf(Error);
  const message = (refused as Error).message;
  expect(message).toContain('exited with code 1');
  expect(message).toContain(`cannot use ${lockOf(dataDir)}`);
  expect(message).toContain('EISDIR');
}, 60_000);

it('restarts after a kill -9 on the lock it left, and a SIGTERM removes the lock', async () => {
  const first = await start(makeDataDir());
  if (first instanceof Error) throw first;
  await first.kill9();
  expect(existsSync(lockOf(first.dataDir))).toBe(true);

  const restarted = await start(first.dataDir);
  if (restarted instanceof Error) throw restarted;
  expect(JSON.parse(readFileSync(lockOf(first.dataDir), 'utf8'))).toMatchObject({ pid: restarted.process.pid });
  expect(await restarted.stop()).toBe(0);
  expect(existsSync(lockOf(first.dataDir))).toBe(false);
}, 120_000);

it('takes over a lock whose PID now belongs to another process (PID reuse)', async () => {
  const first = await start(makeDataDir());
  if (first instanceof Error) throw first;
  const left = JSON.parse(readFileSync(lockOf(first.dataDir), 'utf8')) as Record<string, unknown>;
  await first.kill9();
  // The same lock, as if its PID had been given since to this test's own process (alive, not the holder).
  writeFileSync(lockOf(first.dataDir), JSON.stringify({ ...left, pid: process.pid }));

  const restarted = await start(first.dataDir);
  if (restarted instanceof Error) throw restarted;
  expect(restarted.logs.join('\n')).toContain(`PID ${process.pid}`);
}, 120_000);

it('is not blocked by a takeover guard that a process killed in the middle of its takeover left', async () => {
  const first = await start(makeDataDir());
  if (first instanceof Error) throw first;
  await first.kill9();
  writeFileSync(join(first.dataDir, 'lock.takeover'), 'left by a process killed while taking over');

  const restarted = await start(first.dataDir);
  if (restarted instanceof Error) throw restarted;
  expect(existsSync(join(first.dataDir, 'lock.takeover'))).toBe(false);
  expect(JSON.parse(readFileSync(lockOf(first.dataDir), 'utf8'))).toMatchObject({ pid: restarted.process.pid });
}, 120_000);

it('takes over a lock it cannot check (another host or PID namespace) only once nobody refreshes it', async () => {
  const dataDir = makeDataDir();
  const foreign = { pid: 1, host: 'elsewhere', boot: 'another-boot', pidNamespace: 'pid:[1]', start: 1 };
  writeFileSync(lockOf(dataDir), JSON.stringify(foreign));
  // A holder elsewhere refreshes the lock's modification time: the newcomer sees it and gives up.
  const refresh = setInterval(() => utimesSync(lockOf(dataDir), new Date(), new Date()), 1_000);
  const refused = await start(dataDir);
  clearInterval(refresh);
  expect(refused).toBeInstanceOf(Error);
  expect((refused as Error).message).toContain('PID 1');

  // Nobody refreshes it any more: the next start waits for it to stay quiet, then takes it over.
  const started = performance.now();
  const taken = await start(dataDir);
  if (taken instanceof Error) throw taken;
  expect(performance.now() - started).toBeGreaterThan(20_000);
  expect(JSON.parse(readFileSync(lockOf(dataDir), 'utf8'))).toMatchObject({ pid: taken.process.pid });
}, 180_000);

it('serves exactly one of two servers started at once, on a fresh directory and on a stale lock', async () => {
  for (const stale of [false, true]) {
    const dataDir = makeDataDir();
    if (stale) {
      const killed = await start(dataDir);
      if (killed instanceof Error) throw killed;
      await killed.kill9();
      running.splice(0);
    }
    const results = await Promise.all([start(dataDir), start(dataDir)]);
    const serving = results.filter((result) => !(result instanceof Error));
    expect(serving, results.map(String).join('\n')).toHaveLength(1);
    const refused = results.find((result) => result instanceof Error) as Error;
    expect(refused.message).toContain(`PID ${(serving[0] as TestServer).process.pid}`);
    for (const server of running.splice(0)) await server.kill9();
  }
}, 180_000);

describe.skipIf(!canMountTmpfs())('on a full disk (needs permission to mount a tmpfs)', () => {
  afterAll(unmountAll);

  it('still takes the lock, which a second server respects, and a SIGTERM removes it', async () => {
    const dataDir = tmpfsDataDir('8m');
    const first = await start(dataDir);
    if (first instanceof Error) throw first;
    // Killed, as a server on a disk that fills would be: its database's -wal and -shm stay, as SQLite needs them to
    // open.
    await first.kill9();
    // The stale lock is removed as a takeover does; the disk is then full before the new lock is written.
    rmSync(lockOf(dataDir));
    fillDisk(dataDir);

    // The lock's file is made, but its holder cannot be written into it: it is an empty lock, kept alive by its
    // refresh.
    const restarted = await start(dataDir);
    if (restarted instanceof Error) throw restarted;
    expect(readFileSync(lockOf(dataDir), 'utf8')).toBe('');
    expect(restarted.logs.join('\n')).toContain('no space left');
    const second = await start(dataDir);
    expect(second).toBeInstanceOf(Error);
    expect((second as Error).message).toContain(lockOf(dataDir));
    expect((await restarted.request('/healthz')).status).toBe(200);
    expect(await restarted.stop(), restarted.logs.join('\n')).toBe(0);
    expect(existsSync(lockOf(dataDir))).toBe(false);
  }, 120_000);
});
