/**
 * What a status page shows, computed once per request and rendered three ways (HTML, summary.json, Atom): each
 * group's entries with their check's current state and 90 daily bars, the state of each group and of the page, the
 * incidents, and the maintenance windows in progress or coming within 7 days. One query reads the daily aggregates
 * of every check of the page; nothing is read check by check.
 *
 * A check is `paused` while paused, `maintenance` when its latest result fell in a window or a window covers it now,
 * else from its state (docs/checks.md, "States"): `down` (`partial` for a check with locations failing on fewer of
 * them than all), `degraded`, or `operational` (up, and pending: failing fewer times than its failure-threshold);
 * `unknown` before its first run, or when the check was deleted since the page was written. What the page and its
 * groups are follows from their checks as Statuspage's components (components.ts).
 */
import { covers, type MaintenanceWindow, occurrence } from '../maintenance/maintenance.ts';
import type { CheckResult } from '../result-types.ts';
import type { CheckState as StateName } from '../state-names.ts';
import type { DailySeries } from '../results/uptime-periods.ts';
import { type ComponentStatus, impactOf, type Impact, type PageState, topLevel, worst } from './components.ts';
import type { Incident } from './incidents.ts';
import { entryCheck, type StatusGroup, type StatusPage } from './page.ts';

export const DAYS = 90;
const DAY_S = 86_400;
const DAY_MS = DAY_S * 1000;
/** Resolved incidents stay on the page this long. */
export const RECENT_INCIDENTS_MS = 7 * DAY_MS;

/** Windows starting within this are listed as scheduled maintenance. */
const UPCOMING_MS = 7 * DAY_MS;

export type CheckState = 'operational' | 'degraded' | 'partial' | 'down' | 'maintenance' | 'paused' | 'unknown';

export const COMPONENT_STATUS: Record<CheckState, ComponentStatus> = {
  operational: 'operational',
  unknown: 'operational',
  degraded: 'degraded_performance',
  partial: 'partial_outage',
  down: 'major_outage',
  maintenance: 'under_maintenance',
  paused: 'under_maintenance',
};
type BarLevel = 'up' | 'ok' | 'warn' | 'down' | 'maintenance' | 'none';

/** What a page shows of one check, wherever it is listed. */
export interface CheckView {
  /** The check's name. */
  check: string;
  state: CheckState;
  /** When its state last changed (ms); null when unknown. */
  sinceMs: number | null;
  /** When the check was created (ms); null when unknown. */
  createdMs: number | null;
  /** The latest result's message when down, to a reader who may see it. */
  message?: string;
  /** Runs and successes of each of the `DAYS` days, oldest first (arrays: a page of 500 checks has 45,000 days). */
  days: DailySeries;
  /** Per day: a maintenance window the calendar still knows covered part of it; null when none did. */
  maintenance: boolean[] | null;
  runs: number;
  successes: number;
}

/** One entry of a group: the name and description its readers see, and its check. */
export interface EntryView {
  name: string;
  description?: string;
  view: CheckView;
}

interface GroupView {
  name: string;
  status: ComponentStatus;
  entries: EntryView[];
}

/** A maintenance window's occurrence in progress or starting within 7 days, with the page's checks it covers. */
export interface UpcomingMaintenance {
  name: string;
  startMs: number;
  endMs: number;
  checks: string[];
}

export interface IncidentView {
  incident: Incident;
  /** Its own impact, else its checks'. */
  impact: Impact;
}

export interface PageView {
  page: StatusPage;
  state: PageState;
  groups: GroupView[];
  incidents: IncidentView[];
  maintenances: UpcomingMaintenance[];
  nowMs: number;
  /** The start of the oldest day shown, unix seconds (UTC). */
  firstDayS: number;
}

/** What the view reads of the healthcheck part. */
export interface StatusSource {
  /** Every check with its labels, by name order. */
  checks(): Iterable<{ name: string; labels: Readonly<Record<string, string>> }>;
  labelsOf(name: string): Readonly<Record<string, string>> | undefined;
  latest(name: string): CheckResult | undefined;
  /** The check's state (docs/checks.md, "States"); undefined for an unknown check. */
  state(name: string): StateName | undefined;
  /** When the check's state last changed (ms). */
  stateSince(name: string): number | undefined;
  /** When the check was created (ms). */
  createdAt(name: string): number | undefined;
  inMaintenance(name: string, labels: Readonly<Record<string, string>>): boolean;
  windows(): readonly MaintenanceWindow[];
  dailyRuns(names: readonly string[], sinceS: number, days: number): Map<string, DailySeries>;
}

