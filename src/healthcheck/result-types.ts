/**
 * What the healthcheck part stores and answers about results: a result, a history entry, a stored definition, the
 * uptime windows and the response-time buckets (docs/http-api.md, "Results").
 */
import type { KindName } from './kinds/index.ts';

/** The result of a run, in its JSON form (docs/http-api.md, "Results"), which is also how it is kept in memory. */
export interface CheckResult {
  name: string;
  summary: string;
  labels?: Record<string, string>;
  success: boolean;
  /** Unix seconds, when the run finished. */
  'healthcheck-timestamp': number;
  message: string;
  /** Milliseconds, truncated. */
  duration: number;
  source: string;
  /** Set (true) when the run finished during a maintenance window (docs/checks.md, "Maintenance windows"). */
  maintenance?: true;
  /** In a cluster: the node that ran the check (docs/cluster.md); absent on the state of a check with locations. */
  node?: string;
  /** A check with locations, in a cluster: the failing locations that make it fail (docs/checks.md "Locations"). */
  quorum?: number;
  /** A check with locations, in a cluster: its chosen locations, best-ranked first, with their latest results. */
  locations?: LocationResult[];
  /** A successful run that crossed a `degraded` condition of its check: which (docs/checks.md, "States"). */
  degraded?: string;
}

/** A location of a check and its latest result; the result fields are absent until the location has run it. */
export interface LocationResult {
  node: string;
  success?: boolean;
  'healthcheck-timestamp'?: number;
  message?: string;
  duration?: number;
  maintenance?: true;
  degraded?: string;
}

export interface HistoryEntry {
  name: string;
  success: boolean;
  'healthcheck-timestamp': number;
  message: string;
  duration: number;
  maintenance?: true;
  node?: string;
}

export interface StoredCheck {
  name: string;
  kind: KindName;
  /** The listing form of the definition, as `checkToJson` gave it. */
  definition: unknown;
}

export interface UptimeWindow {
  runs: number;
  successes: number;
  /** successes / runs; null without runs. */
  ratio: number | null;
  /** Mean run duration in ms; null without runs. */
  'mean-duration': number | null;
  'min-duration': number | null;
  'max-duration': number | null;
  /** Unix seconds: the start of the oldest hourly bucket counted (buckets overlapping the window are counted whole). */
  since: number;
}

/** Success ratios (null without runs), as the dashboard shows them. */
export interface UptimeRatios {
  '24h': number | null;
  '7d': number | null;
  '30d': number | null;
}

export type SeriesWindow = '24h' | '7d' | '30d';

export interface DurationBucket {
  /** Unix seconds: the start of the hour or day. */
  start: number;
  runs: number;
  successes: number;
  /** Milliseconds. */
  mean: number;
  min: number;
  max: number;
}

export const UPTIME_WINDOWS = { '1h': 3600, '24h': 86_400, '7d': 7 * 86_400, '30d': 30 * 86_400 } as const;
export type UptimeWindowName = keyof typeof UPTIME_WINDOWS;

export const HOUR_S = 3600;
export const DAY_S = 86_400;
export const HOURLY_RETENTION_S = 30 * DAY_S;
export const DAILY_RETENTION_S = 365 * DAY_S;
