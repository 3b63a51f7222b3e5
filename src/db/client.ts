/**
 * Opens the SQLite database: WAL so readers never block the writer, `synchronous=NORMAL` (durable across a
 * process crash, which is what `kill -9` tests; an OS crash may lose the last transactions), a busy timeout
 * so `sqlite3` sessions opened by people do not make writes fail, and foreign keys on.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { type BetterSQLite3Database, drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { MIGRATIONS_DIR } from '../paths.ts';
import { checkDatabase, DatabaseDamagedError } from './integrity.ts';
import { DEFAULT_DATABASE_CACHE_BYTES } from './settings.ts';
import * as schema from './schema.ts';

export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

/**
 * Opens and checks the file (src/db/integrity.ts): a file that is not a database, or one damaged outside derived
 * state, throws DatabaseDamagedError naming the file and docs/durability.md's recovery steps.
 */
export function openDatabase(file: string, cacheBytes = DEFAULT_DATABASE_CACHE_BYTES): Db {
  mkdirSync(dirname(file), { recursive: true });
  const sqlite = new Database(file);
  try {
    sqlite.pragma('journal_mode = WAL');
  } catch (error) {
    sqlite.close();
    const code = (error as { code?: unknown }).code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT')
      throw new DatabaseDamagedError(file, (error as Error).message);
    throw error;
  }
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  // A negative cache_size is in KiB.
  sqlite.pragma(`cache_size = -${Math.floor(cacheBytes / 1024)}`);
  try {
    checkDatabase(sqlite, file);
  } catch (error) {
    sqlite.close();
    throw error;
  }
  return drizzle(sqlite, { schema }) as Db;
}

/** Applies the drizzle-kit migrations committed in `migrations/` (idempotent). */
export function migrateDatabase(db: Db): void {
  migrate(db, { migrationsFolder: MIGRATIONS_DIR });
}

/**
 * Closes the database; returns why its last checkpoint failed, or null. The checkpoint keeps the -wal file small for
 * people who copy the database around; on a full disk it fails, and what the -wal holds is applied by the next open,
 * so the close goes on.
 */
export function closeDatabase(db: Db): string | null {
  let failed: string | null = null;
  try {
    db.$client.pragma('wal_checkpoint(TRUNCATE)');
  } catch (error) {
    failed = (error as Error).message;
  }
  db.$client.close();
  return failed;
}
