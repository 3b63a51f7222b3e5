/**
 * Who may do what (docs/http-api.md, "Credentials"). When `http.basic-auth` or `http.tokens` is set, every
 * request needs a credential holding the scope its route needs (src/server/scopes.ts): basic auth is `admin`, a
 * bearer token has its scopes. No credential, or a wrong one, is a 401; a credential without the scope a 403
 * naming it. The route families of `http.public` answer anyone. A route may accept a token of its own (a
 * heartbeat check's, `ownTokenRoute`), as a bearer or `?token=`; it opens that route and nothing else. Without
 * basic auth and tokens in the config, the API stays open, as a single node without credentials always was.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { HttpError } from './errors.ts';
import { isApiChange, isProbe, type RouteAccess, routeAccess } from './scopes.ts';
import { admitSession, sessionCookieOf } from './session-guard.ts';
import type { ActiveSession, Principal, Sessions, SignInCredential } from './sessions.ts';
import type { HttpSettings } from './settings.ts';
import { sha256Hex, type TokenStore } from './tokens.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** See `ownTokenRoute`. */
    ownTokenSha256?: (request: FastifyRequest) => string | undefined;
    /** Who a request admitted by its own token is (`heartbeat:<name>`, `ack-link:<id>`); `heartbeat` unless set. */
    ownTokenPrincipal?: 'heartbeat' | 'ack-link';
  }
  interface FastifyRequest {
    /** Who the request was admitted as, once the credentials hook has run (see `principalOf`). */
    principal?: string;
    /** The scopes it was admitted with; unset when the API asks for no credentials (see `holdsScope`). */
    scopes?: readonly string[];
    /** Refused at the failure limit (429): the audit log does not write such rows one by one. */
    authLimited?: true;
    /** The sign-in session the request came with (its cookie), once the credentials hook has admitted it. */
    session?: ActiveSession;
  }
}

/**
 * Who made a request, as the audit log names it: `token:<name>`, `basic:<user>`, `heartbeat:<check>` (a heartbeat
 * check's own token), `cn:<client certificate CN>` (mutual TLS), or `anonymous`.
 */
export function principalOf(request: FastifyRequest): string {
  if (request.principal !== undefined) return request.principal;
  const cn = (request.raw.socket as TLSSocket).getPeerCertificate?.()?.subject?.CN;
  return typeof cn === 'string' && cn !== '' ? `cn:${cn}` : 'anonymous';
}

/**
 * Whether a request holds `scope` (`admin` holds every scope): for what a route's scope does not decide alone, such
 * as a command check among the checks `write` may create. A request of an API that asks for no credentials holds
 * them all, as it always did.
 */
export function holdsScope(request: FastifyRequest, scope: string): boolean {
  const { scopes } = request;
  return scopes === undefined || scopes.includes(scope) || scopes.includes('admin');
}

/** Whether a request presented a credential holding `scope`: on an API without credentials, none did. */
export function authenticatedWith(request: FastifyRequest, scope: string): boolean {
  const { scopes } = request;
  return scopes !== undefined && (scopes.includes(scope) || scopes.includes('admin'));
}

/** Route config of a route that also takes a token of its own: `sha256` answers its digest (hex) for the
 *  request, undefined when the route has none. A heartbeat token holds the `heartbeat` scope; an alert's
 *  acknowledge link (`ack-link`) holds none: it opens its route, nothing else. */
export function ownTokenRoute(
  sha256: (request: FastifyRequest) => string | undefined,
  principal: 'heartbeat' | 'ack-link' = 'heartbeat',
) {
  return { ownTokenSha256: sha256, ownTokenPrincipal: principal };
}

/**
 * Counts wrong credentials per client address in a fixed window (`@fastify/rate-limit`'s store: an LRU of 5,000
 * addresses, IPv6 by /64). Called with `increment: false`, it only reads the address's count.
 */
type FailureLimiter = (
  request: FastifyRequest,
  options?: { increment?: boolean },
) => Promise<{ isAllowed: boolean; remaining?: number; ttlInSeconds?: number }>;

export interface FailureCounting {
  limiter: FailureLimiter;
  failures: { inc(): void };
  limited: { inc(): void };
}

/** Whether requests need credentials: without basic auth and tokens in the config, the API stays open. */
export function needsCredentials(http: HttpSettings): boolean {
  return http.basicAuth !== undefined || http.tokens.length > 0;
}

/** Who a credential speaks for, and what a session made with it must check again at each use. */
interface Admitted {
  principal: Principal;
  credential: SignInCredential;
}

