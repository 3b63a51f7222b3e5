/**
 * A status page as HTML (docs/status-pages.md): readable without JavaScript (there is none), light or dark as the
 * reader's `prefers-color-scheme` says, its CSS inline so that the Content-Security-Policy can forbid everything
 * else. Every text goes through `escapeHtml`. Written as strings joined once: a page of 500 checks has 45,000 bars.
 */
import { escapeHtml as e } from './escape.ts';
import type { INCIDENT_STATUSES, Incident } from './incidents.ts';
import { type CheckState, type CheckView, DAYS, levelOf, type PageState, type PageView } from './view.ts';

export const PAGE_WORDS: Record<PageState, string> = {
  operational: 'All systems operational',
  degraded: 'Degraded service',
  'partial-outage': 'Partial outage',
  'major-outage': 'Major outage',
  maintenance: 'Under maintenance',
};

const CHECK_WORDS: Record<CheckState, string> = {
  operational: 'Operational',
  degraded: 'Degraded performance',
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

const CSS = `
:root{color-scheme:light dark;--bg:#f7f7f8;--fg:#1f2328;--muted:#59636e;--card:#fff;--line:#d8dee4;--up:#1a7f37;--ok:#4ac26b;--warn:#d29922;--down:#cf222e;--maint:#0969da;--none:#d8dee4}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--card:#161b22;--line:#30363d;--up:#2ea043;--ok:#56d364;--warn:#d29922;--down:#f85149;--maint:#4493f8;--none:#30363d}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:56rem;margin:0 auto;padding:1.5rem 1rem 3rem}h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.15rem;margin:0}
.description,.muted,footer{color:var(--muted)}a{color:var(--maint)}
.banner{margin:1.25rem 0;padding:1rem 1.25rem;border-radius:.5rem;color:#fff;font-weight:600;font-size:1.1rem}
.banner[data-state=operational]{background:var(--up)}.banner[data-state=degraded]{background:var(--warn)}
.banner[data-state=partial-outage]{background:#bc4c00}.banner[data-state=major-outage]{background:var(--down)}.banner[data-state=maintenance]{background:var(--maint)}
section{background:var(--card);border:1px solid var(--line);border-radius:.5rem;margin:1rem 0;padding:1rem 1.25rem}
.group>header{display:flex;justify-content:space-between;gap:1rem;align-items:baseline}
.checks{list-style:none;margin:0;padding:0}.check{padding:.75rem 0;border-top:1px solid var(--line)}.check:first-child{border-top:0}
.row{display:flex;justify-content:space-between;gap:1rem}.name{font-weight:600;overflow-wrap:anywhere}
[data-state=operational]>.row .state{color:var(--up)}[data-state=degraded]>.row .state{color:var(--warn)}[data-state=down]>.row .state{color:var(--down)}[data-state=maintenance]>.row .state{color:var(--maint)}[data-state=paused]>.row .state,[data-state=unknown]>.row .state{color:var(--muted)}
.bars{display:flex;gap:2px;list-style:none;margin:.4rem 0 .2rem;padding:0;height:2rem}
.bars>li{flex:1;border-radius:2px;background:var(--none)}.bars>.up{background:var(--up)}.bars>.ok{background:var(--ok)}
.bars>.warn{background:var(--warn)}.bars>.down{background:var(--down)}.bars>.maintenance{background:var(--maint)}.bars>.m{box-shadow:inset 0 -5px 0 var(--maint)}
.legend{display:flex;justify-content:space-between;font-size:.8rem;color:var(--muted)}
.incident{border-top:1px solid var(--line);padding:.75rem 0}.incident:first-of-type{border-top:0}.incident h3{margin:0;font-size:1rem}
.timeline{list-style:none;margin:.4rem 0 0;padding:0}.timeline li{margin:.3rem 0}.timeline p{margin:.1rem 0;white-space:pre-wrap;overflow-wrap:anywhere}
.incident[data-status=resolved] h3{color:var(--muted)}.message{color:var(--down);font-size:.85rem;overflow-wrap:anywhere}
`;

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

function check(view: CheckView, dates: readonly string[]): string {
  const uptime =
    view.runs === 0 ? `No runs over ${DAYS} days` : `${percent(view.successes, view.runs)} % uptime over ${DAYS} days`;
  const message = view.message === undefined ? '' : `<div class="message">${e(view.message)}</div>`;
  return (
    `<li class="check" data-name="${e(view.name)}" data-state="${view.state}"><div class="row"><span class="name">${e(view.name)}</span><span class="state">${CHECK_WORDS[view.state]}</span></div>${message}` +
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

function incident(one: Incident): string {
  const updates = [...one.updates]
    .reverse()
    .map(
      (update) =>
        `<li><strong>${STATUS_WORDS[update.status]}</strong> <time datetime="${new Date(update.atMs).toISOString()}">${when(update.atMs)}</time><p>${e(update.message)}</p></li>`,
    )
    .join('');
  return `<article class="incident" id="incident-${one.id}" data-status="${one.status}"><h3>${e(one.title)}</h3><ol class="timeline">${updates}</ol></article>`;
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

export function renderPage(view: PageView): Buffer {
  const { page } = view;
  const dates = Array.from({ length: DAYS }, (_, i) =>
    new Date((view.firstDayS + i * 86_400) * 1000).toISOString().slice(0, 10),
  );
  const feed = `/status/${page.slug}/feed.atom`;
  const open = view.incidents.filter((one) => one.status !== 'resolved');
  const resolved = view.incidents.filter((one) => one.status === 'resolved');
  const parts = new Chunks();
  for (const text of [
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">`,
    `<title>${e(page.title)}</title><link rel="alternate" type="application/atom+xml" href="${feed}" title="Incidents"><style>${CSS}</style></head><body><main>`,
    `<header><h1>${e(page.title)}</h1>${page.description === undefined ? '' : `<p class="description">${e(page.description)}</p>`}</header>`,
    `<div class="banner" role="status" data-state="${view.state}">${PAGE_WORDS[view.state]}</div>`,
  ])
    parts.push(text);
  if (open.length > 0)
    parts.push(`<section class="incidents open"><h2>Current incidents</h2>${open.map(incident).join('')}</section>`);
  for (const group of view.groups) {
    parts.push(
      `<section class="group"><header><h2>${e(group.name)}</h2><span class="muted">${PAGE_WORDS[group.state]}</span></header><ul class="checks">`,
    );
    for (const one of group.checks) parts.push(check(one, dates));
    parts.push('</ul></section>');
  }
  if (resolved.length > 0)
    parts.push(
      `<section class="incidents resolved"><h2>Resolved in the last 7 days</h2>${resolved.map(incident).join('')}</section>`,
    );
  parts.push(
    `<footer>As of ${when(view.nowMs)}. Days are UTC; runs during maintenance count in no bar. <a href="${feed}">Atom feed</a> · <a href="/status/${page.slug}/summary.json">summary.json</a></footer></main></body></html>`,
  );
  return parts.toBuffer();
}
