/**
 * Sign-in sessions (docs/http-api.md "Sessions", docs/hardening.md "Sessions, CSRF and origin"): what the console
 * signs in to, so that a browser holds a cookie rather than a password or a token.
 *
 * - A session id is 32 random bytes (base64url), known to the browser only: the store keeps its SHA-256, the key of
 *   the `sessions` kind of runtime state (src/common/runtime-state.ts), so a session made on one node is valid on
 *   every node that shares the state, and a copy of the database opens none.
 * - Its CSRF token is derived from the id (an HMAC keyed by it): bound to the session, stored nowhere, and answered
 *   again to whoever holds the cookie (`GET /api/v1/session`), which a page of another origin cannot read.
 * - A session is valid until `http.session-ttl` after its sign-in, and while what it was made with still is: the
 *   token (looked up by its digest, with the same name and scopes), or the basic-auth user and password (an HMAC of
 *   the session's key under the password). Deleting the token, or changing the password, ends its sessions at their
 *   next use. Ended sessions are removed when used, and expired ones by a sweep, a bounded number each time.
 * - At most `http.max-sessions`: a sign-in past the cap ends the session closest to its expiry (the oldest).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { StateCollection, StateKind } from '../common/runtime-state.ts';
import { SCOPES, type Scope } from './scopes.ts';
import { sha256Hex, type TokenStore } from './tokens.ts';

export const SESSION_COOKIE = 'vigie_session';

/** Who signed in: `basic:<user>` with the scope `admin`, or `token:<name>` with the token's scopes. */
export interface Principal {
  name: string;
  scopes: readonly Scope[];
}

/** What a sign-in was made with, checked again at every use of its session. */
export type SignInCredential = { token: string } | { basicPassword: string };

const StoredSessionSchema = Type.Object({
  principal: Type.String({ minLength: 1, maxLength: 512 }),
  scopes: Type.Array(Type.Union(SCOPES.map((scope) => Type.Literal(scope))), { maxItems: SCOPES.length }),
  /** The SHA-256 (hex) of the token the session was made with. */
  token: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
  /** HMAC-SHA256 (hex) of the session's key under the basic-auth password it was made with. */
  basic: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
  createdMs: Type.Integer({ minimum: 0 }),
  expiresMs: Type.Integer({ minimum: 0 }),
});
type StoredSession = Static<typeof StoredSessionSchema>;

/** The `sessions` kind of runtime state: what comes from the disk or the bus is checked as an API body is. */
export const SESSION_KIND: StateKind<StoredSession> = {
  name: 'sessions',
  parse(value) {
    if (!Value.Check(StoredSessionSchema, value)) {
      const error = Value.Errors(StoredSessionSchema, value).First();
      throw new Error(`not a session: ${error?.path ?? ''} ${error?.message ?? ''}`.trim());
    }
    const session = value as StoredSession;
    if ((session.token === undefined) === (session.basic === undefined))
      throw new Error('not a session: it must be made with a token or with basic auth');
    return session;
  },
};

/** Why a session cookie opens nothing. */
export type SessionRefusal = 'unknown' | 'expired' | 'revoked';

/** A session in use: its cookie value, who it speaks for, until when. */
export interface ActiveSession extends Principal {
  id: string;
  expiresMs: number;
}

export interface SessionOptions {
  collection: StateCollection<StoredSession>;
  tokens: TokenStore;
  basicAuth: { username: string; password: string } | undefined;
  ttlMs: number;
  maxSessions: number;
  registry: Registry;
  warn: (message: string) => void;
  /** The clock, for tests. */
  now?: () => number;
}

/** Expired sessions removed per sweep: a sweep is bounded work whatever the number of sessions. */
const SWEEP_BATCH = 1_000;
const SWEEP_INTERVAL_MS = 10 * 60_000;

/** The key a session is stored under: the SHA-256 of its id, never the id. */
function keyOf(id: string): string {
  return sha256Hex(id);
}

function hmacHex(key: string, message: string): string {
  return createHmac('sha256', key).update(message).digest('hex');
}

/** The CSRF token of a session: an HMAC keyed by its id, so that it is bound to it and stored nowhere. */
export function csrfOf(id: string): string {
  return createHmac('sha256', id).update('vigie-csrf').digest('base64url');
}

/** Whether `presented` is the CSRF token of session `id`, compared in constant time. */
export function csrfMatches(id: string, presented: string): boolean {
  const expected = createHash('sha256').update(csrfOf(id)).digest();
  return timingSafeEqual(expected, createHash('sha256').update(presented).digest());
}

export class Sessions {
  private readonly collection: StateCollection<StoredSession>;
  private readonly refusals: Counter<'reason'>;
  private readonly evicted: Counter<'reason'>;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly now: () => number;