type Member = { name: string; labels: Readonly<Record<string, string>>; shown?: string; description?: string };

/** The checks of each group, in its order: named ones as listed, labelled ones by name (every check listed once
 *  for all the groups by labels). */
function membersOf(groups: readonly StatusGroup[], source: StatusSource): Member[][] {
  let all: Member[] | undefined;
  return groups.map((group) => {
    if (group.checks !== undefined)
      return group.checks.map((entry) => {
        const name = entryCheck(entry);
        const member: Member = { name, labels: source.labelsOf(name) ?? {} };
        if (typeof entry !== 'string' && entry.name !== undefined) member.shown = entry.name;
        if (typeof entry !== 'string' && entry.description !== undefined) member.description = entry.description;
        return member;
      });
    const wanted = Object.entries(group.labels ?? {});
    all ??= [...source.checks()];
    return all.filter((check) => wanted.every(([key, value]) => check.labels[key] === value));
  });
}

export function levelOf(runs: number, successes: number, maintenance: boolean): BarLevel {
  if (runs === 0) return maintenance ? 'maintenance' : 'none';
  const ratio = successes / runs;
  return ratio === 1 ? 'up' : ratio >= 0.99 ? 'ok' : ratio >= 0.95 ? 'warn' : 'down';
}

/**
 * Which of the `DAYS` days from `firstDayS` each window touched, up to `nowMs`. A window repeating at least daily
 * touches every day from its first occurrence; others are walked occurrence by occurrence (at most a few hundred).
 */
function windowDays(
  windows: readonly MaintenanceWindow[],
  firstDayS: number,
  nowMs: number,
): Map<MaintenanceWindow, boolean[]> {
  const firstMs = firstDayS * 1000;
  const touched = new Map<MaintenanceWindow, boolean[]>();
  for (const window of windows) {
    if (window.startMs > nowMs) continue;
    const days: boolean[] = new Array<boolean>(DAYS).fill(false);
    const mark = (startMs: number, endMs: number) => {
      const from = Math.max(0, Math.floor((startMs - firstMs) / DAY_MS));
      const to = Math.min(DAYS - 1, Math.floor((Math.min(endMs, nowMs) - 1 - firstMs) / DAY_MS));
      for (let day = from; day <= to; day++) days[day] = true;
    };
    if (window.everyMs > 0 && window.everyMs <= DAY_MS) mark(window.startMs, nowMs + 1);
    else if (window.everyMs === 0) mark(window.startMs, window.startMs + window.durationMs);
    else {
      const skip = Math.max(0, Math.floor((firstMs - window.durationMs - window.startMs) / window.everyMs));
      for (let startMs = window.startMs + skip * window.everyMs; startMs <= nowMs; startMs += window.everyMs)
        mark(startMs, startMs + window.durationMs);
    }
    if (days.includes(true)) touched.set(window, days);
  }
  return touched;
}

/** A check's state on a page (see the module's comment). */
function checkState(name: string, labels: Readonly<Record<string, string>>, source: StatusSource): CheckState {
  if (source.labelsOf(name) === undefined) return 'unknown';
  const state = source.state(name);
  if (state === 'paused') return 'paused';
  const latest = source.latest(name);
  if (latest?.maintenance === true || source.inMaintenance(name, labels)) return 'maintenance';
  if (latest === undefined) return 'unknown';
  if (state === 'degraded') return 'degraded';
  if (state !== 'down') return 'operational';
  // A check run from several places (docs/checks.md "Locations"), down while some of them still succeed.
  const located = latest.locations?.filter((location) => location.success !== undefined) ?? [];
  const failing = located.filter((location) => location.success === false).length;
  return located.length > 0 && failing < located.length ? 'partial' : 'down';
}

/** The occurrences of windows covering some of `checks` that are on now or start within 7 days. */
function upcoming(windows: readonly MaintenanceWindow[], checks: readonly Member[], nowMs: number) {
  const found: UpcomingMaintenance[] = [];
  for (const window of windows) {
    const next = occurrence(window, nowMs);
    if (next === null || next.startMs > nowMs + UPCOMING_MS) continue;
    const covered = checks.filter((check) => covers(window, check.name, check.labels)).map((check) => check.name);
    if (covered.length > 0) found.push({ name: window.name, ...next, checks: covered });
  }
  return found.sort((a, b) => a.startMs - b.startMs || (a.name < b.name ? -1 : 1));
}

