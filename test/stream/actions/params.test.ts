import { describe, expect, it } from 'vitest';
import { readParams } from '../../../src/stream/actions/params.ts';
import { type EdnMap, parseEdn } from '../../../src/stream/lang/edn.ts';

const options = (text: string) => parseEdn(text) as EdnMap;

describe('readParams: each read of params has its own context', () => {
  it('gives each reading its own warnings and its own options, even when one starts while another is open', () => {
    const outerWarnings: string[] = [];
    const innerWarnings: string[] = [];
    const outer = options('{:duration 10 :delay "1s"}');
    const inner = options('{:duration 20 :typo 1}');
    expect(() =>
      readParams(outerWarnings, (read) => {
        const map = read.map(outer, 'config');
        // Another compile (a reload, a vigie test run) reading its params in the middle of this one.
        expect(() =>
          readParams(innerWarnings, (other) =>
            other.duration(other.option(other.map(inner, 'config'), 'duration'), ':duration'),
          ),
        ).toThrow(':typo: unknown key; the keys are :duration');
        read.duration(read.option(map, 'duration'), ':duration');
        return read.duration(read.option(map, 'delay'), ':delay');
      }),
    ).not.toThrow();
    expect(outerWarnings).toEqual([':duration 10 is 10 ns; write "10s" for seconds']);
    expect(innerWarnings).toEqual([':duration 20 is 20 ns; write "20s" for seconds']);
  });

  it('refuses a key no option() read, naming the close one when the read failed first', () => {
    expect(() =>
      readParams([], (read) => read.option(read.map(options('{:duration "1s" :extra 1}'), 'config'), 'duration')),
    ).toThrow(':extra: unknown key; the keys are :duration');
    expect(() =>
      readParams([], (read) =>
        read.duration(read.option(read.map(options('{:durration "1s"}'), 'config'), 'duration'), ':duration'),
      ),
    ).toThrow(':durration: unknown key (did you mean :duration?); the keys are :duration');
  });
});