  constructor(private readonly options: SessionOptions) {
    this.collection = options.collection;
    this.now = options.now ?? Date.now;
    this.refusals = new Counter({
      name: 'http_session_refusals_total',
      help: 'Requests with a session cookie refused, by reason: unknown, expired, revoked (its token deleted or its password changed), csrf (X-Vigie-CSRF missing or wrong), origin (Origin or Referer missing or of another origin).',
      labelNames: ['reason'],
      registers: [options.registry],
    });
    this.evicted = new Counter({
      name: 'http_sessions_evicted_total',
      help: 'Sessions removed other than by their sign-out, by reason: expired, revoked, cap (http.max-sessions reached by a sign-in).',
      labelNames: ['reason'],
      registers: [options.registry],
    });
    const collection = this.collection;
    new Gauge({
      name: 'http_sessions',
      help: 'Sign-in sessions held (http.max-sessions at most).',
      registers: [options.registry],
      collect() {
        this.set(collection.size);
      },
    });
    this.timer = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  /** Counts a refusal of a request that came with a session cookie (`reason` as the metric's label). */
  refused(reason: SessionRefusal | 'csrf' | 'origin'): void {
    this.refusals.inc({ reason });
  }

  /** A new session for `principal`; resolves once it is stored (durable wherever the runtime state lives). */
  async create(principal: Principal, credential: SignInCredential): Promise<ActiveSession> {
    const nowMs = this.now();
    this.sweep(nowMs);
    if (this.collection.size >= this.options.maxSessions) await this.evictOldest(nowMs);
    const id = randomBytes(32).toString('base64url');
    const key = keyOf(id);
    const expiresMs = nowMs + this.options.ttlMs;
    await this.collection.put(key, {
      principal: principal.name,
      scopes: [...principal.scopes],
      ...('token' in credential ? { token: credential.token } : { basic: hmacHex(credential.basicPassword, key) }),
      createdMs: nowMs,
      expiresMs,
    });
    return { id, name: principal.name, scopes: principal.scopes, expiresMs };
  }

  /** The session of a cookie value, valid now; else why not (an ended session's row is removed). */
  resolve(id: string): ActiveSession | SessionRefusal {
    const key = keyOf(id);
    const stored = this.collection.get(key);
    if (stored === undefined) return 'unknown';
    let ended: 'expired' | 'revoked' | null = null;
    if (stored.expiresMs <= this.now()) ended = 'expired';
    else if (!this.stillValid(key, stored)) ended = 'revoked';
    if (ended !== null) {
      this.evicted.inc({ reason: ended });
      this.remove(key);
      return ended;
    }
    return { id, name: stored.principal, scopes: stored.scopes, expiresMs: stored.expiresMs };
  }

  /** Signs a session out. */
  async end(id: string): Promise<void> {
    await this.collection.delete(keyOf(id));
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** Whether the credential a session was made with is still there, with the same name and scopes. */
  private stillValid(key: string, stored: StoredSession): boolean {
    if (stored.token !== undefined) {
      const token = this.options.tokens.find(stored.token);
      return (
        token !== undefined &&
        `token:${token.name}` === stored.principal &&
        token.scopes.length === stored.scopes.length &&
        token.scopes.every((scope) => stored.scopes.includes(scope))
      );
    }
    const basic = this.options.basicAuth;
    if (basic === undefined || stored.basic === undefined || `basic:${basic.username}` !== stored.principal)
      return false;
    const expected = Buffer.from(hmacHex(basic.password, key), 'hex');
    return timingSafeEqual(expected, Buffer.from(stored.basic, 'hex'));
  }

  /** Removes up to SWEEP_BATCH expired sessions. */
  private sweep(nowMs = this.now()): void {
    let removed = 0;
    for (const [key, stored] of this.collection.entries()) {
      if (removed >= SWEEP_BATCH) break;
      if (stored.expiresMs > nowMs) continue;
      this.evicted.inc({ reason: 'expired' });
      this.remove(key);
      removed++;
    }
  }

  /** Past the cap: ends the session closest to its expiry (one scan: sign-ins are rare). */
  private async evictOldest(nowMs: number): Promise<void> {
    let oldest: [string, StoredSession] | undefined;
    for (const entry of this.collection.entries())
      if (oldest === undefined || entry[1].expiresMs < oldest[1].expiresMs) oldest = entry;
    if (oldest === undefined) return;
    this.evicted.inc({ reason: oldest[1].expiresMs <= nowMs ? 'expired' : 'cap' });
    await this.collection.delete(oldest[0]);
  }

  /** A removal nobody waits for: the session is refused already; a failed write is logged, and retried at its next
   *  use. */
  private remove(key: string): void {
    this.collection.delete(key).catch((error: unknown) => {
      this.options.warn(`a session could not be removed: ${(error as Error).message}`);
    });
  }
}
