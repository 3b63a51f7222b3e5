import { describe, expect, it } from 'vitest';
import { Base64Error, decodeBase64Text } from '../../src/common/base64.ts';

const problem = (value: string): string | undefined => {
  try {
    decodeBase64Text(value, 'config');
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(Base64Error);
    expect((error as Base64Error).field).toBe('config');
    return (error as Base64Error).problem;
  }
};

describe('decodeBase64Text', () => {
  it('decodes standard base64 of UTF-8 text, padded or not', () => {
    expect(decodeBase64Text('aMOpbGxv', 'config')).toBe('héllo');
    expect(decodeBase64Text('dHJ1ZQ==', 'config')).toBe('true');
    expect(decodeBase64Text('dHJ1ZQ', 'config')).toBe('true');
    expect(decodeBase64Text('Wzo9IDpob3N0ICI/PyJd', 'config')).toBe('[:= :host "??"]');
    expect(decodeBase64Text('', 'config')).toBe('');
  });

  it('refuses what Node would decode silently: other alphabets, whitespace, misplaced or wrong padding, a dangling character', () => {
    for (const value of [
      'Wzo9IDpob3N0ICI_PyJd',
      'Wzo9IDpob3N0ICJ-fiJd',
      'dHJ1 ZQ==',
      'dHJ1\nZQ==',
      'dH=J1ZQ',
      'dHJ1ZQ=',
      'dHJ1Z',
      'not base64!',
      '====',
    ]) {
      expect(problem(value), value).toBe('invalid base64');
    }
  });

  it('refuses base64 whose bytes are not UTF-8, naming the field in its message', () => {
    expect(problem('/w==')).toBe('the base64 does not decode to UTF-8 text');
    expect(() => decodeBase64Text('/w==', 'query')).toThrow('query: the base64 does not decode to UTF-8 text');
    expect(() => decodeBase64Text('a b', 'payload')).toThrow('payload: invalid base64');
  });
});
