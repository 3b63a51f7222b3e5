import { describe, expect, it } from 'vitest';
import { resultToRiemannEvent, resultToStreamEvent } from '../../src/healthcheck/exporters/result-event.ts';
import { MaintenanceCalendar, occurrence, parseWindow } from '../../src/healthcheck/maintenance.ts';
import type { CheckResult } from '../../src/healthcheck/repository.ts';

const T0 = Date.parse('2026-12-01T22:00:00Z');

describe('maintenance windows', () => {
  it('parses start, duration or end, every, labels and checks, naming the field of a refusal', () => {
    expect(parseWindow({ name: 'w', start: '2026-12-01T23:00:00+01:00', duration: '30m' })).toEqual({ name: 'w', startMs: T0, durationMs: 1_800_000, everyMs: 0, labels: {}, checks: [] });
    expect(parseWindow({ name: 'w', start: '2026-12-01T22:00:00Z', end: '2026-12-02T00:00:00Z', every: '24h', checks: ['a', 'a'] })).toMatchObject({ durationMs: 7_200_000, everyMs: 86_400_000, checks: ['a'] });
    const refusal = (raw: unknown) => {
      try {
        parseWindow(raw);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refusal({ name: 'w', start: '2026-12-01 22:00', duration: '1h' })).toMatch(/^start: must be an RFC 3339 date and time with a zone/);
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00', duration: '1h' })).toMatch(/^start: /);
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '1h', end: '2026-12-02T00:00:00Z' })).toBe('end: set exactly one of duration and end');
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '0s' })).toBe('duration: must be greater than 0, got "0s"');
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '1h', every: '1h' })).toMatch(/^every: must be longer than the window/);
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '1h', checks: [''] })).toBe('checks[0]: must not be empty');
    expect(refusal({ name: '', start: '2026-12-01T22:00:00Z', duration: '1h' })).toBe('name: must not be empty');
  });

  it('is on from start for its duration, every period when it repeats, and tells its current or next occurrence', () => {
    let now = T0 - 1;
    const calendar = new MaintenanceCalendar(() => now);
    calendar.setConfig([parseWindow({ name: 'nightly', start: '2026-12-01T22:00:00Z', duration: '1h', every: '24h' })]);
    expect(calendar.inMaintenance('any', {})).toBe(false);
    now = T0;
    expect(calendar.inMaintenance('any', {})).toBe(true);
    now = T0 + 3_600_000 - 1;
    expect(calendar.inMaintenance('any', {})).toBe(true);
    now = T0 + 3_600_000;
    expect(calendar.inMaintenance('any', {})).toBe(false);
    now = T0 + 10 * 86_400_000 + 60_000;
    expect(calendar.inMaintenance('any', {})).toBe(true);
    const window = parseWindow({ name: 'nightly', start: '2026-12-01T22:00:00Z', duration: '1h', every: '24h' });
    expect(occurrence(window, T0 + 2 * 3_600_000)).toEqual({ startMs: T0 + 86_400_000, endMs: T0 + 86_400_000 + 3_600_000 });
    expect(occurrence(parseWindow({ name: 'once', start: '2026-12-01T22:00:00Z', duration: '1h' }), T0 + 3_600_000)).toBeNull();
    expect(calendar.get('nightly')).toMatchObject({ active: true, every: '24h0m0s', source: 'configuration' });
  });

  it('covers the checks having all its labels or named in checks; with neither, every check', () => {
    const calendar = new MaintenanceCalendar(() => T0);
    calendar.setApi(parseWindow({ name: 'db', start: '2026-12-01T22:00:00Z', duration: '1h', labels: { team: 'db', env: 'prod' }, checks: ['named'] }));
    expect(calendar.inMaintenance('x', { team: 'db', env: 'prod', other: '1' })).toBe(true);
    expect(calendar.inMaintenance('x', { team: 'db' })).toBe(false);
    expect(calendar.inMaintenance('named', {})).toBe(true);
    expect(calendar.deleteApi('db')).toBe(true);
    expect(calendar.inMaintenance('named', {})).toBe(false);
    calendar.setApi(parseWindow({ name: 'all', start: '2026-12-01T22:00:00Z', duration: '1h' }));
    expect(calendar.inMaintenance('anything', {})).toBe(true);
    // The config file owns its names: an API window of the same name is hidden while the config has it.
    calendar.setConfig([parseWindow({ name: 'all', start: '2020-01-01T00:00:00Z', duration: '1h' })]);
    expect(calendar.inMaintenance('anything', {})).toBe(false);
    expect(calendar.list()).toEqual([expect.objectContaining({ name: 'all', source: 'configuration', active: false })]);
  });

  it('marks the exporters: a Riemann attribute and a stream event field', () => {
    const result: CheckResult = { name: 'db', summary: 's', success: false, 'healthcheck-timestamp': 1, message: 'm', duration: 2, source: 'api', maintenance: true };
    expect(resultToRiemannEvent(result, 'h', 60).attributes).toContainEqual({ key: 'maintenance', value: 'true' });
    expect(resultToStreamEvent(result, 'h', 'svc', 60).maintenance).toBe(true);
    const { maintenance: _, ...plain } = result;
    expect(resultToRiemannEvent(plain, 'h', 60).attributes.map((attribute) => attribute.key)).not.toContain('maintenance');
    expect(resultToStreamEvent(plain, 'h', 'svc', 60)).not.toHaveProperty('maintenance');
  });
});
