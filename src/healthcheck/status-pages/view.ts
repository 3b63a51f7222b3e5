/**
 * What a status page shows, computed once per request and rendered three ways (HTML, summary.json, Atom): each
 * group's checks with their current state and 90 daily bars, the state of each group and of the page, and the
 * incidents. One query reads the daily aggregates of every check of the page; nothing is read check by check.
 *
 * States (docs/status-pages.md, "States"): a check is `paused` while paused, `maintenance` when its latest result
 * fell in a window or a window covers it now, else from its state (docs/checks.md, "States"): `down`, `degraded`, or
 * `operational` (up, and pending: failing fewer times than its failure-threshold); `unknown` before its first run
 * (or when no such check exists). A group or page with nothing down is `degraded` when a check is, else
 * `maintenance` when a check is in maintenance or paused; otherwise, of the checks that are operational, degraded or
 * down, under a quarter down is `degraded`, under half `partial-outage`, half or more `major-outage`.
 */
import { covers, type MaintenanceWindow } from '../maintenance.ts';
import type { CheckResult } from '../result-types.ts';
import type { CheckState as StateName } from '../states/names.ts';
import type { DailySeries } from '../uptime-periods.ts';
import type { Incident } from './incidents.ts';
import type { StatusGroup, StatusPage } from './page.ts';

export const DAYS = 90;
const DAY_S = 86_400;
const DAY_MS = DAY_S * 1000;
/** Resolved incidents stay on the page this long. */
export const RECENT_INCIDENTS_MS = 7 * DAY_MS;

export type CheckState = 'operational' | 'degraded' | 'down' | 'maintenance' | 'paused' | 'unknown';
export type PageState = 'operational' | 'degraded' | 'partial-outage' | 'major-outage' | 'maintenance';
type BarLevel = 'up' | 'ok' | 'warn' | 'down' | 'maintenance' | 'none';

export interface CheckView {
  name: string;
  state: CheckState;
  /** The latest result's message when down, to a reader who may see it. */
  message?: string;
  /** Runs and successes of each of the `DAYS` days, oldest first (arrays: a page of 500 checks has 45,000 days). */
  days: DailySeries;
  /** Per day: a maintenance window the calendar still knows covered part of it; null when none did. */
  maintenance: boolean[] | null;
  runs: number;
  successes: number;
}

interface GroupView {
  name: string;
  state: PageState;
  checks: CheckView[];
}

export interface PageView {
  page: StatusPage;
  state: PageState;
  groups: GroupView[];
  incidents: Incident[];
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
  inMaintenance(name: string, labels: Readonly<Record<string, string>>): boolean;
  windows(): readonly MaintenanceWindow[];
  dailyRuns(names: readonly string[], sinceS: number, days: number): Map<string, DailySeries>;
}

type Member = { name: string; labels: Readonly<Record<string, string>> };

/** The checks of each group, in its order: named ones as listed, labelled ones by name (every check listed once
 *  for all the groups by labels). */
function membersOf(groups: readonly StatusGroup[], source: StatusSource): Member[][] {
  let all: Member[] | undefined;
  return groups.map((group) => {
    if (group.checks !== undefined) return group.checks.map((name) => ({ name, labels: source.labelsOf(name) ?? {} }));
    const wanted = Object.entries(group.labels ?? {});
    all ??= [...source.checks()];
    return all.filter((check) => wanted.every(([key, value]) => check.labels[key] === value));
  });
}

function stateOf(states: readonly CheckState[]): PageState {
  let down = 0;
  let known = 0;
  let degraded = false;
  let maintenance = false;
  for (const state of states) {
    if (state === 'down') down++;
    if (state === 'down' || state === 'operational' || state === 'degraded') known++;
    if (state === 'degraded') degraded = true;
    if (state === 'maintenance' || state === 'paused') maintenance = true;
  }
  if (down === 0) return degraded ? 'degraded' : maintenance ? 'maintenance' : 'operational';
  const share = down / known;
  return share < 0.25 ? 'degraded' : share < 0.5 ? 'partial-outage' : 'major-outage';
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
  const groups = page.groups.map((group, i) => ({ group, members: memberLists[i] as Member[] }));
  const names = [...new Set(groups.flatMap(({ members }) => members.map((member) => member.name)))];
  const daily = source.dailyRuns(names, firstDayS, DAYS);
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
    const latest = source.latest(name);
    const known = source.labelsOf(name) !== undefined;
    const checkState = known ? source.state(name) : undefined;
    let state: CheckState = 'unknown';
    if (checkState === 'paused') state = 'paused';
    else if (known && (latest?.maintenance === true || source.inMaintenance(name, labels))) state = 'maintenance';
    else if (known && latest !== undefined)
      state = checkState === 'down' ? 'down' : checkState === 'degraded' ? 'degraded' : 'operational';
    view = { name, state, days, maintenance, runs, successes };
    if (messages && state === 'down' && latest !== undefined && !latest.success) view.message = latest.message;
    views.set(name, view);
    return view;
  };
  const groupViews = groups.map(({ group, members }) => {
    const checks = members.map((member) => viewOf(member.name, member.labels));
    return { name: group.name, state: stateOf(checks.map((check) => check.state)), checks };
  });
  return {
    page,
    state: stateOf([...views.values()].map((view) => view.state)),
    groups: groupViews,
    incidents,
    nowMs,
    firstDayS,
  };
}

/** Whether an incident is shown on a page: it names the page, or one of the page's checks. */
export function concerns(
  page: StatusPage,
  checkNames: ReadonlySet<string>,
): (incident: { pages: unknown; checks: unknown }) => boolean {
  return (incident) =>
    (incident.pages as string[]).includes(page.slug) ||
    (incident.checks as string[]).some((name) => checkNames.has(name));
}

/** The names of every check a page shows. */
export function pageCheckNames(page: StatusPage, source: StatusSource): Set<string> {
  return new Set(membersOf(page.groups, source).flatMap((members) => members.map((member) => member.name)));
}

const namedIn = new WeakMap<StatusGroup, Set<string>>();

/** Whether a page shows the check `name` of `labels` (a group names it, or has labels it all has). */
export function pageShows(page: StatusPage, name: string, labels: Readonly<Record<string, string>>): boolean {
  return page.groups.some((group) => {
    if (group.checks !== undefined) {
      let names = namedIn.get(group);
      if (names === undefined) namedIn.set(group, (names = new Set(group.checks)));
      return names.has(name);
    }
    return Object.entries(group.labels ?? {}).every(([key, value]) => labels[key] === value);
  });
}
