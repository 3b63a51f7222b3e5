/**
 * Bearer tokens (docs/http-api.md, "Credentials"): those of `http.tokens` and those created through the API,
 * kept in SQLite as the SHA-256 of their secret only. Both are held in memory by their digest, so that a request
 * costs one hash and one map look-up.
 */
import { createHash, randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { apiTokens } from '../db/schema.ts';
import type { Scope } from './scopes.ts';
import type { ConfigToken } from './settings.ts';

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

export class TokenStore {
  private readonly byDigest = new Map<string, TokenInfo>();
  private readonly byName = new Map<string, { digest: string; info: TokenInfo }>();
  private apiTokens = 0;

  constructor(
    private readonly db: Db,
    configTokens: readonly ConfigToken[],
    /** `http.max-api-tokens`. */
    private readonly maxApiTokens: number,
  ) {
    for (const { name, sha256, scopes } of configTokens) this.remember(sha256, { name, scopes, source: 'config' });
    for (const row of db.select().from(apiTokens).all()) {
      // A name of the config file wins over an API token of the same name (the config is what the operator wrote).
      if (this.byName.has(row.name)) continue;
      this.remember(row.sha256, {
        name: row.name,
        scopes: row.scopes as Scope[],
        created: row.createdAtS,
        source: 'api',
      });
      this.apiTokens++;
    }
  }

  /** The token whose secret has this SHA-256 (hex), if any. */
  find(digest: string): TokenInfo | undefined {
    return this.byDigest.get(digest);
  }

  list(): TokenInfo[] {
    return [...this.byName.values()].map(({ info }) => info).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Creates an API token and answers its secret, which nothing keeps. */
  create(name: string, scopes: Scope[]): { secret: string; info: TokenInfo } {
    if (this.byName.has(name))
      throw new TokenConflictError(
        `Token ${name} already exists (${this.byName.get(name)?.info.source === 'config' ? 'in http.tokens' : 'created through the API'})`,
      );
    if (this.apiTokens >= this.maxApiTokens)
      throw new TokenLimitError(`Too many API tokens: http.max-api-tokens is ${this.maxApiTokens}; delete one first`);
    const secret = newSecret();
    const digest = sha256Hex(secret);
    const info: TokenInfo = {
      name,
      scopes: [...new Set(scopes)],
      created: Math.floor(Date.now() / 1000),
      source: 'api',
    };
    this.db
      .insert(apiTokens)
      .values({ name, sha256: digest, scopes: info.scopes, createdAtS: info.created as number })
      .run();
    this.remember(digest, info);
    this.apiTokens++;
    return { secret, info };
  }

  /** false when no such token; a TokenConflictError for a token of the config file. */
  delete(name: string): boolean {
    const entry = this.byName.get(name);
    if (entry === undefined) return false;
    if (entry.info.source === 'config')
      throw new TokenConflictError(`Token ${name} comes from http.tokens in the config file: remove it there`);
    this.db.delete(apiTokens).where(eq(apiTokens.name, name)).run();
    this.byName.delete(name);
    this.byDigest.delete(entry.digest);
    this.apiTokens--;
    return true;
  }

  private remember(digest: string, info: TokenInfo): void {
    this.byDigest.set(digest, info);
    this.byName.set(info.name, { digest, info });
  }
}
