/**
 * The database's one setting, `database-cache-size`: the main connection's page cache. SQLite's own default is
 * 2 MiB; better-sqlite3 builds with 16 MB, and a cache that holds the whole database grows with it, so a small
 * deployment's RSS grew by the size of its history. The pages the cache misses are read from the OS's page cache
 * (docs/performance.md, "SQLite's page cache").
 */
import { Type } from '@sinclair/typebox';

export const DEFAULT_DATABASE_CACHE_BYTES = 2 * 1024 * 1024;

export const DatabaseCacheSizeSchema = Type.Integer({ minimum: 262_144 });
