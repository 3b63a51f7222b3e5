/**
 * Badges for a README or a wiki page (docs/http-api.md, "Badges"): a check's status and its uptime over 24 h,
 * 7 d or 30 d, as shields.io draws them. The SVG comes from shields.io's own renderer (`badge-maker`), which
 * measures the text with the font's metrics, so a badge is as wide as its words.
 */
import type { makeBadge as render } from 'badge-maker';
import type { CheckResult, UptimeWindow } from '../result-types.ts';
import type { CheckState } from '../state-names.ts';

/**
 * badge-maker is loaded by the first badge asked for, not at startup: with its font metrics it holds 4 MB of heap,
 * a tenth of a small service's, for a route few deployments call (bench/JOURNAL.md, "Modules loaded when used").
 */
let renderer: Promise<typeof render> | null = null;
async function makeBadge(format: Parameters<typeof render>[0]): Promise<string> {
  renderer ??= import('badge-maker').then((module) => module.makeBadge);
  return (await renderer)(format);
}

export const UPTIME_BADGE_WINDOWS = ['24h', '7d', '30d'] as const;
export type UptimeBadgeWindow = (typeof UPTIME_BADGE_WINDOWS)[number];

/** What the status badge shows of each state: a pending check (failing, fewer times than its failure-threshold) is
 *  still up (docs/checks.md, "States"). */
const STATE_BADGES: Record<CheckState, { message: string; color: string }> = {
  up: { message: 'up', color: 'brightgreen' },
  pending: { message: 'up', color: 'brightgreen' },
  degraded: { message: 'degraded', color: 'yellow' },
  down: { message: 'down', color: 'red' },
  maintenance: { message: 'maintenance', color: 'blue' },
  paused: { message: 'paused', color: 'lightgrey' },
};

/** The check's state (`up` for pending), `not run yet` (grey) before its first result unless paused. */
export function statusBadge(name: string, latest: CheckResult | undefined, state: CheckState): Promise<string> {
  if (latest === undefined && state !== 'paused')
    return makeBadge({ label: name, message: 'not run yet', color: 'lightgrey' });
  return makeBadge({ label: name, ...STATE_BADGES[state] });
}

/** The share of successful runs over the window, two decimals below 100 %; `no data` (grey) without runs. */
export function uptimeBadge(window: UptimeBadgeWindow, uptime: UptimeWindow): Promise<string> {
  const label = `uptime ${window}`;
  if (uptime.ratio === null) return makeBadge({ label, message: 'no data', color: 'lightgrey' });
  const percent = uptime.ratio * 100;
  // Floored, so that 99.996 % does not read 100 % while runs failed.
  const message = uptime.successes === uptime.runs ? '100%' : `${(Math.floor(percent * 100) / 100).toFixed(2)}%`;
  return makeBadge({ label, message, color: uptimeColor(percent) });
}

function uptimeColor(percent: number): string {
  if (percent >= 99.9) return 'brightgreen';
  if (percent >= 99) return 'green';
  if (percent >= 97) return 'yellowgreen';
  if (percent >= 95) return 'yellow';
  if (percent >= 90) return 'orange';
  return 'red';
}
