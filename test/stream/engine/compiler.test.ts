import { describe, expect, it } from 'vitest';
import type { StreamServices } from '../../../src/stream/actions/types.ts';
import { compileStream, StreamConfigError } from '../../../src/stream/engine/compiler.ts';
import { parseEdn } from '../../../src/stream/lang/edn.ts';
import type { Emission } from '../../../src/stream/event.ts';
import { IndexStore } from '../../../src/stream/index-store.ts';

function services(tapped: Map<string, Emission[]>): StreamServices {
  return {
    streamName: 's',
    testMode: true,
    index: new IndexStore(),
    reinject: () => {},
    output: () => {},
    hasOutput: (name) => name === 'known',
    publish: () => {},
    hasAsyncQueue: () => true,
    enqueue: () => {},
    tap: (name, emission) => tapped.set(name, [...(tapped.get(name) ?? []), emission]),
    log: () => {},
  };
}

const compile = (edn: string) => compileStream(parseEdn(edn), services(new Map()));

describe('compileStream', () => {
  it('compiles a tree and reads :default, :persist and :description', () => {
    const tapped = new Map<string, Emission[]>();
    const stream = compileStream(
      parseEdn(
        '{:actions {:action :sdo :children [{:action :where :params [[:> :metric 1]] :children [{:action :tap :params [:big]}]} {:action :tap :params [:all]}]} :default true :description "d"}',
      ),
      services(tapped),
    );
    stream.push({ metric: 2 });
    stream.push({ metric: 0 });
    expect(tapped.get('big')).toEqual([{ metric: 2 }]);
    expect(tapped.get('all')).toEqual([{ metric: 2 }, { metric: 0 }]);
    expect([stream.isDefault, stream.persist, stream.description]).toEqual([true, false, 'd']);
  });

  it.each([
    [
      '{:actions {:action :where :params [[:> :metric 1]] :children [{:action :foo}]}}',
      'Unknown action :foo at :actions > :where > :foo',
    ],
    ['{:actions {:action :nope}}', 'Unknown action :nope at :actions > :nope'],
    [
      '{:actions {:action :where :params [[:bad :metric 1]]}}',
      'Invalid parameter condition for action :where: Invalid condition [:bad :metric 1]: unknown operator :bad (at :actions > :where)',
    ],
    [
      '{:actions {:action :over :params ["x"]}}',
      'Invalid parameter threshold for action :over: expected a number, got the string "x" (at :actions > :over)',
    ],
    [
      '{:actions {:action :over :params [1 2]}}',
      'Invalid parameter params for action :over: expected 1 parameter(s), got 2',
    ],
    ['{:actions {:action :over :params 1}}', 'Invalid parameter params for action :over: expected a vector, got 1'],
    [
      '{:actions {:action :throttle :params [{:count 0 :duration "1s"}]}}',
      'Invalid parameter count for action :throttle: expected a positive integer, got 0',
    ],
    [
      '{:actions {:action :throttle :params [{:count 1 :duration "1x"}]}}',
      'Invalid parameter duration for action :throttle: time: unknown unit "x" in duration "1x"',
    ],
    [
      '{:actions {:action :exception-stream :children [{:action :info}]}}',
      'Invalid children for action :exception-stream at :actions > :exception-stream: it needs exactly 2 children, got 1',
    ],
    [
      '{:actions {:action :tap :params [:t] :children [{:action :info}]}}',
      'Invalid children for action :tap at :actions > :tap: it takes no children, got 1',
    ],
    [
      '{:actions {:action :split :params [[[:> :metric 1]]] :children [{:action :info} {:action :info}]}}',
      'Invalid parameter conditions for action :split: expected one condition per child: 1 condition(s), 2 child(ren)',
    ],
    [
      '{:actions {:action :output! :params [:unknown]}}',
      'Invalid action :output! at :actions > :output!: Output :unknown not found',
    ],
    [
      '{:actions {:action :sdo :chidlren []}}',
      'Invalid action :sdo at :actions > :sdo: unknown key :chidlren (expected :action, :params, :children, :description)',
    ],
    [
      '{:actions {:action :sdo :children [42]}}',
      'Invalid action at :actions > :sdo: expected a map like {:action :sdo :children [...]}, got 42',
    ],
    ['{:actions {:params []}}', 'Invalid action at :actions: missing :action'],
    ['{:actions {:action "sdo"}}', 'Invalid action at :actions: :action must be a keyword, got the string "sdo"'],
    ['{:default true}', 'Invalid stream config: missing :actions (the root action)'],
    [
      '{:actions {:action :sdo} :defualt true}',
      'Invalid stream config: unknown key :defualt (expected :actions, :default, :persist, :description, :partition-by)',
    ],
    [
      '{:actions {:action :sdo} :default "yes"}',
      'Invalid stream config: :default must be true or false, got the string "yes"',
    ],
    ['[:actions]', 'Invalid stream config: expected a map like {:actions {...}}, got a vector'],
    [
      '{:actions {:action :sdo} :partition-by :host}',
      'Invalid stream config: :partition-by must be a non-empty vector of event fields like [:host], got the keyword :host',
    ],
    [
      '{:actions {:action :sdo} :partition-by []}',
      'Invalid stream config: :partition-by must be a non-empty vector of event fields like [:host], got a vector',
    ],
    [
      '{:actions {:action :sdo} :partition-by ["host"]}',
      'Invalid stream config: :partition-by must name event fields as keywords like :host, got the string "host"',
    ],
    [
      '{:actions {:action :sdo} :partition-by [:attributes.region]}',
      'Invalid stream config: :partition-by takes top-level event fields only, got :attributes.region',
    ],
  ])('rejects %s', (edn, message) => {
    expect(() => compile(edn)).toThrow(StreamConfigError);
    expect(() => compile(edn)).toThrow(message);
  });

  it('accepts lists for :children and :params (the compile command writes lists)', () => {
    expect(() => compile('{:actions {:action :sdo :children ({:action :over :params (1)})}}')).not.toThrow();
  });

  it('isolates siblings: an action that throws does not stop the next child, the error goes to onError', () => {
    const tapped = new Map<string, Emission[]>();
    const errors: unknown[] = [];
    const stream = compileStream(
      parseEdn(
        '{:actions {:action :sdo :children [{:action :increment :children [{:action :tap :params [:inc]}]} {:action :tap :params [:after]}]}}',
      ),
      services(tapped),
      { onError: (error) => errors.push(error) },
    );
    stream.push({ host: 'no-metric' });
    stream.push({ metric: 1 });
    expect(tapped.get('after')).toEqual([{ host: 'no-metric' }, { metric: 1 }]);
    expect(tapped.get('inc')).toEqual([{ metric: 2 }]);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toContain(':increment needs a numeric :metric');
  });

  it('rethrows by default, so a single action can be tested without a handler', () => {
    const stream = compile('{:actions {:action :increment}}');
    expect(() => stream.push({})).toThrow(':increment needs a numeric :metric');
  });
});

