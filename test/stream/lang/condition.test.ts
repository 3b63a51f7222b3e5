import { describe, expect, it } from 'vitest';
import { compileCondition } from '../../../src/stream/lang/condition.ts';
import { parseEdn } from '../../../src/stream/lang/edn.ts';
import type { Event } from '../../../src/stream/event.ts';

const test = (condition: string, event: Event): boolean => compileCondition(parseEdn(condition))(event);

describe('conditions', () => {
  const event: Event = {
    host: 'web-1',
    service: 'api',
    metric: 12,
    state: 'ok',
    tags: ['prod', 'eu'],
    attributes: { env: 'prod', code: 500 },
  };

  it.each([
    ['[:= :host "web-1"]', true],
    ['[:= :host "web-2"]', false],
    ['[:= :state :ok]', true],
    ['[:= :metric 12 12]', true],
    ['[:= :metric 12 13]', false],
    ['[:= :tags ["prod" "eu"]]', true],
    ['[:= :attributes {:env "prod" :code 500}]', true],
    ['[:not= :host "web-2"]', true],
    ['[:> :metric 10]', true],
    ['[:> :metric 12]', false],
    ['[:>= :metric 12]', true],
    ['[:< :metric 20 15]', false],
    ['[:< :metric 20 30]', true],
    ['[:<= :metric 12]', true],
    ['[:> [:attributes :code] 499]', true],
    ['[:pos? :metric]', true],
    ['[:neg? :metric]', false],
    ['[:zero? :metric]', false],
    ['[:nil? :description]', true],
    ['[:not-nil? :host]', true],
    ['[:contains :tags "prod"]', true],
    ['[:contains :tags "pro"]', false],
    ['[:contains :host "web"]', false],
    ['[:absent :tags "staging"]', true],
    ['[:absent :missing "x"]', true],
    ['[:regex :host "web-[0-9]+"]', true],
    ['[:regex :host "web"]', false],
    ['[:regex :host "(?i)WEB-1"]', true],
    ['[:and [:= :service "api"] [:> :metric 10]]', true],
    ['[:and [:= :service "api"] [:> :metric 100]]', false],
    ['[:or [:= :service "db"] [:> :metric 10]]', true],
    ['[:and]', true],
    ['[:or]', false],
    ['[:not [:= :host "web-1"]]', false],
    ['[:always-true]', true],
    ['[:true]', true],
  ])('%s', (condition, expected) => {
    expect(test(condition, event)).toBe(expected);
  });

  it('is false, never an exception, on missing or non-numeric values', () => {
    for (const condition of [
      '[:> :metric 1]',
      '[:<= :metric 1]',
      '[:pos? :metric]',
      '[:neg? :metric]',
      '[:zero? :metric]',
      '[:regex :host "a"]',
      '[:> [:a :b :c] 1]',
    ]) {
      expect(test(condition, {})).toBe(false);
      expect(test(condition, { metric: '10' as never, host: 5 as never, a: 'x' })).toBe(false);
    }
  });

  it("treats JSON numbers without Clojure's integer/double distinction", () => {
    expect(test('[:= :metric 10]', { metric: 10.0 })).toBe(true);
    expect(test('[:= :metric "10"]', { metric: 10 })).toBe(false);
  });

  it('runs a catastrophic-backtracking pattern in linear time', () => {
    const started = performance.now();
    expect(test('[:regex :service "(a+)+$"]', { service: `${'a'.repeat(40)}!` })).toBe(false);
    expect(test('[:regex :service "(a+)+"]', { service: 'a'.repeat(100_000) })).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it.each([
    ['[:foo :metric 1]', 'Invalid condition [:foo :metric 1]: unknown operator :foo'],
    ['[:> :metric]', 'Invalid condition [:> :metric]: :> expected at least one value to compare with'],
    ['[:> :metric "a"]', 'Invalid condition [:> :metric "a"]: :> expected numbers to compare with, got "a"'],
    ['[:pos? :metric 1]', ':pos? expected no argument, got 1'],
    ['[:contains :tags]', ':contains expected exactly one argument, got 0'],
    ['[:regex :host "("]', ':regex invalid regular expression "("'],
    [
      '[:regex :host "(a)\\\\1"]',
      ':regex invalid regular expression "(a)\\\\1": backreferences (\\1) are not supported',
    ],
    [
      '[:regex :host "a(?=b)"]',
      'lookaround ((?=, (?!, (?<=, (?<!) is not supported: the linear-time engine (RE2) cannot run it',
    ],
    ['[:regex :host "(?<!a)b"]', 'lookaround'],
    ['[:regex :host 1]', ':regex expected a regular expression string, got 1'],
    ['[:= 1 2]', ':= expected a field (a keyword or a vector of keywords), got 1'],
    ['[:=]', ':= expected a field'],
    ['[:not]', ':not expected exactly one condition, got 0'],
    ['[:and [:bad :x]]', 'Invalid condition [:bad :x]: unknown operator :bad'],
    [':host', 'Invalid condition :host: expected a vector such as [:= :service "api"]'],
    ['["=" :host 1]', 'expected an operator keyword first, got "="'],
  ])('rejects %s', (condition, message) => {
    expect(() => compileCondition(parseEdn(condition))).toThrow(message);
  });
});
