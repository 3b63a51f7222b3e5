import { describe, expect, it } from 'vitest';
import { resultToRiemannEvent, resultToStreamEvent } from '../../../src/healthcheck/exporters/result-event.ts';
import {
  DEFAULT_MAINTENANCE_LIMITS,
  MaintenanceCalendar,
  type MaintenanceWindow,
  occurrence,
  parseWindow as parseWith,
} from '../../../src/healthcheck/maintenance/maintenance.ts';
import type { CheckResult } from '../../../src/healthcheck/results/repository.ts';

const T0 = Date.parse('2026-12-01T22:00:00Z');
const parseWindow = (raw: unknown): MaintenanceWindow => parseWith(raw, DEFAULT_MAINTENANCE_LIMITS.window);

describe('maintenance windows', () => {
  it('parses start, duration or end, every, labels and checks, naming the field of a refusal', () => {
    expect(parseWindow({ name: 'w', start: '2026-12-01T23:00:00+01:00', duration: '30m' })).toEqual({
      name: 'w',
      startMs: T0,
      durationMs: 1_800_000,
      everyMs: 0,
      labels: {},
      checks: new Set(),
    });
    expect(
      parseWindow({
        name: 'w',
        start: '2026-12-01T22:00:00Z',
        end: '2026-12-02T00:00:00Z',
        every: '24h',
        checks: ['a', 'a'],
      }),
    ).toMatchObject({ durationMs: 7_200_000, everyMs: 86_400_000, checks: new Set(['a']) });
    const refusal = (raw: unknown) => {
      try {
        parseWindow(raw);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refusal({ name: 'w', start: '2026-12-01 22:00', duration: '1h' })).toMatch(
      /^start: must be an RFC 3339 date and time with a zone/,
    );
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00', duration: '1h' })).toMatch(/^start: /);
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '1h', end: '2026-12-02T00:00:00Z' })).toBe(
      'end: set exactly one of duration and end',
    );
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '0s' })).toBe(
      'duration: must be greater than 0, got "0s"',
    );
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '1h', every: '1h' })).toMatch(
      /^every: must be longer than the window/,
    );
    expect(refusal({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '1h', checks: [''] })).toBe(
      'checks[0]: must not be empty',
    );
    expect(refusal({ name: '', start: '2026-12-01T22:00:00Z', duration: '1h' })).toBe('name: must not be empty');
  });

  it('takes a date only if its fields come back out of it: no February 30, no hour 24, no offset +24:00', () => {
    const refusal = (start: string) => {
      try {
        parseWindow({ name: 'w', start, duration: '1h' });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refusal('2026-02-30T00:00:00Z')).toBe(
      'start: "2026-02-30T00:00:00Z" is not a date and time: no day 30 in 2026-02',
    );
    expect(refusal('2026-04-31T00:00:00Z')).toBe(
      'start: "2026-04-31T00:00:00Z" is not a date and time: no day 31 in 2026-04',
    );
    expect(refusal('2026-00-10T00:00:00Z')).toBe('start: "2026-00-10T00:00:00Z" is not a date and time: no month 0');
    expect(refusal('2026-01-00T00:00:00Z')).toBe(
      'start: "2026-01-00T00:00:00Z" is not a date and time: no day 0 in 2026-01',
    );
    expect(refusal('2026-01-01T23:60:00Z')).toBe(
      'start: "2026-01-01T23:60:00Z" is not a date and time: minute 60 is past 59',
    );
    expect(refusal('2026-12-31T23:59:60Z')).toBe(
      'start: "2026-12-31T23:59:60Z" is not a date and time: second 60 is past 59',
    );
    expect(refusal('2026-01-01T00:00:00+24:00')).toBe(
      'start: "2026-01-01T00:00:00+24:00" is not a date and time: no zone offset +24:00',
    );
    expect(refusal('0000-01-01T00:00:00+01:00')).toMatch(
      /^start: must be between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in UTC/,
    );
    expect(refusal('9999-12-31T23:00:00-01:00')).toMatch(/^start: must be between/);
    expect(parseWindow({ name: 'w', start: '2024-02-29t21:30:00.123456-00:30', duration: '1h' }).startMs).toBe(
      Date.parse('2024-02-29T22:00:00.123Z'),
    );
    expect(parseWindow({ name: 'w', start: '0001-01-01 00:00:00Z', duration: '1h' }).startMs).toBe(
      new Date(0).setUTCFullYear(1, 0, 1),
    );
  });

  it('bounds durations as Go does and keeps every date it lists within RFC 3339', () => {
    const refusal = (raw: object) => {
      try {
        parseWindow({ name: 'w', start: '2026-12-01T22:00:00Z', ...raw });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refusal({ duration: '1h', every: '9999999999999h' })).toBe(
      'every: time: invalid duration "9999999999999h": out of range (at most 2562047h47m16.854775807s)',
    );
    expect(refusal({ start: '9800-01-01T00:00:00Z', duration: '2562047h' })).toBe(
      'duration: the window would end after 9999-12-31T23:59:59.999Z',
    );
    // The longest period Go allows repeats until the next occurrence would end past year 9999: then it is over.
    const window = parseWindow({
      name: 'w',
      start: '2026-12-01T22:00:00Z',
      duration: '1h',
      every: '2562047h47m16.854775807s',
    });
    expect(window.everyMs).toBe(9_223_372_036_854);
    expect(occurrence(window, T0 + 2 * 3_600_000)).toEqual({
      startMs: T0 + window.everyMs,
      endMs: T0 + window.everyMs + 3_600_000,
    });
    expect(occurrence(window, Date.UTC(9990, 0, 1))).toBeNull();
    const calendar = new MaintenanceCalendar(() => Date.UTC(9990, 0, 1));
    calendar.setApi(window);
    const [listed] = calendar.list();
    expect(listed).toMatchObject({ name: 'w', active: false, every: expect.stringMatching(/^2562047h47m16\.85/) });
    expect(listed).not.toHaveProperty('next-start');
  });

  it('caps labels as check labels and the names a window lists', () => {
    const refusal = (raw: object) => {
      try {
        parseWindow({ name: 'w', start: '2026-12-01T22:00:00Z', duration: '1h', ...raw });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refusal({ labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) })).toMatch(
      /^labels: .*healthchecks\.max-labels/,
    );
    expect(refusal({ labels: { team: 'é'.repeat(513) } })).toMatch(
      /^labels\.team: .*1026 bytes.*healthchecks\.max-label-value-bytes/,
    );
    expect(refusal({ checks: Array.from({ length: 1001 }, (_, i) => `c${i}`) })).toBe(
      'checks: has 1001 check names, more than the limit of 1000 (healthchecks.max-maintenance-window-checks)',
    );
    expect(refusal({ checks: ['a', 'b/c'] })).toBe('checks[1]: must not contain "/"');
    expect(
      refusal({
        checks: Array.from({ length: 1000 }, (_, i) => `c${i}`),
        labels: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, 'v'.repeat(1024)])),
      }),
    ).toBe('accepted');
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
    expect(occurrence(window, T0 + 2 * 3_600_000)).toEqual({
      startMs: T0 + 86_400_000,
      endMs: T0 + 86_400_000 + 3_600_000,
    });
    expect(
      occurrence(parseWindow({ name: 'once', start: '2026-12-01T22:00:00Z', duration: '1h' }), T0 + 3_600_000),
    ).toBeNull();
    expect(calendar.get('nightly')).toMatchObject({ active: true, every: '24h0m0s', source: 'configuration' });
  });

  it('covers the checks having all its labels or named in checks; with neither, every check', () => {
    const calendar = new MaintenanceCalendar(() => T0);
    calendar.setApi(
      parseWindow({
        name: 'db',
        start: '2026-12-01T22:00:00Z',
        duration: '1h',
        labels: { team: 'db', env: 'prod' },
        checks: ['named'],
      }),
    );
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

  it('finds, replaces and deletes windows by name in place, and counts those in force', () => {
    const calendar = new MaintenanceCalendar(() => T0);
    const window = (name: string, checks: string[]) =>
      parseWindow({ name, start: '2026-12-01T22:00:00Z', duration: '1h', checks });
    for (let i = 0; i < 5; i++) calendar.setApi(window(`w${i}`, [`c${i}`]));
    calendar.setConfig([window('w2', ['from-file'])]);
    expect(calendar.size).toBe(5);
    expect(calendar.get('w2')).toMatchObject({ source: 'configuration', checks: ['from-file'] });
    expect(calendar.inMaintenance('c2', {})).toBe(false);
    expect(calendar.deleteApi('w0')).toBe(true);
    expect(calendar.deleteApi('w0')).toBe(false);
    calendar.setApi(window('w4', ['replaced']));
    expect(calendar.size).toBe(4);
    expect(calendar.has('w0')).toBe(false);
    expect(calendar.get('w4')).toMatchObject({ source: 'api', checks: ['replaced'] });
    expect(['c1', 'c3', 'replaced', 'from-file'].map((name) => calendar.inMaintenance(name, {}))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['c0', 'c4', 'c2'].map((name) => calendar.inMaintenance(name, {}))).toEqual([false, false, false]);
    // The file lets go of w2: the API's w2 is in force again.
    calendar.setConfig([]);
    expect(calendar.get('w2')).toMatchObject({ source: 'api', checks: ['c2'] });
    expect(calendar.list().map((listed) => listed.name)).toEqual(['w1', 'w2', 'w3', 'w4']);
  });

  it('marks the exporters: a Riemann attribute and a stream event field', () => {
    const result: CheckResult = {
      name: 'db',
      summary: 's',
      success: false,
      'healthcheck-timestamp': 1,
      message: 'm',
      duration: 2,
      source: 'api',
      maintenance: true,
    };
    expect(resultToRiemannEvent(result, 'h', 60).attributes).toContainEqual({ key: 'maintenance', value: 'true' });
    expect(resultToStreamEvent(result, 'h', 'svc', 60).maintenance).toBe(true);
    const { maintenance: _, ...plain } = result;
    expect(resultToRiemannEvent(plain, 'h', 60).attributes.map((attribute) => attribute.key)).not.toContain(
      'maintenance',
    );
    expect(resultToStreamEvent(plain, 'h', 'svc', 60)).not.toHaveProperty('maintenance');
  });
});
