import { describe, expect, it } from 'vitest';
import {
  collBottom,
  collCount,
  collIncrease,
  collMax,
  collMean,
  collMin,
  collPercentiles,
  collQuotient,
  collRate,
  collSort,
  collSum,
  collTop,
  collWhere,
} from '../../../src/stream/actions/collection.ts';
import type { Event } from '../../../src/stream/event.ts';
import { buildNode, ev, runStream, s, times } from './node-harness.ts';

const list = (...pairs: [number | undefined, number | null | undefined, Record<string, unknown>?][]): Event[] =>
  pairs.map(([time, metric, extra]) => ev(time, metric, extra));

describe(':coll-count', () => {
  it('sets the count on the most recent event (the later one on equal times)', () => {
    const node = buildNode(collCount);
    node.push(list([3, 1, { id: 'a' }], [5, 1, { id: 'b' }], [5, 1, { id: 'c' }], [4, 1]));
    expect(node.emitted).toEqual([{ time: 5, metric: 4, id: 'c' }]);
  });

  it('emits a bare {:metric 0} for an empty list or nil', () => {
    const node = buildNode(collCount);
    node.push([], null);
    expect(node.emitted).toEqual([{ metric: 0 }, { metric: 0 }]);
  });

  it('treats events without time as the oldest', () => {
    const node = buildNode(collCount);
    node.push(list([undefined, 1, { id: 'timeless' }], [1, 1, { id: 'timed' }], [undefined, 1]));
    expect(node.emitted).toEqual([{ time: 1, metric: 3, id: 'timed' }]);
  });

  it('rejects a single event instead of a list', () => {
    expect(() => buildNode(collCount).push(ev(1, 1))).toThrow(/list/);
  });
});

describe(':coll-sum and :coll-mean', () => {
  it('sum nil metrics as 0 and emit nil for an empty list', () => {
    const total = buildNode(collSum);
    total.push(list([1, 2], [2, null], [3, 4]), []);
    expect(total.emitted).toEqual([{ time: 3, metric: 6 }, null]);
    const average = buildNode(collMean);
    average.push(list([1, 2], [2, null], [3, 4]), [], null);
    expect(average.emitted).toEqual([{ time: 3, metric: 2 }, null, null]);
  });
});

describe(':coll-max and :coll-min', () => {
  it('pick the extreme metric, the later one on ties, ignoring events without metric (0 is a metric)', () => {
    const max = buildNode(collMax);
    max.push(list([1, 5, { id: 'a' }], [2, undefined], [3, 5, { id: 'b' }], [4, 1]));
    expect(max.emitted).toEqual([{ time: 3, metric: 5, id: 'b' }]);
    const min = buildNode(collMin);
    min.push(list([1, 0, { id: 'a' }], [2, 3], [3, 0, { id: 'b' }], [4, null]));
    expect(min.emitted).toEqual([{ time: 3, metric: 0, id: 'b' }]);
  });

  it('emit nil when no event has a metric, and for an empty list', () => {
    const max = buildNode(collMax);
    max.push(list([1, null]), []);
    expect(max.emitted).toEqual([null, null]);
  });
});

describe(':coll-quotient', () => {
  it('divides the metrics in list order onto the most recent event', () => {
    const node = buildNode(collQuotient);
    node.push(list([2, 100], [1, 5], [3, 4]), list([1, 7]), []);
    expect(node.emitted).toEqual([{ time: 3, metric: 5 }, { time: 1, metric: 7 }, null]);
  });

  it('throws on a division by zero or a missing metric', () => {
    expect(() => buildNode(collQuotient).push(list([1, 1], [2, 0]))).toThrow(/Divide by zero/);
    expect(() => buildNode(collQuotient).push(list([1, 1], [2, null]))).toThrow(/:metric/);
  });
});

describe(':coll-rate', () => {
  it('is the sum of metrics per second between the oldest and the newest event, exactly', () => {
    const node = buildNode(collRate);
    node.push(list([s(1), 1], [s(2), 2], [s(3), 1]));
    expect(node.emitted).toEqual([{ time: s(3), metric: 2 }]);
    node.push(list([s(10), 3], [s(10.5), 3, { id: 'newest' }], [s(10.5), 3, { id: 'newest, later in list' }]));
    expect(node.emitted[1]).toEqual({ time: s(10.5), metric: 18, id: 'newest, later in list' });
    node.push(list([s(0), 1], [s(2.5), 4]));
    expect(node.emitted[2]).toEqual({ time: s(2.5), metric: 2 });
  });

  it('gives the plain sum when all times are equal, nil for an empty list', () => {
    const node = buildNode(collRate);
    node.push(list([s(1), 2], [s(1), 3]), []);
    expect(node.emitted).toEqual([{ time: s(1), metric: 5 }, null]);
  });

  it('throws on a missing metric or time', () => {
    expect(() => buildNode(collRate).push(list([1, 1], [2, null]))).toThrow(/:metric/);
    expect(() => buildNode(collRate).push(list([1, 1], [undefined, 2]))).toThrow(/:time/);
  });
});