describe('unknown keys in an options map', () => {
  const error = (edn: string) => {
    try {
      compile(edn);
    } catch (caught) {
      return (caught as Error).message;
    }
    throw new Error('compiled');
  };

  it('names a misspelled key and the key it likely meant, even when a required key is missing because of it', () => {
    expect(error('{:actions {:action :fixed-time-window :params [{:durration "10s"}]}}')).toMatch(
      /^Invalid parameter :durration for action :fixed-time-window: unknown key \(did you mean :duration\?\); the keys are :duration /,
    );
    expect(error('{:actions {:action :by :params [{:fields [:host] :gc-intervall "1m"}]}}')).toMatch(
      /^Invalid parameter :gc-intervall for action :by: unknown key \(did you mean :gc-interval\?\); the keys are :fields, :gc-interval, :fork-ttl/,
    );
    expect(error('{:actions {:action :throttle :params [{:count 2 :duraton "1m"}]}}')).toMatch(
      /Invalid parameter :duraton for action :throttle: unknown key \(did you mean :duration\?\)/,
    );
  });

  it('refuses a key no reader knows, listing the keys', () => {
    expect(error('{:actions {:action :coalesce :params [{:duration "10s" :fields [:host] :color "red"}]}}')).toMatch(
      /^Invalid parameter :color for action :coalesce: unknown key; the keys are :duration, :fields/,
    );
  });

  it('still reports a missing key when nothing looks like it', () => {
    expect(error('{:actions {:action :fixed-time-window :params [{:delay "1s"}]}}')).toMatch(
      /Invalid parameter :duration for action :fixed-time-window/,
    );
  });

  it('takes what Mirabelle compiles: :aggr-fn in a window, any field in :with and :rename-keys', () => {
    expect(() =>
      compile('{:actions {:action :fixed-time-window :params [{:duration 10 :aggr-fn :fixed-time-window}]}}'),
    ).not.toThrow();
    expect(() => compile('{:actions {:action :with :params [{:anything 1 :at-all 2}]}}')).not.toThrow();
    expect(() => compile('{:actions {:action :rename-keys :params [{:a :b}]}}')).not.toThrow();
  });
});
