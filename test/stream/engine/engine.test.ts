import { describe, expect, it } from 'vitest';
import { StreamConfigError } from '../../../src/stream/engine/compiler.ts';
import { parseEdn } from '../../../src/stream/lang/edn.ts';
import { StreamEngine, StreamNotFoundError } from '../../../src/stream/engine/engine.ts';

const tapTo = (tap: string, extra = '') => `{:actions {:action :tap :params [:${tap}]}${extra}}`;

describe('StreamEngine', () => {
  it('adds, lists, gets and removes streams', () => {
    const engine = new StreamEngine({ testMode: true });
    expect(engine.add('b', tapTo('b'))).toBe('added');
    expect(engine.add('a', parseEdn(tapTo('a', ' :default true :persist true')))).toBe('added');
    expect(engine.names()).toEqual(['a', 'b']);
    expect(engine.get('a')).toMatchObject({
      name: 'a',
      isDefault: true,
      persist: true,
      source: '{:actions {:action :tap, :params [:a]}, :default true, :persist true}',
    });
    expect(engine.get('b')?.source).toBe(tapTo('b'));
    expect(engine.remove('b')).toBe(true);
    expect(engine.remove('b')).toBe(false);
    expect(engine.names()).toEqual(['a']);
  });

  it('replaces a stream (state and index lost) unless asked to keep an unchanged one', () => {
    const engine = new StreamEngine({ testMode: true });
    const config = '{:actions {:action :index :params [[:host]]}}';
    engine.add('s', config);
    engine.push('s', [{ host: 'a', time: 1 }]);
    expect(engine.add('s', `${config} `, { keepStateIfUnchanged: true })).toBe('unchanged');
    expect(engine.index('s')?.size).toBe(1);
    expect(engine.add('s', config)).toBe('replaced');
    expect(engine.index('s')?.size).toBe(0);
  });

  it('rejects invalid configs and names with StreamConfigError, keeping the running stream', () => {
    const engine = new StreamEngine({ testMode: true });
    engine.add('s', tapTo('t'));
    expect(() => engine.add('s', '{:actions')).toThrow(StreamConfigError);
    expect(() => engine.add('s', '{:actions')).toThrow(
      "Invalid EDN at line 1, column 10: expected '}' to close '{' opened at line 1, column 1",
    );
    expect(() => engine.add('s', '{:actions {:action :foo}}')).toThrow('Unknown action :foo at :actions > :foo');
    expect(() => engine.add('bad/name', tapTo('t'))).toThrow('Invalid stream name "bad/name"');
    engine.push('s', [{ id: 1 }]);
    expect(engine.taps().get('t')).toEqual([{ id: 1 }]);
  });

  it('pushes to default streams only through the name default', () => {
    const engine = new StreamEngine({ testMode: true });
    engine.add('d1', tapTo('d1', ' :default true'));
    engine.add('d2', tapTo('d2', ' :default true'));
    engine.add('other', tapTo('other'));
    engine.add('default', tapTo('named-default'));
    engine.push('default', [{ id: 1 }]);
    expect(Object.fromEntries(engine.taps())).toEqual({ d1: [{ id: 1 }], d2: [{ id: 1 }] });
  });

  it('throws StreamNotFoundError for an unknown stream', () => {
    const engine = new StreamEngine();
    expect(() => engine.push('nope', [{}])).toThrow(StreamNotFoundError);
    expect(() => engine.push('nope', [{}])).toThrow('Stream nope not found');
  });

  it('returns action errors of a push, still processing the other events and siblings', () => {
    const errors: [string, boolean][] = [];
    const pushed: [string, number][] = [];
    const engine = new StreamEngine({
      testMode: true,
      observer: {
        error: (stream, _e, handled) => errors.push([stream, handled]),
        pushed: (stream, count, seconds) => {
          expect(seconds).toBeGreaterThanOrEqual(0);
          pushed.push([stream, count]);
        },
      },
    });
    engine.add(
      's',
      '{:actions {:action :sdo :children [{:action :increment :children [{:action :tap :params [:inc]}]} {:action :tap :params [:all]}]}}',
    );
    const result = engine.push('s', [{ metric: 1 }, { host: 'x' }, { metric: 5 }]);
    expect(result.errorCount).toBe(1);
    expect(result.errors[0]?.stream).toBe('s');
    expect(result.errors[0]?.error.message).toBe(':increment needs a numeric :metric, got null');
    expect(engine.taps().get('inc')).toEqual([{ metric: 2 }, { metric: 6 }]);
    expect(engine.taps().get('all')).toHaveLength(3);
    expect(errors).toEqual([['s', false]]);
    expect(pushed).toEqual([['s', 3]]);
  });

  it('caps the reported errors but counts them all', () => {
    const engine = new StreamEngine();
    engine.add('s', '{:actions {:action :increment}}');
    const result = engine.push(
      's',
      Array.from({ length: 25 }, () => ({})),
    );
    expect(result.errorCount).toBe(25);
    expect(result.errors).toHaveLength(10);
  });

  it('outside test mode taps record nothing and io forwards', () => {
    const engine = new StreamEngine();
    engine.add('s', '{:actions {:action :io :children [{:action :tap :params [:t]}]}}');
    engine.push('s', [{}]);
    expect(engine.taps().size).toBe(0);
  });
});
