/**
 * What a page derives from its checks as Statuspage does from components (docs/status-pages.md, "States"): the
 * top-level status by Statuspage's rules, an incident's impact, a located check failing on some of its locations
 * only as `partial_outage`; and the palette's texts at 4.5:1 at least in both themes (WCAG AA).
 */
import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../../../src/healthcheck/result-types.ts';
import { type ComponentStatus, impactOf, topLevel } from '../../../src/healthcheck/status-pages/components.ts';
import { contrast, textOn } from '../../../src/healthcheck/status-pages/contrast.ts';
import { BANNER_FILLS, PALETTES } from '../../../src/healthcheck/status-pages/theme.ts';
import { buildView, type StatusSource } from '../../../src/healthcheck/status-pages/view.ts';

describe("Statuspage's top-level status", () => {
  const cases: [ComponentStatus[], string][] = [
    [[], 'operational'],
    [['operational', 'operational'], 'operational'],
    [['operational', 'under_maintenance'], 'maintenance'],
    [['operational', 'degraded_performance'], 'partially-degraded'],
    [['degraded_performance', 'degraded_performance'], 'degraded'],
    [['operational', 'partial_outage'], 'minor-outage'],
    [['partial_outage', 'partial_outage'], 'partial-outage'],
    [['operational', 'major_outage'], 'partial-outage'],
    [['major_outage', 'major_outage'], 'major-outage'],
    [['under_maintenance', 'degraded_performance'], 'partially-degraded'],
  ];
  for (const [statuses, expected] of cases)
    it(`${statuses.join(', ') || 'no components'}: ${expected}`, () => {
      expect(topLevel(statuses)).toBe(expected);
    });

  it("takes an incident's own impact, else its components' worst", () => {
    expect(impactOf('minor', ['major_outage'])).toBe('minor');
    expect(impactOf(null, ['operational', 'major_outage'])).toBe('critical');
    expect(impactOf(null, ['partial_outage'])).toBe('major');
    expect(impactOf(null, ['degraded_performance', 'under_maintenance'])).toBe('minor');
    expect(impactOf(null, [])).toBe('none');
  });
});

describe('a located check on a page', () => {
  const result = (locations: { node: string; success?: boolean }[]): CheckResult => ({
    name: 'api',
    summary: 'tcp',
    success: false,
    'healthcheck-timestamp': 1_800_000_000,
    message: 'refused',
    duration: 1,
    source: 'configuration',
    locations,
  });
  const source = (latest: CheckResult): StatusSource => ({
    checks: () => [{ name: 'api', labels: {} }],
    labelsOf: () => ({}),
    latest: () => latest,
    state: () => 'down',
    stateSince: () => 1_799_000_000_000,
    createdAt: () => 1_700_000_000_000,
    inMaintenance: () => false,
    windows: () => [],
    dailyRuns: (names, _sinceS, days) =>
      new Map(names.map((name) => [name, { runs: Array(days).fill(0), successes: Array(days).fill(0) }])),
  });
  const page = { slug: 'p', title: 'P', groups: [{ name: 'g', checks: ['api'] }] };

  it('is a partial outage while some of its locations still succeed, a major one when all fail', () => {
    const some = result([{ node: 'paris', success: false }, { node: 'tokyo', success: true }, { node: 'lima' }]);
    const partial = buildView(page, source(some), [], 1_800_000_000_000, false);
    expect(partial.groups[0]?.entries[0]?.view.state).toBe('partial');
    expect(partial.state).toBe('partial-outage');
    const all = result([
      { node: 'paris', success: false },
      { node: 'tokyo', success: false },
    ]);
    const major = buildView(page, source(all), [], 1_800_000_000_000, false);
    expect(major.groups[0]?.entries[0]?.view.state).toBe('down');
    expect(major.state).toBe('major-outage');
  });
});

describe('the palette', () => {
  const TEXTS = ['fg', 'muted', 'link', 'up', 'warn', 'partial', 'down', 'maint'] as const;
  for (const theme of ['light', 'dark'] as const)
    it(`reads at 4.5:1 at least in the ${theme} theme`, () => {
      const palette = PALETTES[theme];
      for (const text of TEXTS)
        for (const background of [palette.bg, palette.card])
          expect(contrast(palette[text], background), `${text} on ${background}`).toBeGreaterThanOrEqual(4.5);
    });

  it("writes the banner's white text on fills of 4.5:1 at least (the old dark banner was 3.4:1)", () => {
    for (const [level, fill] of Object.entries(BANNER_FILLS))
      expect(contrast('#ffffff', fill), level).toBeGreaterThanOrEqual(4.5);
    expect(contrast('#ffffff', '#2ea043')).toBeLessThan(3.5);
  });

  it('writes black or white on an accent colour, whichever reaches 4.5:1', () => {
    for (const accent of ['#ffcc00', '#0b3d91', '#777777', '#00ff00', '#ff0000', '#000000', '#ffffff'])
      expect(contrast(textOn(accent), accent), accent).toBeGreaterThanOrEqual(4.5);
  });
});
