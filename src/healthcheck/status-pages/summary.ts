/**
 * `/status/<slug>/summary.json` in the shape of Atlassian Statuspage's `summary.json` (docs/status-pages.md,
 * "summary.json"), so that tools reading Statuspage pages read Vigie's: each group is a component group, each of its
 * checks a component; the page's unresolved incidents; the status indicator. Ids are stable: derived from the slug,
 * the group and the check name.
 */
import { createHash } from 'node:crypto';
import type { Incident } from './incidents.ts';
import { PAGE_WORDS } from './html.ts';
import type { CheckState, PageState, PageView } from './view.ts';

const COMPONENT_STATUS: Record<CheckState | PageState, string> = {
  operational: 'operational',
  unknown: 'operational',
  down: 'major_outage',
  degraded: 'degraded_performance',
  'partial-outage': 'partial_outage',
  'major-outage': 'major_outage',
  maintenance: 'under_maintenance',
  paused: 'under_maintenance',
};

const INDICATOR: Record<PageState, string> = {
  operational: 'none',
  maintenance: 'none',
  degraded: 'minor',
  'partial-outage': 'major',
  'major-outage': 'critical',
};

/** The impact of an incident, from the state of the page when asked: Statuspage's impact is set by hand. */
const IMPACT: Record<PageState, string> = INDICATOR;

function id(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 12);
}

export function summaryJson(view: PageView, pageUrl: string): Record<string, unknown> {
  const pageId = id('page', view.page.slug);
  const now = new Date(view.nowMs).toISOString();
  const components: Record<string, unknown>[] = [];
  view.groups.forEach((group, g) => {
    const groupId = id('group', view.page.slug, String(g), group.name);
    const members = group.checks.map((check, c) => ({
      id: id('component', view.page.slug, String(g), check.name),
      name: check.name,
      status: COMPONENT_STATUS[check.state],
      created_at: now,
      updated_at: now,
      position: c + 1,
      description: null,
      showcase: true,
      start_date: null,
      group_id: groupId,
      page_id: pageId,
      group: false,
      only_show_if_degraded: false,
    }));
    components.push({
      id: groupId,
      name: group.name,
      status: COMPONENT_STATUS[group.state],
      created_at: now,
      updated_at: now,
      position: g + 1,
      description: null,
      showcase: false,
      start_date: null,
      group_id: null,
      page_id: pageId,
      group: true,
      only_show_if_degraded: false,
      components: members.map((member) => member.id),
    });
    components.push(...members);
  });
  const incident = (one: Incident) => {
    const iso = (ms: number) => new Date(ms).toISOString();
    const monitoring = one.updates.find((update) => update.status === 'monitoring');
    return {
      id: String(one.id),
      name: one.title,
      status: one.status,
      created_at: iso(one.createdAtMs),
      updated_at: iso(one.updatedAtMs),
      monitoring_at: monitoring === undefined ? null : iso(monitoring.atMs),
      resolved_at: one.resolvedAtMs === null ? null : iso(one.resolvedAtMs),
      impact: IMPACT[view.state],
      shortlink: `${pageUrl}#incident-${one.id}`,
      started_at: iso(one.createdAtMs),
      page_id: pageId,
      incident_updates: [...one.updates].reverse().map((update, u) => ({
        id: id('update', String(one.id), String(one.updates.length - 1 - u)),
        status: update.status,
        body: update.message,
        incident_id: String(one.id),
        created_at: iso(update.atMs),
        updated_at: iso(update.atMs),
        display_at: iso(update.atMs),
      })),
      components: [],
    };
  };
  return {
    page: { id: pageId, name: view.page.title, url: pageUrl, time_zone: 'Etc/UTC', updated_at: now },
    components,
    incidents: view.incidents.filter((one) => one.status !== 'resolved').map(incident),
    scheduled_maintenances: [],
    status: { indicator: INDICATOR[view.state], description: PAGE_WORDS[view.state] },
  };
}
