/**
 * The dashboard's calls to Vigie's API (same origin: basic auth credentials the browser holds apply). The answers'
 * types are the server's wire types (src/healthcheck/wire.ts, src/stream/wire.ts, src/cluster/wire.ts,
 * src/server/audit-wire.ts), imported as types only: nothing of the server's modules reaches the bundle.
 */
import type { Static } from '@sinclair/typebox';
import type { ClusterMembers as ClusterMembersWire } from '../../cluster/wire.ts';
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

export type Window = '24h' | '7d' | '30d';
export const WINDOWS: readonly Window[] = ['24h', '7d', '30d'];

export type IndexEvent = Record<string, unknown>;

/** A refusal of the API, with its status (the Audit view tells a 403 from a failure). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(path, {
    headers: { accept: 'application/json', ...(init?.body ? { 'content-type': 'application/json' } : {}) },
    ...init,
  });
  const body = (await response.json().catch(() => null)) as (T & { message?: string; error?: string }) | null;
  if (!response.ok)
    throw new ApiError(response.status, body?.message ?? body?.error ?? `${response.status} ${response.statusText}`);
  return body as T;
}

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
  incidents: (limit: number) => call<Incidents>(`/api/v1/incident?limit=${limit}`).then((body) => body.result),
  search: (stream: string, query: string) =>
    call<{ events: IndexEvent[] }>(`/api/v1/index/${segment(stream)}/search`, post({ query: base64(query) })).then(
      (body) => body.events,
    ),
};

/** Whether this node is in a cluster: the server marks the page's `<html>` with `data-cluster` (src/frontend/routes.ts). */
export const inCluster = document.documentElement.hasAttribute('data-cluster');

/** Base64 of the UTF-8 bytes, as the search API and the websocket feed take a query. */
export function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
