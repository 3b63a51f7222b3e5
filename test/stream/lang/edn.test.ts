import { describe, expect, it } from 'vitest';
import {
  EdnError,
  ednEquals,
  ednToJs,
  EdnSymbol,
  jsToEdn,
  kw,
  MAX_EDN_DEPTH,
  parseEdn,
  printEdn,
} from '../../../src/stream/lang/edn.ts';

describe('parseEdn', () => {
  it('reads maps, vectors, lists, sets, keywords, strings, numbers and nil', () => {
    const value = parseEdn('{:a 1, :b [1 2 (3 4)] :c #{:x} "s" "q\\"x\\n" :ns/k nil :t true :f 1.5}');
    expect(value).toBeInstanceOf(Map);
    const map = value as Map<unknown, unknown>;
    expect(map.get(kw('a'))).toBe(1);
    expect(map.get(kw('b'))).toEqual([1, 2, [3, 4]]);
    expect(map.get(kw('c'))).toEqual(new Set([kw('x')]));
    expect(map.get('s')).toBe('q"x\n');
    expect(map.get(kw('ns/k'))).toBeNull();
    expect(map.get(kw('t'))).toBe(true);
    expect(map.get(kw('f'))).toBe(1.5);
  });

  it('interns keywords, so they key maps', () => {
    expect(parseEdn(':state')).toBe(kw('state'));
  });

  it('converts ratios, big integers and characters', () => {
    expect(parseEdn('1/2')).toBe(0.5);
    expect(parseEdn('-3/4')).toBe(-0.75);
    expect(parseEdn('10N')).toBe(10);
    expect(parseEdn('\\a')).toBe('a');
    expect(parseEdn('foo')).toEqual(new EdnSymbol('foo'));
  });

  it('keeps vector keys as maps keys', () => {
    const map = parseEdn('{[:attributes :env] "prod"}') as Map<unknown, unknown>;
    expect([...map.keys()][0]).toEqual([kw('attributes'), kw('env')]);
  });

  it('skips comments and #_ discards', () => {
    expect(printEdn(parseEdn('; head\n{:a #_ 1 2 ; tail\n :b #_ #_ 3 4 5}'))).toBe('{:a 2, :b 5}');
  });

  it('resolves #env and #secret', () => {
    process.env.VIGIE_EDN_TEST = 'from-env';
    expect(parseEdn('{:x #env VIGIE_EDN_TEST :y #env "VIGIE_EDN_TEST"}')).toEqual(
      new Map([
        [kw('x'), 'from-env'],
        [kw('y'), 'from-env'],
      ]),
    );
    expect(parseEdn('#env VIGIE_EDN_UNSET_VARIABLE')).toBeNull();
    expect(parseEdn('#secret "pw"')).toBe('pw');
  });

  it.each([
    ['{:a', "Invalid EDN at line 1, column 4: expected '}' to close '{' opened at line 1, column 1"],
    ['[1 2', "Invalid EDN at line 1, column 5: expected ']' to close '[' opened at line 1, column 1"],
    ['"abc', `Invalid EDN at line 1, column 5: expected '"' to close the string opened at line 1, column 1`],
    [
      '{:a 1 :b}',
      'Invalid EDN at line 1, column 9: the map opened at line 1, column 1 has a key with no value (the last key is at line 1, column 7)',
    ],
    ['[:a ]]', "Invalid EDN at line 1, column 6: unexpected ']' with nothing to close"],
    ['[1 2}', "Invalid EDN at line 1, column 5: expected ']' to close '[' opened at line 1, column 1, got '}'"],
    [
      '{:a {:b 1\n  :c [1 2]\n',
      "Invalid EDN at line 3, column 1: expected '}' to close '{' opened at line 1, column 5",
    ],
    ['{:x\n\n    {:y 2}', "Invalid EDN at line 3, column 11: expected '}' to close '{' opened at line 1, column 1"],
    ['#foo 1', 'Invalid EDN at line 1, column 1: unsupported tag #foo (only #env, #secret and #object are supported)'],
    ['#"a.*"', 'Invalid EDN at line 1, column 1: regular expression literals (#"...") are not supported'],
    ['1 2', 'Invalid EDN at line 1, column 3: expected end of input after the first value'],
    ['', 'Invalid EDN at line 1, column 1: expected a value, got end of input'],
    ['[#_]', "Invalid EDN at line 1, column 4: expected a value after '#_' (at line 1, column 2)"],
    ['[1.2.3]', 'Invalid EDN at line 1, column 2: invalid number 1.2.3'],
    ['1/0', 'Invalid EDN at line 1, column 1: invalid ratio 1/0: division by zero'],
    ['"a\\qb"', "Invalid EDN at line 1, column 3: invalid escape '\\q' in a string"],
    ['{:a 1 :a 2}', 'Invalid EDN: duplicate key :a in a map'],
  ])('rejects %j with the position and what was expected', (text, message) => {
    expect(() => parseEdn(text)).toThrow(EdnError);
    expect(() => parseEdn(text)).toThrow(message);
  });
});

