import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../../src/db/client.ts';
import { DEFAULT_DATABASE_CACHE_BYTES } from '../../src/db/settings.ts';
import { startService } from '../../src/process/lifecycle.ts';

const dirs: string[] = [];
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigie-client-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `cache_size` as SQLite reports it: negative in KiB. */
const cacheKib = (db: ReturnType<typeof openDatabase>) =>
  -(db.$client.pragma('cache_size', { simple: true }) as number);

describe('the main connection page cache', () => {
  it('is 1 MiB by default, not better-sqlite3 16 MB, and set in KiB otherwise', () => {
    expect(DEFAULT_DATABASE_CACHE_BYTES).toBe(1024 * 1024);
    const file = join(dataDir(), 'vigie.db');
    const byDefault = openDatabase(file);
    expect(cacheKib(byDefault)).toBe(1024);
    closeDatabase(byDefault);
    const larger = openDatabase(file, 8 * 1024 * 1024 + 100);
    expect(cacheKib(larger)).toBe(8192);
    closeDatabase(larger);
  });

  it('is the one the service configures with database-cache-size', async () => {
    const dir = dataDir();
    const configFile = join(dir, 'vigie.yaml');
    writeFileSync(configFile, `data-dir: ${dir}\nhttp: {host: 127.0.0.1, port: 0}\ndatabase-cache-size: 4194304\n`);
    let seen = 0;
    const service = await startService(configFile, pino({ level: 'silent' }), [
      ({ db }) => {
        seen = cacheKib(db);
        return null;
      },
    ]);
    await service.stop();
    expect(seen).toBe(4096);
  });
});