/** Checks user names, passwords and tokens: for the credentials hook and for a sign-in
 *  (src/server/session-routes.ts). */
export interface CredentialCheck {
  /** The basic-auth user and password; or, any user name, a token as the password (how a browser logs in to a
   *  server with tokens only). */
  password(user: string, password: string): Admitted | undefined;
  token(secret: string): Admitted | undefined;
}

export function credentialCheck(http: HttpSettings, tokens: TokenStore): CredentialCheck {
  const basic = http.basicAuth ? basicCheck(http.basicAuth) : null;
  const token = (secret: string): Admitted | undefined => {
    const digest = sha256Hex(secret);
    const info = tokens.find(digest);
    return info && { principal: { name: `token:${info.name}`, scopes: info.scopes }, credential: { token: digest } };
  };
  return {
    password(user, password) {
      if (basic?.({ user, password }))
        return {
          principal: { name: `basic:${http.basicAuth?.username ?? ''}`, scopes: ['admin'] },
          credential: { basicPassword: password },
        };
      return token(password);
    },
    token,
  };
}

export function credentialsHook(
  http: HttpSettings,
  credentials: CredentialCheck,
  tokens: TokenStore,
  counting: FailureCounting,
  sessions: Sessions,
): onRequestAsyncHookHandler {
  const publicFamilies = new Set<string>(http.public);
  // Basic even with tokens only: a browser prompts for nothing else, and takes a token as the password.
  const challenge = { 'WWW-Authenticate': 'Basic realm="vigie", charset="UTF-8"' };
  const { limiter } = counting;
  return async (request) => {
    const path = request.routeOptions.url ?? request.url.split('?')[0] ?? '/';
    if (isProbe(request.method, path)) {
      request.scopes = [];
      return;
    }
    const access = routeAccess(request.method, path);
    // The dashboard's files: whatever comes with the request, nothing to check (src/server/scopes.ts).
    if (access.page === true) {
      request.scopes = [];
      return;
    }
    const open = access.publicAs !== undefined && publicFamilies.has(access.publicAs);
    const header = request.headers.authorization ?? '';
    const bearer = /^Bearer ([A-Za-z0-9._~+/=-]+)$/i.exec(header)?.[1];
    const own = request.routeOptions.config?.ownTokenSha256;
    const query = own ? queryToken(request) : undefined;
    const presented = bearer ?? query;
    // A heartbeat token opens its report URLs even at the failure limit: a cron job behind the NAT of a guesser must
    // not look silent. Such a token is a long random secret (an API token, or a check's own token of 16 characters
    // or more), which answers no guess of a password (docs/hardening.md, "Guessing credentials").
    if (own !== undefined && presented !== undefined) {
      const principal = heartbeatPrincipal(request, presented, own(request), tokens);
      if (principal !== undefined) {
        request.principal = principal.name;
        request.scopes = principal.scopes;
        return;
      }
    }
    // A session cookie, when nothing else is presented. A valid one is not held by the failure limit either: its
    // id is 32 random bytes that no guess finds (docs/hardening.md, "Sessions, CSRF and origin"). On a route that
    // answers without credentials, an ended session is no credential rather than a 401.
    const sessionId = header === '' && presented === undefined ? sessionCookieOf(request) : undefined;
    if (sessionId !== undefined && admitSession(request, sessionId, sessions, open || access.session === true)) {
      checkScope(request, access, open, path);
      return;
    }
    // A public route answers anyone, with what a reader without credentials may see (`holdsScope` says no scope);
    // a credential presented to it is checked as anywhere else, so that its reader sees more (docs/hardening.md).
    if (open && header === '') {
      request.scopes = [];
      return;
    }
    // An address past the limit is refused whatever it presents: were a right credential let through, the 401s
    // and the 200 would tell the guesses apart, and guessing would go on at full speed.
    const status = await limiter(request, { increment: false });
    if (!status.isAllowed && status.remaining === 0) {
      counting.limited.inc();
      request.authLimited = true;
      const wait = Math.max(1, status.ttlInSeconds ?? 1);
      throw new HttpError(
        429,
        `Too many failed authentications from ${request.ip} (http.max-auth-failures: ${http.maxAuthFailures} within ${http.authFailureWindowMs} ms): retry in ${wait} s`,
        { 'Retry-After': String(wait) },
      );
    }
    let admitted: Admitted | undefined;
    if (bearer !== undefined) {
      admitted = credentials.token(bearer);
    } else if (query !== undefined) {
      // `?token=` takes the heartbeat tokens admitted above, no other: a URL ends up in logs and shell histories.
    } else if (/^Basic /i.test(header)) {
      const pair = decodeBasic(header);
      admitted = pair === null ? undefined : credentials.password(pair.user, pair.password);
    }
    if (admitted === undefined) {
      // The sign-in routes answer requests without credentials themselves.
      if (header === '' && presented === undefined && access.session === true) return;
      // A read without any credential (a browser before its login prompt) is no guess; a change is counted, so that
      // a flood of them is slowed and its audit rows bounded (src/server/audit-routes.ts).
      if (header !== '' || presented !== undefined || isApiChange(request.method, path)) {
        counting.failures.inc();
        await limiter(request);
      }
      // A fetch() of one of this server's pages gets no challenge: the browser would answer it with its login prompt,
      // over the dashboard's own sign-in form (docs/dashboard.md, "Signing in"), when a session ends and its cookie
      // is dropped. Browsers set the `Sec-Fetch-*` headers themselves, never a page's script.
      throw new HttpError(401, 'Unauthorized', fetchedByOwnPage(request) ? {} : challenge);
    }
    request.principal = admitted.principal.name;
    request.scopes = admitted.principal.scopes;
    checkScope(request, access, open, path);
  };
}

