import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfigText } from '../../src/config/load.ts';
import { DEFAULT_PORT } from '../../src/server/settings.ts';
import { configErrorOf as errorOf } from '../helpers/config.ts';

describe('config loading', () => {
  it('works with no file at all', () => {
    const config = loadConfig(null);
    expect(config.file).toBeNull();
    expect(config.http.host).toBe('127.0.0.1');
    expect(config.http.port).toBe(DEFAULT_PORT);
    expect(config.databaseFile).toMatch(/data\/vigie\.db$/);
    expect(config.streams.directories[0]).toMatch(/data\/streams$/);
    expect(config.healthchecks.maxConcurrentRuns).toBe(1000);
    expect(config.healthchecks.startTickMs).toBe('auto');
    expect(config.healthchecks.writeDelayS).toBe(30);
    expect(config.databaseCacheBytes).toBe(1024 * 1024);
    expect(config.compactHeapBelowBytes).toBe(32 * 1024 * 1024);
  });

  it('reads database-cache-size in bytes, from 256 KiB to 16 GiB', () => {
    expect(parseConfigText('database-cache-size: 16777216\n', null).databaseCacheBytes).toBe(16 * 1024 * 1024);
    expect(errorOf('database-cache-size: 1000\n')).toBe(
      '/etc/vigie.yaml: database-cache-size: expected integer to be greater or equal to 262144, got the number 1000',
    );
    expect(errorOf('database-cache-size: 1e25\n')).toBe(
      '/etc/vigie.yaml: database-cache-size: expected integer to be less or equal to 17179869184, got the number 1e+25',
    );
    expect(errorOf('database-cache-size: 2MB\n')).toBe(
      '/etc/vigie.yaml: database-cache-size: must be an integer, got the string "2MB"',
    );
  });

  it('reads compact-heap-below in bytes, from 0 (never) to 4 GiB, 32 MiB by default', () => {
    expect(parseConfigText('data-dir: /tmp\n', null).compactHeapBelowBytes).toBe(32 * 1024 * 1024);
    expect(parseConfigText('compact-heap-below: 0\n', null).compactHeapBelowBytes).toBe(0);
    expect(parseConfigText('compact-heap-below: 67108864\n', null).compactHeapBelowBytes).toBe(64 * 1024 * 1024);
    expect(errorOf('compact-heap-below: -1\n')).toBe(
      '/etc/vigie.yaml: compact-heap-below: expected integer to be greater or equal to 0, got the number -1',
    );
    expect(errorOf('compact-heap-below: 5000000000\n')).toBe(
      '/etc/vigie.yaml: compact-heap-below: expected integer to be less or equal to 4294967296, got the number 5000000000',
    );
    expect(errorOf('compact-heap-below: 32MiB\n')).toBe(
      '/etc/vigie.yaml: compact-heap-below: must be an integer, got the string "32MiB"',
    );
  });

  it('reads healthchecks.write-delay in whole seconds, from 1 s to 5 min', () => {
    expect(parseConfigText('healthchecks:\n  write-delay: 1m30s\n', null).healthchecks.writeDelayS).toBe(90);
    expect(errorOf('healthchecks:\n  write-delay: 500ms\n')).toBe(
      '/etc/vigie.yaml: healthchecks.write-delay: must be between 1s and 5m, got "500ms"',
    );
    expect(errorOf('healthchecks:\n  write-delay: 10m\n')).toBe(
      '/etc/vigie.yaml: healthchecks.write-delay: must be between 1s and 5m, got "10m"',
    );
  });

  it('reads healthchecks.start-tick as auto, the default, or a duration between 1 ms and 1 s', () => {
    expect(parseConfigText('http:\n  port: 9013\n', null).healthchecks.startTickMs).toBe('auto');
    expect(parseConfigText('healthchecks:\n  start-tick: auto\n', null).healthchecks.startTickMs).toBe('auto');
    expect(parseConfigText('healthchecks:\n  start-tick: 1ms\n', null).healthchecks.startTickMs).toBe(1);
    expect(parseConfigText('healthchecks:\n  start-tick: 250ms\n', null).healthchecks.startTickMs).toBe(250);
    expect(errorOf('healthchecks:\n  start-tick: 2s\n')).toBe(
      '/etc/vigie.yaml: healthchecks.start-tick: must be at most 1s, got "2s"',
    );
    expect(errorOf('healthchecks:\n  start-tick: 0s\n')).toBe(
      '/etc/vigie.yaml: healthchecks.start-tick: must be positive, got "0s"',
    );
    expect(errorOf('healthchecks:\n  start-tick: automatic\n')).toMatch(
      /^\/etc\/vigie.yaml: healthchecks.start-tick: /,
    );
  });

  it('caps maintenance windows in the file as the API does, naming the key', () => {
    const window = (name: string, extra = '') =>
      `  - {name: ${name}, start: "2026-01-01T00:00:00Z", duration: 1h${extra}}\n`;
    const file = `healthchecks:\n  max-maintenance-windows: 2\n  max-maintenance-window-checks: 1\nmaintenance:\n`;
    expect(
      parseConfigText(file + window('a') + window('b', ', checks: [x]'), null).healthchecks.maintenanceLimits,
    ).toMatchObject({ maxWindows: 2, window: { maxChecks: 1 } });
    expect(errorOf(file + window('a') + window('b') + window('c'))).toBe(
      '/etc/vigie.yaml: maintenance: has 3 windows, more than the limit of 2 (healthchecks.max-maintenance-windows)',
    );
    expect(errorOf(file + window('a', ', checks: [x, y]'))).toBe(
      '/etc/vigie.yaml: maintenance[0].checks: has 2 check names, more than the limit of 1 (healthchecks.max-maintenance-window-checks)',
    );
    expect(errorOf(`maintenance:\n  - {name: a, start: "2026-02-30T00:00:00Z", duration: 1h}\n`)).toBe(
      '/etc/vigie.yaml: maintenance[0].start: "2026-02-30T00:00:00Z" is not a date and time: no day 30 in 2026-02',
    );
  });

  it('names the file, the key path and the problem', () => {
    expect(errorOf('http:\n  prot: 1\n')).toBe('/etc/vigie.yaml: http.prot: unknown key "prot" (did you mean "port"?)');
    // In a check, the misspelled key is named before the required key it stands for.
    expect(
      errorOf('tcp-checks:\n  - name: db\n    target: 127.0.0.1\n    prot: 80\n    interval: 10s\n    timeout: 1s\n'),
    ).toBe('/etc/vigie.yaml: tcp-checks[0]: unknown key "prot" (did you mean "port"?)');
    expect(errorOf('http:\n  port: 70000\n')).toMatch(/^\/etc\/vigie\.yaml: http\.port: /);
    expect(errorOf('streams:\n  snapshot-interval: 10\n')).toBe(
      '/etc/vigie.yaml: streams.snapshot-interval: must be a duration string such as "10s" or "1m30s", got the number 10',
    );
    expect(errorOf('streams:\n  snapshot-interval: 10d\n')).toBe(
      '/etc/vigie.yaml: streams.snapshot-interval: time: unknown unit "d" in duration "10d"',
    );
    expect(errorOf('http:\n  basic-auth:\n    username: a\n')).toBe(
      '/etc/vigie.yaml: http.basic-auth.password: is required',
    );
    expect(errorOf('http:\n  cert: /x\n')).toBe(
      '/etc/vigie.yaml: http.key: the key and cert options must be set together',
    );
    expect(errorOf('- a\n- b\n')).toBe('/etc/vigie.yaml: the top level must be a mapping of keys');
    expect(errorOf('http: [\n')).toMatch(/^\/etc\/vigie\.yaml: invalid YAML at line \d+, column \d+/);
    expect(errorOf('http: {}\nhttp: {}\n')).toMatch(/invalid YAML/);
    // An alias bomb: yaml refuses it while building the value, with an error of its own that is no YAMLParseError.
    const letters = 'abcdefghij';
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...[...letters.slice(1)].map((name, i) => `${name}: &${name} [${Array(10).fill(`*${letters[i]}`).join(', ')}]`),
    ].join('\n');
    expect(errorOf(bomb)).toBe(
      '/etc/vigie.yaml: invalid YAML: Excessive alias count indicates a resource exhaustion attack',
    );
  });

  it('accepts the Cabourotte top-level keys', () => {
    const config = parseConfigText(
      [
        'result-buffer: 1000',
        'healthchecks-labels: [env]',
        'http:',
        '  host: 0.0.0.0',
        '  port: 9013',
        'exporters:',
        '  http:',
        '    - {name: e, host: 127.0.0.1, port: 9595, path: /, protocol: http}',
        'discovery:',
        '  http:',
        '    - {name: d, host: 127.0.0.1, port: 9595, interval: 30s}',
      ].join('\n'),
      null,
    );
    expect(config.http.host).toBe('0.0.0.0');
    expect(config.healthchecks.labels).toEqual(['env']);
  });

  it('parses the check lists once into typed definitions, each with its key path, and snapshot-interval into ms', () => {
    const config = parseConfigText(
      [
        'tcp-checks:',
        '  - {name: db, target: 127.0.0.1, port: 5432, timeout: 1s, interval: 10s, labels: {env: prod}}',
        'dns-checks:',
        '  - {name: resolver, domain: localhost, timeout: 500us, interval: 1m}',
        'http-checks:',
        '  - {name: web, target: 127.0.0.1, port: 80, valid-status: [200], timeout: 1s, interval: 10s}',
        'streams:',
        '  snapshot-interval: 1500us',
      ].join('\n'),
      null,
    );
    expect(config.healthchecks.checks.map(({ key, def }) => `${key}:${def.kind}:${def.name}`)).toEqual([
      'http-checks[0]:http:web',
      'tcp-checks[0]:tcp:db',
      'dns-checks[0]:dns:resolver',
    ]);
    expect(config.healthchecks.checks[1]?.def).toMatchObject({
      kind: 'tcp',
      port: 5432,
      intervalNs: 10e9,
      timeoutNs: 1e9,
      labels: { env: 'prod' },
      oneOff: false,
    });
    expect(config.healthchecks.checks[2]?.def.timeoutNs).toBe(500_000);
    // One rounding rule for timers: up to the next whole millisecond.
    expect(config.streams.snapshotIntervalMs).toBe(2);
  });
});
