import { describe, expect, it } from 'vitest';
import type { Event } from '../../../src/stream/event.ts';
import { pipe, run, s } from '../stream-harness.ts';

describe('filter actions', () => {
  it('where keeps matching events', () => {
    expect(pipe(':where', '[[:> :metric 1]]', [{ metric: 2 }, { metric: 1 }, {}])).toEqual([{ metric: 2 }]);
  });

  it('split sends to the first matching branch only, the last [:always-true] being the default', () => {
    const tree = `{:action :split :params [[[:> :metric 10] [:> :metric 5] [:always-true]]]
                   :children [{:action :with :params [{:b "big"}] :children [{:action :tap :params [:out]}]}
                              {:action :with :params [{:b "mid"}] :children [{:action :tap :params [:out]}]}
                              {:action :with :params [{:b "small"}] :children [{:action :tap :params [:out]}]}]}`;
    expect(run(tree, [{ metric: 11 }, { metric: 6 }, { metric: 1 }, {}]).map((e) => (e as Event).b)).toEqual([
      'big',
      'mid',
      'small',
      'small',
    ]);
    const noDefault = '{:action :split :params [[[:> :metric 10]]] :children [{:action :tap :params [:out]}]}';
    expect(run(noDefault, [{ metric: 11 }, { metric: 1 }])).toEqual([{ metric: 11 }]);
  });

  it('over and under are strict and drop events without metric', () => {
    expect(pipe(':over', '[1.5]', [{ metric: 2 }, { metric: 1.5 }, {}])).toEqual([{ metric: 2 }]);
    expect(pipe(':under', '[0]', [{ metric: -1 }, { metric: 0 }, { metric: null }])).toEqual([{ metric: -1 }]);
  });

  it('tagged-all needs every tag, tagged-any one of them', () => {
    const events = [{ tags: ['a', 'b'] }, { tags: ['a'] }, { tags: ['c'] }, {}];
    expect(pipe(':tagged-all', '[["a" "b"]]', events)).toEqual([{ tags: ['a', 'b'] }]);
    expect(pipe(':tagged-all', '["a"]', events)).toEqual([{ tags: ['a', 'b'] }, { tags: ['a'] }]);
    expect(pipe(':tagged-any', '[["b" "c"]]', events)).toEqual([{ tags: ['a', 'b'] }, { tags: ['c'] }]);
  });

  it('expired / not-expired use ttl in seconds against the newest time seen', () => {
    const events: Event[] = [
      { time: s(100), id: 1 },
      { time: s(200), id: 2 },
      { time: s(100), id: 3, ttl: 100 },
      { time: s(100), id: 4, ttl: 99 },
      { id: 5 },
      { id: 6, state: 'expired' },
    ];
    expect(pipe(':expired', '[]', events).map((e) => (e as Event).id)).toEqual([4, 6]);
    expect(pipe(':not-expired', '[]', events).map((e) => (e as Event).id)).toEqual([1, 2, 3, 5]);
  });

  it('expired: the default ttl is 120 s', () => {
    expect(
      pipe(':expired', '[]', [{ time: s(1000) }, { time: s(880), id: 'edge' }, { time: s(879), id: 'old' }]),
    ).toEqual([{ time: s(879), id: 'old' }]);
  });

  it('critical and warning filter on state', () => {
    const events = [{ state: 'critical' }, { state: 'warning' }, { state: 'ok' }];
    expect(pipe(':critical', '[]', events)).toEqual([{ state: 'critical' }]);
    expect(pipe(':warning', '[]', events)).toEqual([{ state: 'warning' }]);
  });
});
