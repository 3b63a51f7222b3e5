/**
 * A page's checks as Atlassian Statuspage's components (docs/status-pages.md, "States"), and what Statuspage derives
 * from them: the page's top-level status and an incident's impact.
 *
 * A check's component status comes from its state (docs/checks.md, "States"): up and pending are operational (one
 * failed run does not turn a page red), degraded is `degraded_performance`, down is `major_outage`, or
 * `partial_outage` for a check with `locations` failing on fewer of them than all; paused and maintenance are
 * `under_maintenance`; a check that has not run yet is operational.
 *
 * The top-level status follows Statuspage's rules ("Top-level status and incident impact calculations"): every
 * component in major outage is a major system outage; some in major outage, or all in partial outage, a partial
 * system outage; some in partial outage, a minor service outage; all degraded, degraded system service; some,
 * partially degraded service; else some under maintenance is service under maintenance; else all systems
 * operational. A group's status is its worst member's. An incident's impact is its own when set, else its
 * components' worst: major outage is critical, partial outage major, degraded performance minor, otherwise none.
 */

export type ComponentStatus =
  'operational' | 'under_maintenance' | 'degraded_performance' | 'partial_outage' | 'major_outage';

/** Worst last. */
const SEVERITY: readonly ComponentStatus[] = [
  'operational',
  'under_maintenance',
  'degraded_performance',
  'partial_outage',
  'major_outage',
];

export type PageState =
  | 'operational'
  | 'maintenance'
  | 'partially-degraded'
  | 'degraded'
  | 'minor-outage'
  | 'partial-outage'
  | 'major-outage';

/** Statuspage's words for each top-level status. */
export const PAGE_WORDS: Record<PageState, string> = {
  operational: 'All Systems Operational',
  maintenance: 'Service Under Maintenance',
  'partially-degraded': 'Partially Degraded Service',
  degraded: 'Degraded System Service',
  'minor-outage': 'Minor Service Outage',
  'partial-outage': 'Partial System Outage',
  'major-outage': 'Major System Outage',
};

export type Indicator = 'none' | 'minor' | 'major' | 'critical' | 'maintenance';

/** summary.json's `status.indicator`: Statuspage answers `maintenance` while a component is under maintenance and
 *  nothing is worse. */
export const INDICATOR: Record<PageState, Indicator> = {
  operational: 'none',
  maintenance: 'maintenance',
  'partially-degraded': 'minor',
  degraded: 'minor',
  'minor-outage': 'minor',
  'partial-outage': 'major',
  'major-outage': 'critical',
};

export const IMPACTS = ['none', 'minor', 'major', 'critical'] as const;
export type Impact = (typeof IMPACTS)[number];

export function worst(statuses: Iterable<ComponentStatus>): ComponentStatus {
  let rank = 0;
  for (const status of statuses) rank = Math.max(rank, SEVERITY.indexOf(status));
  return SEVERITY[rank] as ComponentStatus;
}

export function topLevel(statuses: readonly ComponentStatus[]): PageState {
  const count = (status: ComponentStatus) => statuses.filter((one) => one === status).length;
  const all = statuses.length;
  const major = count('major_outage');
  const partial = count('partial_outage');
  const degraded = count('degraded_performance');
  if (all > 0 && major === all) return 'major-outage';
  if (major > 0 || (all > 0 && partial === all)) return 'partial-outage';
  if (partial > 0) return 'minor-outage';
  if (all > 0 && degraded === all) return 'degraded';
  if (degraded > 0) return 'partially-degraded';
  return count('under_maintenance') > 0 ? 'maintenance' : 'operational';
}

const IMPACT_OF: Record<ComponentStatus, Impact> = {
  operational: 'none',
  under_maintenance: 'none',
  degraded_performance: 'minor',
  partial_outage: 'major',
  major_outage: 'critical',
};

/** An incident's impact: its own, else from the worst of its components. */
export function impactOf(own: Impact | null, components: Iterable<ComponentStatus>): Impact {
  return own ?? IMPACT_OF[worst(components)];
}
