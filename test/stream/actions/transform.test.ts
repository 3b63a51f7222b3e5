import { describe, expect, it } from 'vitest';
import { pipe, run } from '../stream-harness.ts';

describe('transform actions', () => {
  it('with sets fields and nested paths, nil included, keywords as strings', () => {
    expect(
      pipe(':with', '[{:state "critical" [:attributes :team] "ops" :gone nil :kind :alert}]', [
        { metric: 1, attributes: { env: 'prod' } },
      ]),
    ).toEqual([{ metric: 1, state: 'critical', attributes: { env: 'prod', team: 'ops' }, gone: null, kind: 'alert' }]);
  });

  it('applies to each event of a list', () => {
    expect(
      run('{:action :sflatten :children [{:action :tap :params [:out]}]}', [[{ a: 1 }, { a: 2 }] as never]),
    ).toEqual([{ a: 1 }, { a: 2 }]);
    expect(
      run('{:action :with :params [{:x 1}] :children [{:action :tap :params [:out]}]}', [
        [{ a: 1 }, { a: 2 }] as never,
      ]),
    ).toEqual([
      [
        { a: 1, x: 1 },
        { a: 2, x: 1 },
      ],
    ]);
  });

  it('default sets a field only when missing, nil or false', () => {
    expect(
      pipe(':default', '[:ttl 60]', [{ ttl: 10 }, {}, { ttl: null }, { ttl: false }, { ttl: 0 }] as never[]),
    ).toEqual([{ ttl: 10 }, { ttl: 60 }, { ttl: 60 }, { ttl: 60 }, { ttl: 0 }]);
  });

  it('increment, decrement and scale change the metric', () => {
    expect(pipe(':increment', '[]', [{ metric: 1 }])).toEqual([{ metric: 2 }]);
    expect(pipe(':decrement', '[]', [{ metric: 1 }])).toEqual([{ metric: 0 }]);
    expect(pipe(':scale', '[1000]', [{ metric: 1.5 }])).toEqual([{ metric: 1500 }]);
  });

  it('sdissoc removes fields and the nested maps it empties', () => {
    expect(
      pipe(':sdissoc', '[[:host [:attributes :pod]]]', [
        { host: 'a', metric: 1, attributes: { pod: 'p' } },
        { attributes: { pod: 'p', env: 'e' } },
      ]),
    ).toEqual([{ metric: 1 }, { attributes: { env: 'e' } }]);
    expect(pipe(':sdissoc', '[:host]', [{ host: 'a', metric: 1 }])).toEqual([{ metric: 1 }]);
  });

  it('keep-keys keeps only the listed fields; a nested path keeps only its leaf; absent fields stay absent', () => {
    expect(
      pipe(':keep-keys', '[[:host :metric [:attributes :env]]]', [
        { host: 'a', service: 's', attributes: { env: 'prod', pod: 'p' } },
      ]),
    ).toEqual([{ host: 'a', attributes: { env: 'prod' } }]);
  });

  it('rename-keys moves truthy values, paths on both sides, pruning emptied parents', () => {
    expect(
      pipe(':rename-keys', '[{:host :source [:attributes :dc] :datacenter :nil-field :other}]', [
        { host: 'a', source: 'old', attributes: { dc: 'eu' }, 'nil-field': null },
      ]),
    ).toEqual([{ source: 'a', datacenter: 'eu', 'nil-field': null }]);
  });

  it('tag prepends distinct tags, untag removes them', () => {
    expect(pipe(':tag', '[["a" "b"]]', [{ tags: ['b', 'c'] }, {}])).toEqual([
      { tags: ['a', 'b', 'c'] },
      { tags: ['a', 'b'] },
    ]);
    expect(pipe(':tag', '["x"]', [{}])).toEqual([{ tags: ['x'] }]);
    expect(pipe(':untag', '[["a"]]', [{ tags: ['a', 'b'] }, {}])).toEqual([{ tags: ['b'] }, { tags: [] }]);
  });

  it('sformat fills a Java-style template, missing values print null', () => {
    expect(
      pipe(':sformat', '["%s-%s: %d%% (%.2f) %5s|%-3s|" :id [:host :service :metric :ratio :host :service]]', [
        { host: 'web', service: 'api', metric: 42, ratio: 0.5 },
      ]),
    ).toEqual([{ host: 'web', service: 'api', metric: 42, ratio: 0.5, id: 'web-api: 42% (0.50)   web|api|' }]);
    expect(pipe(':sformat', '["%s/%s" [:a :b] [:host :nope]]', [{ host: 'h' }])).toEqual([
      { host: 'h', a: { b: 'h/null' } },
    ]);
  });

  it('to-string uses Clojure str', () => {
    expect(pipe(':to-string', '[[:metric :missing :attributes]]', [{ metric: 1.5, attributes: { a: true } }])).toEqual([
      { metric: '1.5', missing: '', attributes: '{:a true}' },
    ]);
  });

  it('from-json parses, nil stays nil', () => {
    expect(pipe(':from-json', '[[:payload]]', [{ payload: '{"a":[1,2]}' }, {}])).toEqual([
      { payload: { a: [1, 2] } },
      { payload: null },
    ]);
  });

  it('to-base64 and from-base64 round-trip UTF-8', () => {
    expect(pipe(':to-base64', '[[:p]]', [{ p: 'héllo' }])).toEqual([{ p: 'aMOpbGxv' }]);
    expect(pipe(':from-base64', '[:p]', [{ p: 'aMOpbGxv' }])).toEqual([{ p: 'héllo' }]);
  });

  it('from-base64 refuses what is not standard base64 of UTF-8 text, naming the field', () => {
    expect(() => pipe(':from-base64', '[:p]', [{ p: 'Wzo9IDpob3N0ICI_PyJd' }])).toThrow(
      ':from-base64: p: invalid base64',
    );
    expect(() => pipe(':from-base64', '[[:a :p]]', [{ a: { p: '/w==' } }])).toThrow(
      ':from-base64: a.p: the base64 does not decode to UTF-8 text',
    );
  });

  it('extract emits the value held in a field when truthy', () => {
    expect(pipe(':extract', '[:base-event]', [{ 'base-event': { host: 'a' } }, { 'base-event': null }, {}])).toEqual([
      { host: 'a' },
    ]);
  });

  it('iterate-on emits one event per element, with paths', () => {
    expect(
      pipe(':iterate-on', '[{:source :events :destination :event}]', [
        { id: 1, events: [{ n: 'a' }, { n: 'b' }] },
        { id: 2 },
      ]),
    ).toEqual([
      { id: 1, event: { n: 'a' } },
      { id: 1, event: { n: 'b' } },
    ]);
    expect(
      pipe(':iterate-on', '[{:source [:span :events] :destination [:attributes :event]}]', [
        { span: { events: [1, 2], id: 's' } },
      ]),
    ).toEqual([
      { span: { id: 's' }, attributes: { event: 1 } },
      { span: { id: 's' }, attributes: { event: 2 } },
    ]);
  });

  it('rejects bad params at compile time', () => {
    expect(() => pipe(':sformat', '["%x" :id []]', [])).toThrow(
      'Invalid parameter template for action :sformat: unsupported conversion %x',
    );
    expect(() => pipe(':sformat', '["%s %s" :id [:a]]', [])).toThrow('the template needs 2 value(s), got 1 field(s)');
    expect(() => pipe(':with', '[:state "x"]', [])).toThrow(
      'Invalid parameter params for action :with: expected 1 parameter(s), got 2',
    );
    expect(() => pipe(':iterate-on', '[{:source :a}]', [])).toThrow(
      'Invalid parameter destination for action :iterate-on',
    );
  });
});
