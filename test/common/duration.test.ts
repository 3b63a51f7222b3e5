import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/common/duration.ts';

describe('Go durations', () => {
  it.each([
    ['0', 0],
    ['0s', 0],
    ['500ms', 500e6],
    ['10s', 10e9],
    ['1m30s', 90e9],
    ['1.5h', 5400e9],
    ['2h45m', 9900e9],
    ['-1m', -60e9],
    ['250µs', 250e3],
    ['250μs', 250e3],
    ['250us', 250e3],
    ['7ns', 7],
  ])('parses %s', (text, ns) => {
    expect(parseDuration(text)).toBe(ns);
  });

  it.each([
    ['', 'time: invalid duration ""'],
    ['10', 'time: missing unit in duration "10"'],
    ['1d', 'time: unknown unit "d" in duration "1d"'],
    ['x', 'time: invalid duration "x"'],
    ['1s ', 'time: unknown unit "s " in duration "1s "'],
    ['.s', 'time: invalid duration ".s"'],
  ])('rejects %j with Go wording', (text, message) => {
    expect(() => parseDuration(text)).toThrow(message);
  });

  it('is bounded as Go bounds it: at most 2^63-1 ns either way (-2^63 too), whatever the spelling', () => {
    expect(parseDuration('2562047h47m16.854775807s')).toBe(2 ** 63);
    expect(parseDuration('9223372036854775807ns')).toBe(2 ** 63);
    expect(parseDuration('-9223372036854775808ns')).toBe(-(2 ** 63));
    expect(parseDuration('0000000000000000000000001s')).toBe(1e9);
    expect(parseDuration('1.s')).toBe(1e9);
    expect(parseDuration('.5s')).toBe(5e8);
    const outOfRange = (text: string) =>
      `time: invalid duration ${JSON.stringify(text)}: out of range (at most 2562047h47m16.854775807s)`;
    for (const text of [
      '9223372036854775808ns',
      '2562048h',
      '2562047h47m16.854775808s',
      '-9223372036854775809ns',
      '9999999999999h',
      '106751h99999999h',
      `${'9'.repeat(100_000)}s`,
    ]) {
      expect(() => parseDuration(text), text).toThrow(outOfRange(text));
    }
  });

  it.each([
    [0, '0s'],
    [500e6, '500ms'],
    [1.5e6, '1.5ms'],
    [250e3, '250µs'],
    [10e9, '10s'],
    [90e9, '1m30s'],
    [600e9, '10m0s'],
    [3600e9, '1h0m0s'],
    [1.5e9, '1.5s'],
    [7200.5e9, '2h0m0.5s'],
    [-60e9, '-1m0s'],
  ])('formats %d ns as %s', (ns, text) => {
    expect(formatDuration(ns)).toBe(text);
  });
});
