/**
 * A status page as HTML (docs/status-pages.md): readable without JavaScript (there is none), light or dark as the
 * reader's `prefers-color-scheme` says (theme.ts), its CSS inline so that the Content-Security-Policy can forbid
 * everything else; it reloads itself every 60 s (a meta refresh). Every text goes through `escapeHtml`, every URL was
 * checked when the page was written (branding.ts). Written as strings joined once: a page of 500 checks has 45,000
 * bars.
 */
import { type ComponentStatus, INDICATOR, PAGE_WORDS } from './components.ts';
import { escapeHtml as e } from './escape.ts';
import { footerHtml } from './footer.ts';
import type { INCIDENT_STATUSES } from './incidents.ts';
import type { StatusPage } from './page.ts';
import { pageCss } from './theme.ts';
import {
  type CheckState,
  type CheckView,
  DAYS,
  type EntryView,
  type IncidentView,
  levelOf,
  type PageView,
  type UpcomingMaintenance,
} from './view.ts';

/** Seconds between the page's reloads of itself. */
const REFRESH_S = 60;

const LEVEL: Record<string, string> = {
  none: 'operational',
  maintenance: 'maintenance',
  minor: 'minor',
  major: 'major',
  critical: 'critical',
};

const GROUP_WORDS: Record<ComponentStatus, string> = {
  operational: 'Operational',
  under_maintenance: 'Under maintenance',
  degraded_performance: 'Degraded performance',
  partial_outage: 'Partial outage',
  major_outage: 'Major outage',
};

const CHECK_WORDS: Record<CheckState, string> = {
  operational: 'Operational',
  degraded: 'Degraded performance',
  partial: 'Partial outage',
  down: 'Down',
  maintenance: 'Maintenance',
  paused: 'Paused',
  unknown: 'No data',
};

export const STATUS_WORDS: Record<(typeof INCIDENT_STATUSES)[number], string> = {
  investigating: 'Investigating',
  identified: 'Identified',
  monitoring: 'Monitoring',
  resolved: 'Resolved',
};

