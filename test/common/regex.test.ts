import { describe, expect, it } from 'vitest';
import { compileRegex, RegexError } from '../../src/common/regex.ts';

describe('linear-time regular expressions', () => {
  it('matches the whole text or any part of it', () => {
    expect(compileRegex('web-[0-9]+', 'whole').test('web-12')).toBe(true);
    expect(compileRegex('web', 'whole').test('web-12')).toBe(false);
    expect(compileRegex('web', 'search').test('my-web-12')).toBe(true);
    expect(compileRegex('^web$', 'search').test('my-web')).toBe(false);
  });

  it('keeps inline flags such as (?i)', () => {
    expect(compileRegex('(?i)WEB-1', 'whole').test('web-1')).toBe(true);
    expect(compileRegex('(?i)cabourotte', 'search').test('Hello CABOUROTTE')).toBe(true);
  });

  it.each([
    ['(a)\\1', 'backreferences (\\1) are not supported'],
    ['a(?=b)', 'lookaround'],
    ['a(?!b)', 'lookaround'],
    ['(?<=a)b', 'lookaround'],
    ['(?<!a)b', 'lookaround'],
    ['(', 'missing closing )'],
  ])('refuses %s naming why', (pattern, message) => {
    expect(() => compileRegex(pattern, 'whole')).toThrow(RegexError);
    expect(() => compileRegex(pattern, 'whole')).toThrow(message);
  });
});
