/**
 * The database's one setting, `database-cache-size`: the main connection's page cache. better-sqlite3 builds with
 * 16 MB, and a cache that holds the whole database grows with it, so a small deployment's RSS grew by the size of
 * its history. 1 MiB, half of SQLite's own default: the pages the cache misses are read from the OS's page cache,
 * which cost no CPU measured at 1,200 or 12,000 checks and held a small deployment 1.3 MB lower
 * (docs/performance.md, "SQLite's page cache").
 */
import { Type } from '@sinclair/typebox';

export const DEFAULT_DATABASE_CACHE_BYTES = 1024 * 1024;

/** From 256 KiB to 16 GiB: SQLite takes the size as a whole number of KiB. */
export const DatabaseCacheSizeSchema = Type.Integer({ minimum: 262_144, maximum: 17_179_869_184 });