/** `2026-05-03T14:00:00Z` as `2026-05-03 14:00 UTC`: one time zone for every reader, said. */
function when(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A ratio as a percentage, floored to two decimals (so that 99.996 % with failed runs never reads 100 %). */
function percent(successes: number, runs: number): string {
  return successes === runs ? '100' : (Math.floor((successes / runs) * 10_000) / 100).toFixed(2);
}

/**
 * One day of one check, as small as it reads: a page of 500 checks has 45,000 of them, and their bytes are most of
 * the page's cost (docs/status-pages.md, "Scale"). The level is its class, the day and the figures are in its title.
 * `date` is written once per page rather than once per bar.
 */
function bar(date: string, runs: number, successes: number, maintenance: boolean): string {
  const level = levelOf(runs, successes, maintenance);
  // `</li>` is implied by the next `<li>` and by `</ol>` (HTML's optional end tags).
  if (runs === 0) return `<li class=${level} title="${date}: ${maintenance ? 'maintenance' : 'no data'}">`;
  if (maintenance)
    return `<li class="${level} m" title="${date}: ${percent(successes, runs)} % of ${runs} runs, maintenance excluded">`;
  return `<li class=${level} title="${date}: ${percent(successes, runs)} % of ${runs} runs">`;
}

function check(entry: EntryView, dates: readonly string[]): string {
  const { view } = entry;
  const uptime =
    view.runs === 0 ? `No runs over ${DAYS} days` : `${percent(view.successes, view.runs)} % uptime over ${DAYS} days`;
  const message = view.message === undefined ? '' : `<div class="message">${e(view.message)}</div>`;
  const description = entry.description === undefined ? '' : `<p class="description">${e(entry.description)}</p>`;
  return (
    `<li class="check" data-name="${e(entry.name)}" data-state="${view.state}"><div class="row"><span class="name">${e(entry.name)}</span><span class="state">${CHECK_WORDS[view.state]}</span></div>${description}${message}` +
    `<ol class="bars" aria-label="daily uptime, oldest first">${bars(view, dates)}</ol>` +
    `<div class="legend"><span>${DAYS} days ago</span><span class="uptime">${uptime}</span><span>today</span></div></li>`
  );
}

function bars(view: CheckView, dates: readonly string[]): string {
  let html = '';
  const { runs, successes } = view.days;
  for (let i = 0; i < DAYS; i++)
    html += bar(dates[i] as string, runs[i] as number, successes[i] as number, view.maintenance?.[i] === true);
  return html;
}

function incident({ incident: one, impact }: IncidentView): string {
  const updates = [...one.updates]
    .reverse()
    .map(
      (update) =>
        `<li><strong>${STATUS_WORDS[update.status]}</strong> <time datetime="${new Date(update.atMs).toISOString()}">${when(update.atMs)}</time><p>${e(update.message)}</p></li>`,
    )
    .join('');
  const shown = one.status === 'resolved' || impact === 'none' ? '' : `<span class="impact">${impact} impact</span>`;
  return `<article class="incident" id="incident-${one.id}" data-status="${one.status}" data-impact="${impact}"><h3>${e(one.title)}${shown}</h3><ol class="timeline">${updates}</ol></article>`;
}

function maintenance(window: UpcomingMaintenance, nowMs: number, names: ReadonlyMap<string, string>): string {
  const on = window.startMs <= nowMs;
  const checks = window.checks.map((check) => e(names.get(check) ?? check)).join(', ');
  return `<article class="incident" data-status="${on ? 'in_progress' : 'scheduled'}"><h3>${e(window.name)}</h3><p>${on ? 'In progress' : 'Scheduled'}: <time datetime="${new Date(window.startMs).toISOString()}">${when(window.startMs)}</time> to <time datetime="${new Date(window.endMs).toISOString()}">${when(window.endMs)}</time>. Affects ${checks}.</p></article>`;
}

/** The logo (its own route for a file), the title and description, linked to the homepage, on the accent. */
function header(page: StatusPage): string {
  const logo =
    page.logo === undefined
      ? ''
      : `<img src="${e(page.logo.startsWith('https://') ? page.logo : `/status/${page.slug}/logo`)}" alt="${e(page.title)} logo">`;
  const title = `${logo}<h1>${e(page.title)}</h1>`;
  const brand =
    page.homepage === undefined
      ? `<div class="brand">${title}</div>`
      : `<a class="brand" href="${e(page.homepage)}">${title}</a>`;
  const description = page.description === undefined ? '' : `<p class="description">${e(page.description)}</p>`;
  return `<header${page['accent-color'] === undefined ? '' : ' class="accent"'}>${brand}${description}</header>`;
}

function favicon(page: StatusPage): string {
  if (page.favicon === undefined) return '';
  const href = page.favicon.startsWith('https://') ? page.favicon : `/status/${page.slug}/favicon`;
  return `<link rel="icon" href="${e(href)}">`;
}

/**
 * The page's bytes, encoded a chunk at a time: held as one string, 45,000 bars are as many young strings alive
 * until the end, which the young generation copies at every scavenge; encoded every 64 KB, they die young.
 */
class Chunks {
  private readonly buffers: Buffer[] = [];
  private pending = '';

  push(text: string): void {
    this.pending += text;
    if (this.pending.length >= 65_536) {
      this.buffers.push(Buffer.from(this.pending));
      this.pending = '';
    }
  }

  toBuffer(): Buffer {
    this.buffers.push(Buffer.from(this.pending));
    return Buffer.concat(this.buffers);
  }
}

export function renderPage(view: PageView, subscribe: boolean): Buffer {
  const { page } = view;
  const dates = Array.from({ length: DAYS }, (_, i) =>
    new Date((view.firstDayS + i * 86_400) * 1000).toISOString().slice(0, 10),
  );
  const base = `/status/${page.slug}`;
  const open = view.incidents.filter((one) => one.incident.status !== 'resolved');
  const resolved = view.incidents.filter((one) => one.incident.status === 'resolved');
  const parts = new Chunks();
  for (const text of [
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><meta http-equiv="refresh" content="${REFRESH_S}">`,
    `<title>${e(page.title)}</title>${favicon(page)}<link rel="alternate" type="application/atom+xml" href="${base}/feed.atom" title="Incidents"><style>${pageCss(page['accent-color'])}</style></head><body><main>`,
    header(page),
    `<div class="banner" role="status" data-state="${view.state}" data-level="${LEVEL[INDICATOR[view.state]]}">${PAGE_WORDS[view.state]}</div>`,
  ])
    parts.push(text);
  if (open.length > 0)
    parts.push(`<section class="incidents open"><h2>Current incidents</h2>${open.map(incident).join('')}</section>`);
  if (view.maintenances.length > 0) {
    const names = new Map<string, string>();
    for (const group of view.groups) for (const entry of group.entries) names.set(entry.view.check, entry.name);
    parts.push(
      `<section class="incidents maintenance" id="maintenance"><h2>Maintenance</h2>${view.maintenances.map((window) => maintenance(window, view.nowMs, names)).join('')}</section>`,
    );
  }
  for (const group of view.groups) {
    parts.push(
      `<section class="group"><header><h2>${e(group.name)}</h2><span class="muted">${GROUP_WORDS[group.status]}</span></header><ul class="checks">`,
    );
    for (const one of group.entries) parts.push(check(one, dates));
    parts.push('</ul></section>');
  }
  if (resolved.length > 0)
    parts.push(
      `<section class="incidents resolved"><h2>Resolved in the last 7 days</h2>${resolved.map(incident).join('')}</section>`,
    );
  if (subscribe)
    parts.push(
      `<section class="subscribe-box"><h2>Get notified</h2><form class="subscribe" method="post" action="${base}/subscribe"><label for="email">E-mail</label><input id="email" name="email" type="email" required autocomplete="email" placeholder="you@example.com"><button type="submit">Subscribe</button></form><p class="muted">Incidents, their updates and maintenance, by e-mail. Or follow the <a href="${base}/feed.atom">Atom feed</a>.</p></section>`,
    );
  const custom = page.footer === undefined ? '' : `<p>${footerHtml(page.footer)}</p>`;
  parts.push(
    `<footer>${custom}<p>As of ${when(view.nowMs)}, refreshed every minute. Days are UTC; runs during maintenance count in no bar. <a href="${base}/feed.atom">Atom feed</a> · <a href="${base}/summary.json">summary.json</a></p></footer></main></body></html>`,
  );
  return parts.toBuffer();
}
