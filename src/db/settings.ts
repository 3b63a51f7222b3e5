/**
 * The database's one setting, `database-cache-size`: the main connection's page cache. SQLite's own default is
 * 2 MiB; better-sqlite3 builds with 16 MB, and a cache that holds the whole database grows with it, so a small
 * deployment's RSS grew by the size of its history. The pages the cache misses are read from the OS's page cache
 * (docs/performance.md, "SQLite's page cache").
 */
import { Type } from '@sinclair/typebox';

export const DEFAULT_DATABASE_CACHE_BYTES = 2 * 1024 * 1024;

/** From 256 KiB to 16 GiB: SQLite takes the size as a whole number of KiB. */
export const DatabaseCacheSizeSchema = Type.Integer({ minimum: 262_144, maximum: 17_179_869_184 });