describe('printEdn', () => {
  it('prints Clojure style', () => {
    expect(
      printEdn(
        new Map<never, never>([
          [kw('a'), 1],
          [kw('b'), [1, 2]],
        ] as never),
      ),
    ).toBe('{:a 1, :b [1 2]}');
    expect(printEdn('a"b\\c\nd')).toBe('"a\\"b\\\\c\\nd"');
    expect(printEdn(null)).toBe('nil');
    expect(printEdn(new Set([kw('x')]))).toBe('#{:x}');
  });

  it('prints non-integral and huge numbers as Java doubles', () => {
    expect(printEdn(0.5)).toBe('0.5');
    expect(printEdn(1e-7)).toBe('1.0E-7');
    expect(printEdn(1.5e22)).toBe('1.5E22');
    expect(printEdn(1735047872000000000)).toBe('1735047872000000000');
    expect(printEdn(Number.NaN)).toBe('##NaN');
    expect(printEdn(-Infinity)).toBe('##-Inf');
  });

  it('round-trips what it reads', () => {
    const text =
      '{:actions {:action :where, :params [[:and [:= :service "api"] [:> :metric 1.5]]], :children [{:action :tap, :params [:t]}]}, :default true}';
    expect(printEdn(parseEdn(text))).toBe(text);
    expect(ednEquals(parseEdn(printEdn(parseEdn(text))), parseEdn(text))).toBe(true);
  });
});

describe('EDN and the event model', () => {
  it('ednToJs turns keywords into strings and maps into objects', () => {
    expect(ednToJs(parseEdn('{:host "a" :state :ok :tags ["x"] :attributes {:env "prod"} :ns/k 1}'))).toEqual({
      host: 'a',
      state: 'ok',
      tags: ['x'],
      attributes: { env: 'prod' },
      'ns/k': 1,
    });
  });

  it('jsToEdn gives back printable EDN', () => {
    expect(
      printEdn(
        jsToEdn({ host: 'a', metric: 1.5, tags: ['x'], attributes: { env: 'prod' }, gone: undefined, none: null }),
      ),
    ).toBe('{:host "a", :metric 1.5, :tags ["x"], :attributes {:env "prod"}, :none nil}');
  });

  it('ednEquals compares structurally', () => {
    expect(ednEquals(parseEdn('{:a [1 {:b #{:c}}]}'), parseEdn('{:a (1 {:b #{:c}})}'))).toBe(true);
    expect(ednEquals(parseEdn('{:a 1}'), parseEdn('{:a 2}'))).toBe(false);
    expect(ednEquals(parseEdn('{[:a] 1}'), parseEdn('{[:a] 1}'))).toBe(true);
  });
});

describe('nesting limit', () => {
  it('reads collections nested up to MAX_EDN_DEPTH and refuses deeper ones naming the limit', () => {
    expect(parseEdn(`${'['.repeat(MAX_EDN_DEPTH)}${']'.repeat(MAX_EDN_DEPTH)}`)).toBeInstanceOf(Array);
    expect(() => parseEdn(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)).toThrow(
      `Invalid EDN at line 1, column ${MAX_EDN_DEPTH + 1}: collections nest deeper than the limit of ${MAX_EDN_DEPTH} levels`,
    );
  });
});
