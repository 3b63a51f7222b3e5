/**
 * Bearer tokens (docs/http-api.md, "Credentials"): those of `http.tokens` and those created through the API,
 * kept as the SHA-256 of their secret only (in SQLite; in a cluster, in its runtime state). Both are held in memory by
 * their digest, so that a request costs one hash and one map look-up.
 */
import { createHash, randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { LocalRows, StateCollection, StateKind } from '../common/runtime-state.ts';
import type { Db } from '../db/client.ts';
import { apiTokens } from '../db/schema.ts';
import { SCOPES, type Scope } from './scopes.ts';
import { type ConfigToken, TOKEN_NAME } from './settings.ts';

export interface TokenInfo {
  name: string;
  scopes: Scope[];
  /** Seconds since the epoch; absent for config tokens. */
  created?: number;
  source: 'config' | 'api';
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** A new secret: 32 random bytes, base64url (43 characters, safe in a URL and a header). */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export class TokenConflictError extends Error {}
export class TokenLimitError extends Error {}

/** An API token as kept: its SHA-256 only, never the secret. */
export interface StoredToken {
  name: string;
  sha256: string;
  scopes: Scope[];
  createdAtS: number;
}

/** The kind of runtime state of API tokens (the same on every node of a cluster), its rows in `api_tokens`. */
export function tokenKind(db: Db): StateKind<StoredToken> {
  return { name: 'api-tokens', parse: parseToken, rows: tokenRows(db) };
}

/** A stored or replicated token, checked as the API checks one: whoever writes the bus could add a token. */
function parseToken(value: unknown): StoredToken {
  if (typeof value !== 'object' || value === null) throw new Error('a token must be an object');
  const { name, sha256, scopes, createdAtS } = value as Record<string, unknown>;
  if (typeof name !== 'string' || !TOKEN_NAME.test(name)) throw new Error('name: not a token name');
  if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) throw new Error('sha256: not a SHA-256 in hex');
  if (
    !Array.isArray(scopes) ||
    scopes.length === 0 ||
    !scopes.every((scope) => (SCOPES as readonly unknown[]).includes(scope))
  )
    throw new Error(`scopes: not a list of ${SCOPES.join(', ')}`);
  if (!Number.isSafeInteger(createdAtS) || (createdAtS as number) < 0) throw new Error('createdAtS: not a time');
  return { name, sha256, scopes: [...new Set(scopes as Scope[])], createdAtS: createdAtS as number };
}

function tokenRows(db: Db): LocalRows<StoredToken> {
  const write = (token: StoredToken) =>
    db
      .insert(apiTokens)
      .values(token)
      .onConflictDoUpdate({ target: apiTokens.name, set: { sha256: token.sha256, scopes: token.scopes } })
      .run();
  return {
    load: () =>
      db
        .select()
        .from(apiTokens)
        .all()
        .map((row) => [row.name, row] as const),
    save: (_name, token) => {
      // A digest is unique: a row of another name holding it (a token replaced elsewhere) gives way.
      db.delete(apiTokens).where(eq(apiTokens.sha256, token.sha256)).run();
      write(token);
    },
    remove: (name) => db.delete(apiTokens).where(eq(apiTokens.name, name)).run(),
    replaceAll: (entries) =>
      db.transaction((tx) => {
        tx.delete(apiTokens).run();
        for (const token of entries.values()) tx.insert(apiTokens).values(token).run();
      }),
  };
}

/**
 * The tokens of the config file and of the API. API tokens are runtime state (src/common/runtime-state.ts): in a
 * cluster a token made on one node works on every node, and one deleted stops working everywhere as soon as the
 * change reaches them (docs/cluster.md, "Runtime state").
 */
export class TokenStore {
  private readonly configByDigest = new Map<string, TokenInfo>();
  private readonly configByName = new Map<string, TokenInfo>();
  /** API tokens by digest, kept in step with the collection (changes made here or on another node). */
  private readonly apiByDigest = new Map<string, TokenInfo>();
  private readonly digestOf = new Map<string, string>();

  constructor(
    private readonly collection: StateCollection<StoredToken>,
    configTokens: readonly ConfigToken[],
    /** `http.max-api-tokens`. */
    private readonly maxApiTokens: number,
  ) {
    for (const { name, sha256, scopes } of configTokens) {
      const info: TokenInfo = { name, scopes, source: 'config' };
      this.configByDigest.set(sha256, info);
      this.configByName.set(name, info);
    }
    for (const [name, token] of collection.entries()) this.remember(name, token);
    collection.onChange((name, token) => this.remember(name, token));
  }

  /** The token whose secret has this SHA-256 (hex), if any. */
  find(digest: string): TokenInfo | undefined {
    const info = this.configByDigest.get(digest) ?? this.apiByDigest.get(digest);
    // A name of the config file wins over an API token of the same name (the config is what the operator wrote).
    if (info?.source === 'api' && this.configByName.has(info.name)) return undefined;
    return info;
  }

  list(): TokenInfo[] {
    const api = [...this.apiByDigest.values()].filter((info) => !this.configByName.has(info.name));
    return [...this.configByName.values(), ...api].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Creates an API token and answers its secret, which nothing keeps; resolves once it is durable. */
  async create(name: string, scopes: Scope[]): Promise<{ secret: string; info: TokenInfo }> {
    if (this.configByName.has(name)) throw new TokenConflictError(`Token ${name} already exists (in http.tokens)`);
    if (this.collection.get(name) !== undefined)
      throw new TokenConflictError(`Token ${name} already exists (created through the API)`);
    if (this.collection.size >= this.maxApiTokens)
      throw new TokenLimitError(`Too many API tokens: http.max-api-tokens is ${this.maxApiTokens}; delete one first`);
    const secret = newSecret();
    const token: StoredToken = {
      name,
      sha256: sha256Hex(secret),
      scopes: [...new Set(scopes)],
      createdAtS: Math.floor(Date.now() / 1000),
    };
    await this.collection.put(name, token);
    return { secret, info: infoOf(token) };
  }

  /** false when no such token; a TokenConflictError for a token of the config file. */
  async delete(name: string): Promise<boolean> {
    if (this.configByName.has(name))
      throw new TokenConflictError(`Token ${name} comes from http.tokens in the config file: remove it there`);
    if (this.collection.get(name) === undefined) return false;
    return this.collection.delete(name);
  }

  private remember(name: string, token: StoredToken | undefined): void {
    const before = this.digestOf.get(name);
    if (before !== undefined) this.apiByDigest.delete(before);
    this.digestOf.delete(name);
    if (token === undefined) return;
    this.apiByDigest.set(token.sha256, infoOf(token));
    this.digestOf.set(name, token.sha256);
  }
}

function infoOf(token: StoredToken): TokenInfo {
  return { name: token.name, scopes: token.scopes, created: token.createdAtS, source: 'api' };
}
