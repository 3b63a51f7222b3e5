/**
 * What a request that comes with a session cookie must show besides it (docs/hardening.md, "Sessions, CSRF and
 * origin"). A browser sends the cookie on its own, so a change through it needs proof that this server's page made
 * it:
 * - `X-Vigie-CSRF`, the session's CSRF token (src/server/sessions.ts): a page of another origin can neither read
 *   it nor set a custom header without a CORS preflight, which this server never answers;
 * - and, as OWASP's CSRF guidance recommends beside a token, an `Origin` of this server; without `Origin` (a
 *   browser sends it with every change it makes), a `Referer` of this server; a change with neither is refused.
 * A websocket upgrade through the cookie needs a same-origin `Origin` too (browsers always send it there): the
 * upgrade is a GET that no CSRF header can come with. Bearer and basic-auth requests are not concerned: no browser
 * attaches a bearer token by itself. The cookie is SameSite=Strict as well, so a browser does not send it from
 * another site at all; these checks hold for the browsers and the paths where that does not.
 */
import type { FastifyRequest } from 'fastify';
import { parseCookie, stringifySetCookie } from 'cookie';
import { HttpError } from './errors.ts';
import { type ActiveSession, csrfMatches, SESSION_COOKIE, type Sessions } from './sessions.ts';

const CSRF_HEADER = 'x-vigie-csrf';
export const SESSION_ROUTE = '/api/v1/session';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session id the request's cookie holds, if any. */
export function sessionCookieOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  // Most requests carry no cookie at all: only those that name ours are parsed.
  if (header === undefined || !header.includes(SESSION_COOKIE)) return undefined;
  const id = parseCookie(header)[SESSION_COOKIE];
  return id === undefined || id === '' ? undefined : id;
}

/** Whether the request reached this server over TLS, itself or through a proxy that says so. */
function secureRequest(request: FastifyRequest): boolean {
  return (forwarded(request, 'x-forwarded-proto') ?? request.protocol) === 'https';
}

/** The cookie of a new session: HttpOnly (no script reads it), SameSite=Strict, Secure when the request used TLS. */
export function sessionCookie(request: FastifyRequest, session: ActiveSession): string {
  return stringifySetCookie(SESSION_COOKIE, session.id, {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    secure: secureRequest(request),
    expires: new Date(session.expiresMs),
    maxAge: Math.max(1, Math.round((session.expiresMs - Date.now()) / 1000)),
  });
}

/** A cookie that makes the browser forget the session's. */
export function clearedSessionCookie(request: FastifyRequest): string {
  return stringifySetCookie(SESSION_COOKIE, '', {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    secure: secureRequest(request),
    expires: new Date(0),
  });
}

/** The first value of a header a proxy sets (`X-Forwarded-Proto: https, http` through two proxies). */
function forwarded(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  const first = (Array.isArray(value) ? value[0] : value)?.split(',')[0]?.trim().toLowerCase();
  return first === undefined || first === '' ? undefined : first;
}

/**
 * This server's origin as the client reached it: the scheme of the listener and the `Host` the request named, or
 * those a proxy in front says it was reached with (`X-Forwarded-Proto`, `X-Forwarded-Host`). A page of another
 * origin cannot set these without a CORS preflight either, so honouring them opens nothing.
 */
function serverOrigin(request: FastifyRequest): string | null {
  const scheme = forwarded(request, 'x-forwarded-proto') ?? request.protocol;
  const host = forwarded(request, 'x-forwarded-host') ?? request.headers.host;
  return host === undefined ? null : originOfUrl(`${scheme}://${host}`);
}

/** `scheme://host[:port]` of a URL, the port left out when it is the scheme's default; null when not a URL. */
function originOfUrl(text: string): string | null {
  try {
    const origin = new URL(text).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}

/**
 * Why the request's `Origin` (else its `Referer`) is not this server's; null when it is. `required`: whether a
 * request with neither is refused (a change through a session; a sign-in is refused only for a foreign `Origin`).
 */
export function originProblem(request: FastifyRequest, required: boolean): string | null {
  const ours = serverOrigin(request);
  const origin = request.headers.origin;
  if (origin !== undefined) {
    if (ours !== null && originOfUrl(origin) === ours) return null;
    return `Origin ${origin.slice(0, 200)} is not this server's (${ours ?? 'no Host header'})`;
  }
  const referer = request.headers.referer;
  if (referer !== undefined) {
    if (ours !== null && originOfUrl(referer) === ours) return null;
    return `the Referer of this request is not a page of this server (${ours ?? 'no Host header'})`;
  }
  return required ? 'a change through a session needs an Origin or Referer header of this server' : null;
}

/**
 * Admits a request that came with a session cookie, or throws: 401 for a session that is unknown, expired or
 * revoked (`undefined` when `optional`: a route that answers without credentials); 403 for a change
 * without the session's CSRF token or from another origin, and for an upgrade from another origin. Sets the
 * request's principal and scopes before any 403, so that the audit log names who was refused.
 */
export function admitSession(
  request: FastifyRequest,
  id: string,
  sessions: Sessions,
  optional: boolean,
): ActiveSession | undefined {
  const session = sessions.resolve(id);
  if (typeof session === 'string') {
    // Served all the same, as without the cookie: no refusal to count.
    if (optional) return undefined;
    sessions.refused(session);
    const message =
      session === 'expired'
        ? 'Session expired: sign in again'
        : session === 'revoked'
          ? 'Session ended: the token or password it was made with was deleted or changed; sign in again'
          : 'Session unknown or ended: sign in again';
    // No `WWW-Authenticate`: the page shows its own sign-in form rather than the browser's.
    throw new HttpError(401, message, { 'set-cookie': clearedSessionCookie(request) });
  }
  request.principal = session.name;
  request.scopes = session.scopes;
  request.session = session;
  const upgrade = request.headers.upgrade !== undefined;
  // A sign-in is checked by its own route: a session already there is replaced, whatever its token.
  const signIn = request.method === 'POST' && request.routeOptions.url === SESSION_ROUTE;
  if (!upgrade && (SAFE_METHODS.has(request.method) || signIn)) return session;
  const foreign = originProblem(request, true);
  if (foreign !== null) {
    sessions.refused('origin');
    throw new HttpError(403, `Forbidden: ${foreign}`);
  }
  if (upgrade) return session;
  const csrf = request.headers[CSRF_HEADER];
  if (typeof csrf !== 'string' || csrf === '') {
    sessions.refused('csrf');
    throw new HttpError(
      403,
      `Forbidden: a change through a session needs the header X-Vigie-CSRF with the token its sign-in answered`,
    );
  }
  if (!csrfMatches(id, csrf)) {
    sessions.refused('csrf');
    throw new HttpError(403, 'Forbidden: X-Vigie-CSRF is not the CSRF token of this session');
  }
  return session;
}
