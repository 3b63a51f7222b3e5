/**
 * Which scope each route needs (docs/http-api.md, "Credentials"), decided here in one table by URL prefix and
 * method rather than route by route: a new route of a known family needs nothing more. Reading (`GET`, searches,
 * the dashboard's summaries, websocket subscribes, `/metrics`, status pages, uptime reports) is `read`; changing
 * checks, streams, maintenance windows, status pages and incidents is `write`; signing in and out
 * (`/api/v1/session`) needs no scope; every event input is `ingest`; heartbeat reports are `heartbeat`; tokens and the
 * audit log (reading it included: it names who did what from where), and anything the table does not name, are `admin`,
 * which also holds every other scope. The same table says which requests the audit log records (`isApiChange`).
 */
export const SCOPES = ['read', 'write', 'ingest', 'heartbeat', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** Route families that `http.public` may open to requests without credentials. */
export const PUBLIC_FAMILIES = ['badges', 'status-pages'] as const;
export type PublicFamily = (typeof PUBLIC_FAMILIES)[number];

export interface RouteAccess {
  scope: Scope;
  /** Set for the routes `http.public` can open. */
  publicAs?: PublicFamily;
  /** The sign-in routes (`/api/v1/session`): any credential or none, and no scope; the route answers for itself. */
  session?: true;
  /**
   * The dashboard's own files (`/`, `/frontend/...`): answered to anyone, with or without credentials. They hold no
   * data (every value comes from the API, which asks for credentials), and the page must load to show its sign-in
   * form: behind basic auth, a browser would show its own prompt instead (docs/dashboard.md, "Signing in").
   */
  page?: true;
}

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The probes of load balancers and orchestrators, which rarely send credentials: they answer anyone, and say
 *  nothing but whether this node is up (`/healthz`, `/health`) or ready (`/readyz`). */
const PROBES = new Set(['/healthz', '/health', '/readyz']);

/** Whether a request is a probe's, answered without credentials. */
export function isProbe(method: string, path: string): boolean {
  return READ_METHODS.has(method) && PROBES.has(path);
}

interface Rule {
  prefixes: readonly string[];
  /** Paths matched exactly, besides the prefixes. */
  paths?: readonly string[];
  /** The methods the rule applies to; every method when absent. */
  methods?: ReadonlySet<string>;
  access: RouteAccess;
}

/** First match wins: the specific families, then reads, then changes; what matches nothing is `admin`. */
const RULES: readonly Rule[] = [
  { prefixes: ['/frontend/'], paths: ['/', '/frontend'], methods: READ_METHODS, access: { scope: 'read', page: true } },
  { prefixes: ['/api/v1/session'], access: { scope: 'read', session: true } },
  { prefixes: ['/api/v1/tokens', '/api/v1/audit'], access: { scope: 'admin' } },
  { prefixes: ['/api/v1/heartbeat/'], access: { scope: 'heartbeat' } },
  { prefixes: ['/api/v1/badge/'], methods: READ_METHODS, access: { scope: 'read', publicAs: 'badges' } },
  { prefixes: ['/status/'], methods: READ_METHODS, access: { scope: 'read', publicAs: 'status-pages' } },
  // A page's subscribe and subscription links: a reader's, not a change of Vigie's (docs/status-pages.md).
  { prefixes: ['/status/'], methods: new Set(['POST']), access: { scope: 'read', publicAs: 'status-pages' } },
  { prefixes: ['/api/v1/fluentbit/', '/api/v1/opentelemetry/', '/api/v1/prometheus/'], access: { scope: 'ingest' } },
  { prefixes: ['/api/v1/stream/'], methods: new Set(['PUT']), access: { scope: 'ingest' } },
  { prefixes: ['/api/v1/index/'], access: { scope: 'read' } },
  // `POST /api/v1/overview/recent-results` reads: its body is the list of checks to read.
  { prefixes: ['/api/v1/overview/'], access: { scope: 'read' } },
  { prefixes: ['/'], methods: READ_METHODS, access: { scope: 'read' } },
  {
    prefixes: [
      '/healthcheck',
      '/api/v1/healthcheck',
      '/api/v1/stream',
      '/api/v1/maintenance',
      '/api/v1/status-page',
      '/api/v1/incident',
      '/api/v1/alerts',
    ],
    access: { scope: 'write' },
  },
];

/** `path` is the matched route's pattern (`/api/v1/heartbeat/:name`), or the request's path when none matched. */
export function routeAccess(method: string, path: string): RouteAccess {
  for (const rule of RULES) {
    if (rule.methods && !rule.methods.has(method)) continue;
    if (rule.paths?.includes(path)) return rule.access;
    if (
      rule.prefixes.some((prefix) => path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`))
    )
      return rule.access;
  }
  return { scope: 'admin' };
}

/**
 * Whether a request is an API change for the audit log (src/server/audit-routes.ts): a method that changes
 * something on a route of `write` or `admin`, and sign-ins and sign-outs. Event pushes (`ingest`) and heartbeat
 * reports are traffic rather than changes, and would flood the log.
 */
export function isApiChange(method: string, path: string): boolean {
  if (READ_METHODS.has(method)) return false;
  const { scope, session } = routeAccess(method, path);
  return session === true || scope === 'write' || scope === 'admin';
}
