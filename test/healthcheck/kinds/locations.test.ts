/**
 * Checks from several places (docs/checks.md "Locations"): `locations`, `node-labels` and `quorum`, common to every
 * kind that runs, validated as the other base fields are (a message naming the field) and listed back.
 */
import { describe, expect, it } from 'vitest';
import { CheckValidationError, checkToJson, type KindName, parseCheck } from '../../../src/healthcheck/kinds/index.ts';

const BASE = { name: 'c', timeout: '1s', interval: '10s', target: '127.0.0.1', port: 22 };

function parse(raw: Record<string, unknown>, kind: KindName = 'tcp') {
  return parseCheck(kind, { ...BASE, ...raw });
}

function rejection(raw: Record<string, unknown>): string {
  try {
    parse(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('locations, node-labels and quorum', () => {
  it('are absent unless given: a check without them runs as it always did', () => {
    const def = parse({});
    expect(def.locations).toBeUndefined();
    expect(checkToJson(def)).not.toHaveProperty('locations');
  });

  it('take "all" or a count, labels to match and a quorum, and list them back', () => {
    expect(parse({ locations: 'all' }).locations).toEqual({ count: 'all', nodeLabels: {} });
    expect(parse({ locations: 3, quorum: 3, 'node-labels': { region: 'eu' } }).locations).toEqual({
      count: 3,
      nodeLabels: { region: 'eu' },
      quorum: 3,
    });
    expect(parse({ locations: 64 }).locations?.count).toBe(64);
    const listed = checkToJson(parse({ locations: 2, quorum: 1, 'node-labels': { region: 'eu', zone: 'a' } }), 'api');
    expect(listed).toMatchObject({ locations: 2, quorum: 1, 'node-labels': { region: 'eu', zone: 'a' } });
    // A listing posted back gives the same definition (a cluster replicates checks that way).
    expect(parseCheck('tcp', listed)).toEqual(
      parse({ locations: 2, quorum: 1, 'node-labels': { region: 'eu', zone: 'a' } }),
    );
    expect(checkToJson(parse({ locations: 'all' }))).toMatchObject({ locations: 'all' });
    expect(checkToJson(parse({ locations: 'all' }))).not.toHaveProperty('quorum');
  });

  it('apply to every kind that runs, not to heartbeats (reported to, not run)', () => {
    expect(parseCheck('http', { ...BASE, port: 80, 'valid-status': [200], locations: 'all' }).locations?.count).toBe(
      'all',
    );
    expect(
      parseCheck('command', { name: 'c', timeout: '1s', interval: '10s', command: 'true', locations: 2 }).locations
        ?.count,
    ).toBe(2);
    expect(() => parseCheck('heartbeat', { name: 'h', interval: '1m', locations: 2 })).toThrow(
      'unknown key "locations"',
    );
  });

  it('refuse every hostile value, naming the field', () => {
    expect(rejection({ locations: 0 })).toBe('locations: must be "all" or between 1 and 64, got 0');
    expect(rejection({ locations: -3 })).toBe('locations: must be "all" or between 1 and 64, got -3');
    expect(rejection({ locations: 65 })).toBe('locations: must be "all" or between 1 and 64, got 65');
    expect(rejection({ locations: 1e12 })).toBe('locations: must be "all" or between 1 and 64, got 1000000000000');
    expect(rejection({ locations: 1.5 })).toBe('locations: must be "all" or an integer, got the number 1.5');
    expect(rejection({ locations: 'ALL' })).toBe('locations: must be "all" or an integer, got the string "ALL"');
    expect(rejection({ locations: '3' })).toBe('locations: must be "all" or an integer, got the string "3"');
    expect(rejection({ locations: null })).toBe('locations: must be "all" or an integer, got null');
    expect(rejection({ locations: [1] })).toBe('locations: must be "all" or an integer, got a list');

    expect(rejection({ locations: 3, quorum: 0 })).toBe('quorum: must be between 1 and locations (3), got 0');
    expect(rejection({ locations: 3, quorum: 4 })).toBe('quorum: must be between 1 and locations (3), got 4');
    expect(rejection({ locations: 3, quorum: -1 })).toBe('quorum: must be between 1 and locations (3), got -1');
    expect(rejection({ locations: 'all', quorum: 65 })).toBe('quorum: must be between 1 and 64, got 65');
    expect(rejection({ locations: 3, quorum: 'two' })).toBe('quorum: must be an integer, got the string "two"');
    expect(rejection({ quorum: 1 })).toBe('quorum: needs locations (all, or how many nodes run the check)');

    expect(rejection({ 'node-labels': { region: 'eu' } })).toBe(
      'node-labels: needs locations (all, or how many nodes run the check)',
    );
    expect(rejection({ locations: 1, 'node-labels': { region: 1 } })).toBe(
      'node-labels.region: must be a string, got the number 1',
    );
    expect(rejection({ locations: 1, 'node-labels': { region: { nested: 'x' } } })).toBe(
      'node-labels.region: must be a string, got a mapping',
    );
    expect(rejection({ locations: 1, 'node-labels': ['region'] })).toBe('node-labels: must be a mapping, got a list');
    expect(rejection({ locations: 1, 'node-labels': { '': 'x' } })).toBe('node-labels: a key must not be empty');
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    expect(rejection({ locations: 1, 'node-labels': many })).toBe(
      'node-labels: has 65 labels, more than the limit of 64',
    );
    expect(rejection({ locations: 1, 'node-labels': { ['k'.repeat(300)]: 'v' } })).toBe(
      `node-labels: the key "${'k'.repeat(20)}..." is 300 bytes long, more than the limit of 256`,
    );
    expect(rejection({ locations: 1, 'node-labels': { region: 'é'.repeat(600) } })).toBe(
      'node-labels.region: is 1200 bytes long, more than the limit of 1024',
    );
  });
});
