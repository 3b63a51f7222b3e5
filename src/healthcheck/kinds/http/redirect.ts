/**
 * The redirects an HTTP check with `redirect: true` follows, as upstream's client (Go's http.Client) follows them:
 * - 301, 302 and 303 are followed with GET (HEAD stays HEAD) and no body; 307 and 308 with the same method and
 *   body. A 3xx without a Location is the answer itself, as is any other 3xx;
 * - at most 10 requests: the tenth redirect stops the run with `Get "<its Location>": stopped after 10 redirects`;
 * - the Location is resolved against the URL of the request that got it, and the check's `host` (its Host header)
 *   is kept only through a relative redirect (Go issue 22233). The connection goes to the resolved URL's host;
 * - the configured headers go with every request, except the credentials (Authorization, WWW-Authenticate,
 *   Cookie, Cookie2) once the host is neither the first request's nor one of its subdomains;
 * - each request after the first carries a Referer, the previous URL, unless that was https and this is http.
 * follow-redirects (the package) resolves a relative Location against the Host header and connects there, and
 * undici's interceptor drops the Host header; neither is Go's behaviour, which users of upstream depend on.
 */
import { CheckFailure } from '../types.ts';

/** One request of a run: the first one, or one a redirect asked for. */
export interface Hop {
  /** As the next Location is resolved against (the first request's is its origin and path as sent). */
  url: string;
  method: string;
  body: string | undefined;
  /** Names in lower case; `host` only when it overrides the URL's host. */
  headers: Record<string, string>;
}

const MAX_REQUESTS = 10;
const CREDENTIALS = ['authorization', 'www-authenticate', 'cookie', 'cookie2'];

/** Whether `status` is one a redirect may be followed from. */
export function isRedirectStatus(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/**
 * The request after `hop` (the `requests`-th of the run) got `status` with `location`, or null when that response
 * is the answer. Throws a CheckFailure (Go's wording) when the redirect is not followed as an error.
 */
export function nextHop(
  first: Hop,
  hop: Hop,
  requests: number,
  status: number,
  location: string | undefined,
  method: string,
): Hop | null {
  if (location === undefined || location === '') return null;
  const keepsBody = status === 307 || status === 308;
  let next: URL;
  try {
    next = new URL(location, hop.url);
  } catch (error) {
    throw new CheckFailure(
      `HTTP request failed: ${method} "${hop.url}": failed to parse Location header "${location}": ${(error as Error).message}`,
    );
  }
  if (next.protocol !== 'http:' && next.protocol !== 'https:') {
    throw new CheckFailure(
      `HTTP request failed: ${method} "${location}": unsupported protocol scheme "${next.protocol.slice(0, -1)}"`,
    );
  }
  if (requests >= MAX_REQUESTS)
    throw new CheckFailure(`HTTP request failed: ${method} "${location}": stopped after 10 redirects`);
  const headers: Record<string, string> = { ...first.headers };
  delete headers.host;
  // The first request's length goes with its body, and the body only through a 307 or 308 of a request that had it.
  if (!keepsBody || hop.body === undefined) delete headers['content-length'];
  if (first.headers.host !== undefined && !/^[a-z][a-z0-9+.-]*:/i.test(location) && !location.startsWith('//'))
    headers.host = first.headers.host;
  const firstHost = new URL(first.url).hostname;
  if (!isDomainOrSubdomain(next.hostname, firstHost)) for (const name of CREDENTIALS) delete headers[name];
  if (headers.referer === undefined && !(hop.url.startsWith('https:') && next.protocol === 'http:'))
    headers.referer = withoutUserInfo(hop.url);
  const redirectMethod = keepsBody || hop.method === 'GET' || hop.method === 'HEAD' ? hop.method : 'GET';
  return { url: next.href, method: redirectMethod, body: keepsBody ? hop.body : undefined, headers };
}

/** Go's isDomainOrSubdomain: `sub` is `parent` or ends with `.parent`. */
function isDomainOrSubdomain(sub: string, parent: string): boolean {
  return sub === parent || sub.endsWith(`.${parent}`);
}

function withoutUserInfo(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  return parsed.href;
}