/**
 * `messages`: whether the reader may see the failure messages, which name targets, internal hosts, what a remote
 * server or a command wrote (docs/hardening.md, "Public pages and badges").
 */
export function buildView(
  page: StatusPage,
  source: StatusSource,
  incidents: Incident[],
  nowMs: number,
  messages: boolean,
): PageView {
  const todayS = Math.floor(nowMs / 1000 / DAY_S) * DAY_S;
  const firstDayS = todayS - (DAYS - 1) * DAY_S;
  const memberLists = membersOf(page.groups, source);
  const unique = new Map<string, Member>();
  for (const members of memberLists) for (const member of members) unique.set(member.name, member);
  const daily = source.dailyRuns([...unique.keys()], firstDayS, DAYS);
  const windows = windowDays(source.windows(), firstDayS, nowMs);
  const views = new Map<string, CheckView>();
  const viewOf = (name: string, labels: Readonly<Record<string, string>>): CheckView => {
    let view = views.get(name);
    if (view !== undefined) return view;
    let maintenance: boolean[] | null = null;
    for (const [window, days] of windows) {
      if (!covers(window, name, labels)) continue;
      maintenance ??= new Array<boolean>(DAYS).fill(false);
      for (let i = 0; i < DAYS; i++) if (days[i]) maintenance[i] = true;
    }
    const days = daily.get(name) as DailySeries;
    let runs = 0;
    let successes = 0;
    for (let i = 0; i < DAYS; i++) {
      runs += days.runs[i] as number;
      successes += days.successes[i] as number;
    }
    const state = checkState(name, labels, source);
    view = {
      check: name,
      state,
      sinceMs: source.stateSince(name) ?? null,
      createdMs: source.createdAt(name) ?? null,
      days,
      maintenance,
      runs,
      successes,
    };
    const latest = source.latest(name);
    if (messages && (state === 'down' || state === 'partial') && latest !== undefined && !latest.success)
      view.message = latest.message;
    views.set(name, view);
    return view;
  };
  const groups = page.groups.map((group, i) => {
    const entries = (memberLists[i] as Member[]).map((member) => {
      const entry: EntryView = { name: member.shown ?? member.name, view: viewOf(member.name, member.labels) };
      if (member.description !== undefined) entry.description = member.description;
      return entry;
    });
    return { name: group.name, status: worst(entries.map((entry) => COMPONENT_STATUS[entry.view.state])), entries };
  });
  const statusOf = (name: string) =>
    COMPONENT_STATUS[views.get(name)?.state ?? checkState(name, source.labelsOf(name) ?? {}, source)];
  return {
    page,
    state: topLevel([...views.values()].map((view) => COMPONENT_STATUS[view.state])),
    groups,
    incidents: incidents.map((incident) => ({
      incident,
      impact: impactOf(incident.impact, incident.checks.map(statusOf)),
    })),
    maintenances: upcoming(source.windows(), [...unique.values()], nowMs),
    nowMs,
    firstDayS,
  };
}

/** Whether an incident is shown on a page: it names the page (one that names none is internal: the dashboard's). */
export function concerns(page: StatusPage): (incident: { pages: unknown }) => boolean {
  return (incident) => (incident.pages as string[]).includes(page.slug);
}

/** Every check a page shows, once, with its labels and the name the page gives it. */
export function shownChecks(
  page: StatusPage,
  source: StatusSource,
): { name: string; labels: Readonly<Record<string, string>>; shown: string }[] {
  const unique = new Map<string, { name: string; labels: Readonly<Record<string, string>>; shown: string }>();
  for (const members of membersOf(page.groups, source))
    for (const member of members)
      if (!unique.has(member.name))
        unique.set(member.name, { name: member.name, labels: member.labels, shown: member.shown ?? member.name });
  return [...unique.values()];
}

/** The names of the checks each group of a page shows. */
export function groupMembers(page: StatusPage, source: StatusSource): string[][] {
  return membersOf(page.groups, source).map((members) => members.map((member) => member.name));
}

const namedIn = new WeakMap<StatusGroup, Set<string>>();

/** Whether a page shows the check `name` of `labels` (a group names it, or has labels it all has). */
export function pageShows(page: StatusPage, name: string, labels: Readonly<Record<string, string>>): boolean {
  return page.groups.some((group) => {
    if (group.checks !== undefined) {
      let names = namedIn.get(group);
      if (names === undefined) namedIn.set(group, (names = new Set(group.checks.map(entryCheck))));
      return names.has(name);
    }
    return Object.entries(group.labels ?? {}).every(([key, value]) => labels[key] === value);
  });
}
