/**
 * The dashboard's calls to Vigie's API (same origin: basic auth credentials the browser holds apply). The answers'
 * types are the server's wire types (src/healthcheck/wire.ts, src/stream/wire.ts, src/cluster/wire.ts,
 * src/server/audit-wire.ts, src/healthcheck/alerts/alert-wire.ts), imported as types only: nothing of the server's
 * modules reaches the bundle.
 */
import type { Static } from '@sinclair/typebox';
import type { ClusterMembers as ClusterMembersWire } from '../../cluster/wire.ts';
import type { AlertJson } from '../../healthcheck/alerts/alert-wire.ts';
import type { AuditPage as AuditPageWire } from '../../server/audit-wire.ts';
import type {
  CheckDefinition,
  CheckOverview as CheckOverviewWire,
  CheckResult as CheckResultWire,
  CheckStateAnswer,
  DurationBucket as DurationBucketWire,
  Durations,
  HealthcheckOverview,
  HistoryEntry as HistoryEntryWire,
  LocationResult as LocationResultWire,
  RecentResults,
  StateEvent as StateEventWire,
} from '../../healthcheck/wire.ts';
import type { IncidentList } from '../../healthcheck/status-pages/wire.ts';
import type { StreamSummaries, StreamSummary as StreamSummaryWire } from '../../stream/wire.ts';

type CheckResult = Static<typeof CheckResultWire>;
export type CheckOverview = Static<typeof CheckOverviewWire>;
export type HistoryEntry = Static<typeof HistoryEntryWire>;
export type StateEvent = Static<typeof StateEventWire>;
export type LocationResult = Static<typeof LocationResultWire>;
export type DurationBucket = Static<typeof DurationBucketWire>;
export type StreamSummary = Static<typeof StreamSummaryWire>;
type ClusterMembers = Static<typeof ClusterMembersWire>;
export type AuditPage = Static<typeof AuditPageWire>;
export type Incidents = Static<typeof IncidentList>;

/** An open alert, as `GET /api/v1/alerts` lists it (docs/alerting.md, "Acknowledging"). */
export type Alert = AlertJson;

export type Window = '24h' | '7d' | '30d';
export const WINDOWS: readonly Window[] = ['24h', '7d', '30d'];

export type IndexEvent = Record<string, unknown>;

/** One problem of a refused body, as the API names it (docs/http-api.md, "Validation errors"). */
export interface FieldError {
  field: string;
  message: string;
}

/** A refusal of the API, with its status (the Audit view tells a 403 from a failure) and every field error. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: readonly FieldError[] = [],
  ) {
    super(message);
  }
}

/**
 * The session the page speaks through (src/frontend/app/session.tsx): its CSRF token goes with every change, and a
 * 401 tells the page to show its sign-in form again (the session expired, or its token was deleted).
 */
export const auth: { csrf: string | undefined; onSignedOut: (message: string) => void } = {
  csrf: undefined,
  onSignedOut: () => {},
};

const SAFE = new Set(['GET', 'HEAD']);

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const method = init?.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init?.body) headers['content-type'] = 'application/json';
  if (!SAFE.has(method) && auth.csrf !== undefined) headers['x-vigie-csrf'] = auth.csrf;
  const response = await fetch(path, {
    ...init,
    headers,
    // The page is served with `Referrer-Policy: no-referrer`, under which a browser sends `Origin: null` with a
    // change: the server wants this origin (src/server/session-guard.ts).
    referrerPolicy: 'same-origin',
  });
  const body = (await response.json().catch(() => null)) as
    (T & { message?: string; error?: string; errors?: FieldError[] }) | null;
  if (!response.ok) {
    const message = body?.message ?? body?.error ?? `${response.status} ${response.statusText}`;
    // Without a cookie at all (the browser drops it when the session's time is up), the API just says Unauthorized.
    if (response.status === 401 && path !== SESSION_PATH)
      auth.onSignedOut(message === 'Unauthorized' ? 'Session ended: sign in again' : message);
    throw new ApiError(response.status, message, body?.errors ?? []);
  }
  return body as T;
}

