import { describe, expect, it } from 'vitest';
import { sameLabels } from '../../src/common/labels.ts';

describe('sameLabels', () => {
  it('is true for the same names and values in any order, and for none against {}', () => {
    expect(sameLabels({ a: '1', b: '2' }, { b: '2', a: '1' })).toBe(true);
    expect(sameLabels(undefined, {})).toBe(true);
    expect(sameLabels({}, undefined)).toBe(true);
  });

  it('is false for a value, a name more or a name less', () => {
    expect(sameLabels({ a: '1' }, { a: '2' })).toBe(false);
    expect(sameLabels({ a: '1' }, { a: '1', b: '2' })).toBe(false);
    expect(sameLabels({ a: '1', b: '2' }, { a: '1' })).toBe(false);
    expect(sameLabels({ a: '1' }, { b: '1' })).toBe(false);
    expect(sameLabels(undefined, { a: '1' })).toBe(false);
  });
});