describe(':coll-percentiles', () => {
  it('emits, per quantile, the event at rank min(n-1, floor(n·q)) of those with a metric', () => {
    const node = buildNode(collPercentiles, '[[0 0.5 0.99 1]]');
    node.push(list([1, 30], [2, 10], [3, null], [4, 20], [5, 40]));
    expect(node.emitted).toEqual([
      { time: 2, metric: 10, attributes: { quantile: '0' } },
      { time: 1, metric: 30, attributes: { quantile: '0.5' } },
      { time: 5, metric: 40, attributes: { quantile: '0.99' } },
      { time: 5, metric: 40, attributes: { quantile: '1' } },
    ]);
  });

  it('emits nothing for an empty list and validates its quantiles', () => {
    const node = buildNode(collPercentiles, '[[0.5]]');
    node.push([], null, list([1, null]));
    expect(node.emitted).toEqual([]);
    expect(() => buildNode(collPercentiles, '[[-0.5]]')).toThrow(/quantiles\[0\]/);
    expect(() => buildNode(collPercentiles, '[0.5]')).toThrow(/quantiles/);
  });
});

describe(':coll-top and :coll-bottom', () => {
  it('return the n highest (highest first) or lowest (lowest first) events, stable on ties', () => {
    const events = list([1, 3], [2, 9], [3, 3], [4, 1], [5, 9]);
    const highest = buildNode(collTop, '[3]');
    highest.push(events);
    expect(highest.emitted.map(times)).toEqual([[2, 5, 1]]);
    const lowest = buildNode(collBottom, '[2]');
    lowest.push(events, []);
    expect(lowest.emitted.map(times)).toEqual([[4, 1], null]);
    expect(events.map((e) => e.time)).toEqual([1, 2, 3, 4, 5]); // the input list is left alone
  });

  it('need a positive count', () => {
    expect(() => buildNode(collTop, '[0]')).toThrow(/count/);
  });
});

describe(':coll-sort', () => {
  it('sorts stably by a field, nil first', () => {
    const node = buildNode(collSort, '[:host]');
    node.push(list([1, 0, { host: 'b' }], [2, 0, { host: 'a' }], [3, 0], [4, 0, { host: 'a' }]));
    expect(node.emitted.map(times)).toEqual([[3, 2, 4, 1]]);
  });

  it('throws when values cannot be compared (a number with a string)', () => {
    expect(() => buildNode(collSort, '[:metric]').push([{ metric: 1 }, { metric: 'x' } as unknown as Event])).toThrow(
      /compare/,
    );
  });
});

describe(':coll-increase', () => {
  it('emits the newest event with newest − oldest metric', () => {
    const node = buildNode(collIncrease);
    node.push(list([9, 20], [1, 10], [20, 30, { id: 'newest' }]));
    expect(node.emitted).toEqual([{ time: 20, metric: 20, id: 'newest' }]);
  });

  it('emits nothing on a counter reset, no increase, or fewer than two events', () => {
    const node = buildNode(collIncrease);
    node.push(list([1, 10], [2, 3]), list([1, 5], [2, 5]), list([1, 5]), []);
    expect(node.emitted).toEqual([]);
  });

  it('keeps the first event on equal times', () => {
    const node = buildNode(collIncrease);
    node.push(list([1, 1, { id: 'old' }], [1, 0], [2, 5, { id: 'new' }], [2, 9]));
    expect(node.emitted).toEqual([{ time: 2, metric: 4, id: 'new' }]);
  });
});

describe(':coll-where', () => {
  it('filters the list and emits it, possibly empty', () => {
    const node = buildNode(collWhere, '[[:> :metric 10]]');
    node.push(list([1, 5], [2, 15], [3, 20]), list([1, 1]), null);
    expect(node.emitted.map(times)).toEqual([[2, 3], [], []]);
  });
});

describe('collections through the stream compiler', () => {
  it('fixed-event-window -> coll-where -> coll-top -> sflatten -> tap', () => {
    const { taps, errors } = runStream(
      `{:actions {:action :fixed-event-window :params [{:size 4}]
                  :children [{:action :coll-where :params [[:= :state "ok"]]
                              :children [{:action :coll-top :params [2]
                                          :children [{:action :sflatten :children [{:action :tap :params [:top]}]}]}]}]}}`,
      [
        ev(1, 5, { state: 'ok' }),
        ev(2, 50, { state: 'critical' }),
        ev(3, 7, { state: 'ok' }),
        ev(4, 6, { state: 'ok' }),
      ],
    );
    expect(errors).toEqual([]);
    expect(taps.get('top')).toEqual([ev(3, 7, { state: 'ok' }), ev(4, 6, { state: 'ok' })]);
  });
});