const SESSION_PATH = '/api/v1/session';

/** Who the page speaks for (`GET /api/v1/session`). */
export interface Who {
  principal: string | null;
  scopes: string[];
  open: boolean;
  csrf?: string;
  expires?: string;
}

/** Any call of the API by path, for the management views (a check, a window, an incident, a token). */
export const send = <T>(method: string, path: string, body?: unknown): Promise<T> =>
  call<T>(path, body === undefined ? { method } : { method, body: JSON.stringify(body) });

export const session = {
  who: () => call<Who>(SESSION_PATH),
  signIn: (body: { username: string; password: string } | { token: string }) =>
    call<Who>(SESSION_PATH, { method: 'POST', body: JSON.stringify(body) }),
  signOut: () => call<{ message: string }>(SESSION_PATH, { method: 'DELETE' }),
};

const post = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body) });
const segment = encodeURIComponent;

export const api = {
  overview: () => call<Static<typeof HealthcheckOverview>>('/api/v1/overview/healthchecks'),
  recentResults: (names: string[], limit: number) =>
    call<Static<typeof RecentResults>>('/api/v1/overview/recent-results', post({ names, limit })).then(
      (body) => body.result,
    ),
  definition: (name: string) =>
    call<Static<typeof CheckDefinition> & Record<string, unknown>>(`/api/v1/healthcheck/${segment(name)}`),
  result: (name: string) => call<CheckResult>(`/api/v1/result/${segment(name)}`),
  state: (name: string) => call<Static<typeof CheckStateAnswer>>(`/api/v1/healthcheck/${segment(name)}/state`),
  /** The last 30 days' changes of state, oldest first. */
  events: (name: string) =>
    call<{ result: StateEvent[] }>(`/api/v1/healthcheck/${segment(name)}/events`).then((body) => body.result),
  history: (name: string) =>
    call<{ result: HistoryEntry[] }>(`/api/v1/result/${segment(name)}/history`).then((body) => body.result),
  uptime: (name: string) =>
    call<{ uptime: Record<string, { ratio: number | null; runs: number }> }>(
      `/api/v1/result/${segment(name)}/uptime`,
    ).then((body) => body.uptime),
  durations: (name: string, window: Window) =>
    call<Static<typeof Durations>>(`/api/v1/overview/durations/${segment(name)}?window=${window}`).then(
      (body) => body.buckets,
    ),
  streams: () => call<Static<typeof StreamSummaries>>('/api/v1/overview/streams'),
  /** In a cluster only (`inCluster`): on a single node the route does not exist. */
  members: () => call<ClusterMembers>('/api/v1/cluster/members'),
  /** Scope admin: a 403 for another credential. */
  audit: (limit: number) => call<AuditPage>(`/api/v1/audit?limit=${limit}`),
  /** Open alerts, of one state and of one check when given (a check's page asks for its own only). */
  alerts: (state?: string, check?: string) => {
    const query = new URLSearchParams();
    if (state !== undefined) query.set('state', state);
    if (check !== undefined) query.set('check', check);
    const search = query.toString();
    return call<{ result: Alert[] }>(`/api/v1/alerts${search === '' ? '' : `?${search}`}`).then((body) => body.result);
  },
  incidents: (limit: number) => call<Incidents>(`/api/v1/incident?limit=${limit}`).then((body) => body.result),
  search: (stream: string, query: string) =>
    call<{ events: IndexEvent[] }>(`/api/v1/index/${segment(stream)}/search`, post({ query: base64(query) })).then(
      (body) => body.events,
    ),
};

/** Whether this node is in a cluster: the server marks the page's `<html>` with `data-cluster`
 *  (src/frontend/routes.ts). */
export const inCluster = document.documentElement.hasAttribute('data-cluster');

/** Base64 of the UTF-8 bytes, as the search API and the websocket feed take a query. */
export function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
