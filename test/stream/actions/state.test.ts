import { describe, expect, it } from 'vitest';
import type { Emission, Event } from '../../../src/stream/event.ts';
import { pipe, s } from '../stream-harness.ts';

const times = (emissions: Emission[]): unknown[] => emissions.map((e) => (e as Event).time);

describe('conditions held over time', () => {
  it('above-dt forwards once the condition held longer than dt, until it breaks', () => {
    const events: Event[] = [
      { time: s(0), metric: 10 },
      { time: s(5), metric: 10 },
      { time: s(11), metric: 10 },
      { time: s(12), metric: 1 },
      { time: s(13), metric: 10 },
      { time: s(20), metric: 10 },
      { time: s(24), metric: 10 },
    ];
    expect(times(pipe(':above-dt', '[[:> :metric 5] 10000000000]', events))).toEqual([s(11), s(24)]);
    expect(times(pipe(':above-dt', '[[:> :metric 5] "10s"]', events))).toEqual([s(11), s(24)]);
  });

  it('is strict on dt and ignores timeless events entirely', () => {
    expect(
      times(
        pipe(':cond-dt', '[[:= :state "critical"] "10s"]', [
          { time: s(0), state: 'critical' },
          { state: 'ok' },
          { time: s(10), state: 'critical' },
          { time: s(10.5), state: 'critical' },
        ]),
      ),
    ).toEqual([s(10.5)]);
  });

  it('between-dt and outside-dt take the compiled DSL shapes', () => {
    const events: Event[] = [
      { time: 0, metric: 50 },
      { time: 2, metric: 50 },
      { time: 3, metric: 95 },
    ];
    expect(times(pipe(':between-dt', '[[:and [:> :metric 10] [:< :metric 90]] 1]', events))).toEqual([2]);
    expect(
      times(
        pipe(':outside-dt', '[[:or [:< :metric 10] [:> :metric 90]] 0]', [
          { time: 0, metric: 95 },
          { time: 1, metric: 99 },
        ]),
      ),
    ).toEqual([1]);
    expect(times(pipe(':below-dt', '[[:< :metric 10] 0]', [{ time: 0, metric: 1 }, { time: 1 }]))).toEqual([]);
  });
});

describe('throttle', () => {
  it('lets count events through per window opened by the first event at or after the previous window end', () => {
    const events: Event[] = [0, 1, 2, 3, 10, 11, 12, 25].map((t) => ({ time: s(t) }));
    expect(times(pipe(':throttle', '[{:count 2 :duration "10s"}]', [...events, {}]))).toEqual([
      s(0),
      s(1),
      s(10),
      s(11),
      s(25),
    ]);
  });

  it('counts late events in the current window', () => {
    expect(times(pipe(':throttle', '[{:count 2 :duration 10}]', [{ time: 10 }, { time: 5 }, { time: 12 }]))).toEqual([
      10, 5,
    ]);
  });
});

describe('changed', () => {
  it('forwards values that differ from the previous one, starting from :init', () => {
    const events: Event[] = ['ok', 'ok', 'critical', 'critical', 'ok'].map((state, i) => ({ time: i, state }));
    expect(times(pipe(':changed', '[{:field :state :init "ok"}]', events))).toEqual([2, 4]);
    expect(times(pipe(':changed', '[{:field :state}]', events))).toEqual([0, 2, 4]);
  });

  it('compares nested paths structurally', () => {
    const events: Event[] = [
      { time: 0, attributes: { v: [1] } },
      { time: 1, attributes: { v: [1] } },
      { time: 2, attributes: { v: [2] } },
    ];
    expect(times(pipe(':changed', '[{:field [:attributes :v] :init [1]}]', events))).toEqual([2]);
  });
});

describe('stable', () => {
  it('holds a run back until it lasted more than dt, then releases it and forwards the rest', () => {
    const events: Event[] = [
      { time: s(0), state: 'ok' },
      { time: s(1), state: 'critical' },
      { time: s(2), state: 'critical' },
      { time: s(3), state: 'critical' },
      { time: s(4), state: 'critical' },
      { time: s(5), state: 'ok' },
      { time: s(4), state: 'ok' },
      { time: s(6), state: 'ok' },
      { state: 'ok' },
      { time: s(7), state: 'ok' },
    ];
    expect(times(pipe(':stable', '["2s" :state]', events))).toEqual([s(1), s(2), s(3), s(4)]);
    expect(times(pipe(':stable', '[1000000000 :state]', events))).toEqual([s(1), s(2), s(3), s(4), s(5), s(6), s(7)]);
  });
});

describe('ddt', () => {
  it('is the derivative per second; the first event primes; dt 0 emits nothing', () => {
    const events: Event[] = [
      { time: s(0), metric: 0 },
      { time: s(2), metric: 10 },
      { time: s(2), metric: 30 },
      { time: s(4), metric: 20 },
      { time: s(5) },
      { metric: 3 },
    ];
    expect(pipe(':ddt', '[]', events).map((e) => (e as Event).metric)).toEqual([5, -5]);
    expect(pipe(':ddt', '[false]', events).map((e) => (e as Event).metric)).toEqual([5, -5]);
    expect(pipe(':ddt-pos', '[]', events).map((e) => (e as Event).metric)).toEqual([5]);
    expect(pipe(':ddt', '[true]', events).map((e) => (e as Event).metric)).toEqual([5]);
  });
});

describe('ewma-timeless, smax, smin', () => {
  it('ewma-timeless averages from 0; no metric gives a nil metric', () => {
    expect(pipe(':ewma-timeless', '[1/2]', [{ metric: 4 }, { metric: 4 }, {}]).map((e) => (e as Event).metric)).toEqual(
      [2, 3, null],
    );
  });

  it('smax and smin emit the best event so far on every event', () => {
    const events: Event[] = [{ metric: 2, id: 'a' }, { metric: 5, id: 'b' }, { metric: 1, id: 'c' }, { id: 'd' }];
    expect(pipe(':smax', '[]', events).map((e) => (e as Event).id)).toEqual(['a', 'b', 'b', 'b']);
    expect(pipe(':smin', '[]', events).map((e) => (e as Event).id)).toEqual(['a', 'a', 'c', 'c']);
  });
});
