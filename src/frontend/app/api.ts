/** The dashboard's calls to Vigie's API (same origin: basic auth credentials the browser holds apply). */

export interface CheckResult {
  name: string;
  success: boolean;
  'healthcheck-timestamp': number;
  message: string;
  duration: number;
  source: string;
  summary: string;
  labels?: Record<string, string>;
  /** The run finished during a maintenance window. */
  maintenance?: true;
  /** In a cluster: the node that ran it. */
  node?: string;
}

export type Window = '24h' | '7d' | '30d';
export const WINDOWS: readonly Window[] = ['24h', '7d', '30d'];
export type Uptime = Record<Window, number | null>;

export interface CheckOverview {
  name: string;
  kind: string;
  source: string;
  description?: string;
  labels?: Record<string, string>;
  result: { success: boolean; timestamp: number; duration: number; message?: string; maintenance?: true; node?: string } | null;
  uptime: Uptime;
}

export interface HistoryEntry {
  success: boolean;
  'healthcheck-timestamp': number;
  message: string;
  duration: number;
  maintenance?: true;
  node?: string;
}

export interface ClusterMember {
  node: string;
  self: boolean;
  version: string;
  'config-hash': string;
  'started-at': string;
  checks: number;
  partitions: number;
}

export interface ClusterMembers {
  node: string;
  joined: boolean;
  result: ClusterMember[];
}

export interface DurationBucket {
  start: number;
  runs: number;
  successes: number;
  mean: number;
  min: number;
  max: number;
}

export interface StreamSummary {
  name: string;
  source: 'api' | 'file' | 'persisted';
  config: string;
  description: string | null;
  default: boolean;
  'index-size': number;
  'current-time': number;
  events: number;
  errors: number;
}

export type IndexEvent = Record<string, unknown>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(path, { headers: { accept: 'application/json', ...(init?.body ? { 'content-type': 'application/json' } : {}) }, ...init });
  const body = (await response.json().catch(() => null)) as (T & { message?: string; error?: string }) | null;
  if (!response.ok) throw new ApiError(response.status, body?.message ?? body?.error ?? `${response.status} ${response.statusText}`);
  return body as T;
}

const post = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body) });
const segment = encodeURIComponent;

export const api = {
  overview: () => call<{ now: number; checks: CheckOverview[] }>('/api/v1/overview/healthchecks'),
  recentResults: (names: string[], limit: number) =>
    call<{ result: Record<string, HistoryEntry[]> }>('/api/v1/overview/recent-results', post({ names, limit })).then((body) => body.result),
  definition: (name: string) => call<Record<string, unknown>>(`/api/v1/healthcheck/${segment(name)}`),
  result: (name: string) => call<CheckResult>(`/api/v1/result/${segment(name)}`),
  history: (name: string) => call<{ result: HistoryEntry[] }>(`/api/v1/result/${segment(name)}/history`).then((body) => body.result),
  uptime: (name: string) =>
    call<{ uptime: Record<string, { ratio: number | null; runs: number }> }>(`/api/v1/result/${segment(name)}/uptime`).then((body) => body.uptime),
  durations: (name: string, window: Window) =>
    call<{ buckets: DurationBucket[] }>(`/api/v1/overview/durations/${segment(name)}?window=${window}`).then((body) => body.buckets),
  streams: () => call<{ now: number; streams: StreamSummary[] }>('/api/v1/overview/streams'),
  /** In a cluster only (`inCluster`): on a single node the route does not exist. */
  members: () => call<ClusterMembers>('/api/v1/cluster/members'),
  search: (stream: string, query: string) =>
    call<{ events: IndexEvent[] }>(`/api/v1/index/${segment(stream)}/search`, post({ query: base64(query) })).then((body) => body.events),
};

/** Whether this node is in a cluster: the server marks the page's `<html>` with `data-cluster` (src/frontend/routes.ts). */
export const inCluster = document.documentElement.hasAttribute('data-cluster');

/** Base64 of the UTF-8 bytes, as the search API and the websocket feed take a query. */
export function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