/** A 403 naming the scope the route needs, unless the request's principal holds it (`admin` holds every one). */
/** A request a page of this origin made with fetch(): not a navigation, not another site's. */
function fetchedByOwnPage(request: FastifyRequest): boolean {
  return request.headers['sec-fetch-site'] === 'same-origin' && request.headers['sec-fetch-mode'] === 'cors';
}

function checkScope(request: FastifyRequest, access: RouteAccess, open: boolean, path: string): void {
  const scopes = request.scopes ?? [];
  if (open || access.session === true || scopes.includes(access.scope) || scopes.includes('admin')) return;
  throw new HttpError(
    403,
    `Forbidden: ${request.method} ${path} needs the scope "${access.scope}", which ${principalOf(request)} does not have`,
  );
}

/** Who a heartbeat token speaks for on a report route: the check's own token, or an API token of scope `heartbeat`. */
function heartbeatPrincipal(
  request: FastifyRequest,
  presented: string,
  ownSha256: string | undefined,
  tokens: TokenStore,
): Principal | undefined {
  const digest = sha256Hex(presented);
  if (ownSha256 !== undefined && digestsEqual(digest, ownSha256)) {
    const params = request.params as { name?: string; id?: string } | undefined;
    if (request.routeOptions.config?.ownTokenPrincipal === 'ack-link')
      return { name: `ack-link:${params?.id ?? '?'}`, scopes: [] };
    return { name: `heartbeat:${params?.name ?? '?'}`, scopes: ['heartbeat'] };
  }
  // An API token opens an acknowledge route by its `write` scope, as any other route.
  if (request.routeOptions.config?.ownTokenPrincipal === 'ack-link') return undefined;
  const token = tokens.find(digest);
  return token?.scopes.includes('heartbeat') ? { name: `token:${token.name}`, scopes: token.scopes } : undefined;
}

function queryToken(request: FastifyRequest): string | undefined {
  const token = (request.query as Record<string, unknown> | undefined)?.token;
  return typeof token === 'string' && token !== '' ? token : undefined;
}

function digestsEqual(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** The user and password of a `Basic` header; null when it is not one (no `:` in what it decodes to). */
function decodeBasic(header: string): { user: string; password: string } | null {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header);
  const decoded = match ? Buffer.from(match[1] as string, 'base64').toString('utf8') : '';
  const separator = decoded.indexOf(':');
  return separator >= 0 ? { user: decoded.slice(0, separator), password: decoded.slice(separator + 1) } : null;
}

function basicCheck(credentials: {
  username: string;
  password: string;
}): (pair: { user: string; password: string } | null) => boolean {
  // Comparing digests keeps the comparison constant-time whatever the lengths of the inputs.
  const digest = (value: string) => createHash('sha256').update(value).digest();
  const expectedUser = digest(credentials.username);
  const expectedPassword = digest(credentials.password);
  return (pair) => {
    // Both comparisons always run so the timing does not tell which half was wrong.
    const userOk = timingSafeEqual(digest(pair?.user ?? ''), expectedUser);
    const passwordOk = timingSafeEqual(digest(pair?.password ?? ''), expectedPassword);
    return pair !== null && userOk && passwordOk;
  };
}
