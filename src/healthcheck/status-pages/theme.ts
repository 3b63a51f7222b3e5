/**
 * The page's colours and CSS, light and dark as the reader's `prefers-color-scheme` says. Every text colour is
 * chosen to read at 4.5:1 at least (WCAG AA) on the background it is written on, in both themes:
 * `test/healthcheck/status-pages/components.test.ts` computes each pair from `PALETTES`. The banner's text is white on
 * a fill dark enough for it in both themes (the dark theme's brighter greens and reds are for text on its dark cards,
 * not for fills under white text). The company's accent colour gets black or white text, whichever reads better.
 */
import { textOn } from './contrast.ts';

export interface Palette {
  bg: string;
  card: string;
  fg: string;
  muted: string;
  line: string;
  link: string;
  /** Text of the check states, on `card`. */
  up: string;
  warn: string;
  partial: string;
  down: string;
  maint: string;
  /** The day bars (graphics, not text). */
  barOk: string;
  barNone: string;
}

export const PALETTES: { light: Palette; dark: Palette } = {
  light: {
    bg: '#f6f8fa',
    card: '#ffffff',
    fg: '#1f2328',
    muted: '#59636e',
    line: '#d1d9e0',
    link: '#0969da',
    up: '#1a7f37',
    warn: '#9a6700',
    partial: '#bc4c00',
    down: '#cf222e',
    maint: '#0969da',
    barOk: '#4ac26b',
    barNone: '#d1d9e0',
  },
  dark: {
    bg: '#0d1117',
    card: '#161b22',
    fg: '#e6edf3',
    muted: '#9198a1',
    line: '#30363d',
    link: '#4493f8',
    up: '#3fb950',
    warn: '#d29922',
    partial: '#f0883e',
    down: '#f85149',
    maint: '#4493f8',
    barOk: '#56d364',
    barNone: '#30363d',
  },
};

/** The banner's fills, under white text, in both themes. */
export const BANNER_FILLS: Record<'operational' | 'maintenance' | 'minor' | 'major' | 'critical', string> = {
  operational: '#1a7f37',
  maintenance: '#0969da',
  minor: '#9a6700',
  major: '#bc4c00',
  critical: '#cf222e',
};

function variables(palette: Palette): string {
  return Object.entries(palette)
    .map(([key, value]) => `--${key}:${value}`)
    .join(';');
}

const BANNERS = Object.entries(BANNER_FILLS)
  .map(([level, fill]) => `.banner[data-level=${level}]{background:${fill}}`)
  .join('');

const BASE = `
:root{color-scheme:light dark;${variables(PALETTES.light)}}
@media (prefers-color-scheme:dark){:root{${variables(PALETTES.dark)}}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:56rem;margin:0 auto;padding:1.5rem 1rem 3rem}h1{font-size:1.6rem;margin:.25rem 0;overflow-wrap:anywhere}h2{font-size:1.15rem;margin:0}
.description,.muted,footer{color:var(--muted)}a{color:var(--link)}
.brand{display:flex;align-items:center;gap:1rem;flex-wrap:wrap}.brand img{max-height:3rem;max-width:12rem;height:auto}
a.brand{color:inherit;text-decoration:none}a.brand:hover h1{text-decoration:underline}.accent{padding:1rem 1.25rem;border-radius:.5rem;background:var(--accent);color:var(--on-accent)}
.accent .description,.accent a{color:var(--on-accent)}
.banner{margin:1.25rem 0;padding:1rem 1.25rem;border-radius:.5rem;color:#fff;font-weight:600;font-size:1.1rem}${BANNERS}
section{background:var(--card);border:1px solid var(--line);border-radius:.5rem;margin:1rem 0;padding:1rem 1.25rem}
.group>header{display:flex;justify-content:space-between;gap:1rem;align-items:baseline;flex-wrap:wrap}
.checks{list-style:none;margin:0;padding:0}.check{padding:.75rem 0;border-top:1px solid var(--line)}.check:first-child{border-top:0}
.row{display:flex;justify-content:space-between;gap:1rem}.name{font-weight:600;overflow-wrap:anywhere}.check .description{margin:0;font-size:.9rem;overflow-wrap:anywhere}
.state{white-space:nowrap}
[data-state=operational]>.row .state{color:var(--up)}[data-state=degraded]>.row .state{color:var(--warn)}[data-state=partial]>.row .state{color:var(--partial)}[data-state=down]>.row .state{color:var(--down)}[data-state=maintenance]>.row .state{color:var(--maint)}[data-state=paused]>.row .state,[data-state=unknown]>.row .state{color:var(--muted)}
.bars{display:flex;gap:2px;list-style:none;margin:.4rem 0 .2rem;padding:0;height:2rem}
.bars>li{flex:1;border-radius:2px;background:var(--barNone)}.bars>.up{background:var(--up)}.bars>.ok{background:var(--barOk)}
.bars>.warn{background:var(--warn)}.bars>.down{background:var(--down)}.bars>.maintenance{background:var(--maint)}.bars>.m{box-shadow:inset 0 -5px 0 var(--maint)}
.legend{display:flex;justify-content:space-between;font-size:.8rem;color:var(--muted)}
.incident{border-top:1px solid var(--line);padding:.75rem 0}.incident:first-of-type{border-top:0}.incident h3{margin:0;font-size:1rem;overflow-wrap:anywhere}
.timeline{list-style:none;margin:.4rem 0 0;padding:0}.timeline li{margin:.3rem 0}.timeline p{margin:.1rem 0;white-space:pre-wrap;overflow-wrap:anywhere}
.incident>p{margin:.3rem 0 0}.incident[data-status=resolved] h3{color:var(--muted)}.message{color:var(--down);font-size:.85rem;overflow-wrap:anywhere}
.impact{font-size:.8rem;font-weight:600;color:var(--muted);text-transform:uppercase;margin-left:.5rem}
.subscribe{display:flex;gap:.5rem;flex-wrap:wrap;align-items:center}.subscribe input{flex:1;min-width:12rem;padding:.4rem;font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--muted);border-radius:.3rem}
.subscribe button{padding:.4rem .9rem;font:inherit;font-weight:600;color:#fff;background:${BANNER_FILLS.maintenance};border:0;border-radius:.3rem}
footer p{margin:.3rem 0;overflow-wrap:anywhere;white-space:pre-line}
@media (max-width:30rem){main{padding:1rem .6rem 2rem}.bars{gap:1px}section{padding:.8rem}}
`;

/** The page's CSS; `accent`, a checked `#rrggbb`, only ever reaches it through the custom properties. */
export function pageCss(accent: string | undefined): string {
  return accent === undefined ? BASE : `${BASE}:root{--accent:${accent};--on-accent:${textOn(accent)}}`;
}
