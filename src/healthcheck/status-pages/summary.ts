/**
 * `/status/<slug>/summary.json` in the shape and meaning of Atlassian Statuspage's v2 `summary.json`
 * (docs/status-pages.md, "summary.json"), so that tools reading Statuspage pages read Vigie's:
 * - each group is a component group, each of its entries a component: `created_at` the check's creation,
 *   `updated_at` its last change of state, `description` the entry's (null without one);
 * - `incidents`: the page's unresolved incidents, each with its impact (its own, else its checks') and, as
 *   `components`, the components of the checks it names;
 * - `scheduled_maintenances`: the maintenance windows covering some of the page's checks that are in progress or
 *   start within 7 days (one occurrence each), with the components they cover;
 * - `status`: the top-level indicator and words that Statuspage derives from the components (components.ts).
 * Ids are stable: derived from the slug, the group and the check name.
 */
import { createHash } from 'node:crypto';
import { INDICATOR, PAGE_WORDS } from './components.ts';
import { COMPONENT_STATUS, type IncidentView, type PageView, type UpcomingMaintenance } from './view.ts';

function id(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 12);
}

const iso = (ms: number) => new Date(ms).toISOString();

type Component = Record<string, unknown> & { id: string };

/** The components of the page, and those of each check by check name (a check listed twice has two). */
function components(view: PageView, pageId: string): { all: Component[]; byCheck: Map<string, Component[]> } {
  const all: Component[] = [];
  const byCheck = new Map<string, Component[]>();
  const now = iso(view.nowMs);
  view.groups.forEach((group, g) => {
    const groupId = id('group', view.page.slug, String(g), group.name);
    const members = group.entries.map((entry, c) => {
      const { view: check } = entry;
      const created = check.createdMs ?? check.sinceMs ?? view.nowMs;
      const member: Component = {
        id: id('component', view.page.slug, String(g), check.check),
        name: entry.name,
        status: COMPONENT_STATUS[check.state],
        created_at: iso(created),
        updated_at: iso(Math.max(created, check.sinceMs ?? created)),
        position: c + 1,
        description: entry.description ?? null,
        showcase: true,
        start_date: null,
        group_id: groupId,
        page_id: pageId,
        group: false,
        only_show_if_degraded: false,
      };
      byCheck.set(check.check, [...(byCheck.get(check.check) ?? []), member]);
      return member;
    });
    const times = (key: 'created_at' | 'updated_at') => members.map((member) => member[key] as string).sort();
    all.push({
      id: groupId,
      name: group.name,
      status: group.status,
      created_at: times('created_at')[0] ?? now,
      updated_at: times('updated_at').at(-1) ?? now,
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
    all.push(...members);
  });
  return { all, byCheck };
}

function componentsOf(checks: readonly string[], byCheck: ReadonlyMap<string, Component[]>): Component[] {
  return checks.flatMap((name) => byCheck.get(name) ?? []);
}

function incident(one: IncidentView, pageId: string, pageUrl: string, byCheck: ReadonlyMap<string, Component[]>) {
  const { incident: it } = one;
  const monitoring = it.updates.find((update) => update.status === 'monitoring');
  return {
    id: String(it.id),
    name: it.title,
    status: it.status,
    created_at: iso(it.createdAtMs),
    updated_at: iso(it.updatedAtMs),
    monitoring_at: monitoring === undefined ? null : iso(monitoring.atMs),
    resolved_at: it.resolvedAtMs === null ? null : iso(it.resolvedAtMs),
    impact: one.impact,
    shortlink: `${pageUrl}#incident-${it.id}`,
    started_at: iso(it.createdAtMs),
    page_id: pageId,
    incident_updates: [...it.updates].reverse().map((update, u) => ({
      id: id('update', String(it.id), String(it.updates.length - 1 - u)),
      status: update.status,
      body: update.message,
      incident_id: String(it.id),
      created_at: iso(update.atMs),
      updated_at: iso(update.atMs),
      display_at: iso(update.atMs),
    })),
    components: componentsOf(it.checks, byCheck),
  };
}

/** A window's occurrence as a Statuspage scheduled maintenance. Vigie keeps no time of writing for a window: its
 *  `created_at` and `updated_at` are the occurrence's start. */
function maintenance(
  window: UpcomingMaintenance,
  view: PageView,
  pageId: string,
  pageUrl: string,
  byCheck: ReadonlyMap<string, Component[]>,
) {
  const maintenanceId = id('maintenance', view.page.slug, window.name, String(window.startMs));
  const status = window.startMs <= view.nowMs ? 'in_progress' : 'scheduled';
  const start = iso(window.startMs);
  return {
    id: maintenanceId,
    name: window.name,
    status,
    created_at: start,
    updated_at: start,
    monitoring_at: null,
    resolved_at: null,
    impact: 'maintenance',
    shortlink: `${pageUrl}#maintenance`,
    started_at: start,
    page_id: pageId,
    incident_updates: [
      {
        id: id('maintenance-update', maintenanceId),
        status,
        body: `Maintenance from ${start} to ${iso(window.endMs)}.`,
        incident_id: maintenanceId,
        created_at: start,
        updated_at: start,
        display_at: start,
      },
    ],
    components: componentsOf(window.checks, byCheck),
    scheduled_for: start,
    scheduled_until: iso(window.endMs),
  };
}

export function summaryJson(view: PageView, pageUrl: string): Record<string, unknown> {
  const pageId = id('page', view.page.slug);
  const { all, byCheck } = components(view, pageId);
  return {
    page: { id: pageId, name: view.page.title, url: pageUrl, time_zone: 'Etc/UTC', updated_at: iso(view.nowMs) },
    components: all,
    incidents: view.incidents
      .filter((one) => one.incident.status !== 'resolved')
      .map((one) => incident(one, pageId, pageUrl, byCheck)),
    scheduled_maintenances: view.maintenances.map((window) => maintenance(window, view, pageId, pageUrl, byCheck)),
    status: { indicator: INDICATOR[view.state], description: PAGE_WORDS[view.state] },
  };
}
