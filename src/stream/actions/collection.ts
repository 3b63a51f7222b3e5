/**
 * List actions (`coll-*`): they take the list a window emits and reduce, sort or filter it. "Most recent"
 * means the greatest `:time`, the later one in the list on ties. Where upstream passes nil on (an empty
 * list, no metric at all), so do we, and a nil input is treated as an empty list.
 */
import type { EdnValue } from '../lang/edn.ts';
import type { Event } from '../event.ts';
import { NS_PER_SECOND } from '../event.ts';
import { assocIn, getIn, type Path } from '../lang/path.ts';
import { compareValues, metricOrZero, mostRecent, quantileLabel, requireList, requireNumber } from './numbers.ts';
import { arity, condition, describe, number, path, positiveInteger, ParamError } from './params.ts';
import { type ActionDefinition, type ActionDoc, defineAction, type Node } from './types.ts';

function noParams(raw: readonly EdnValue[]): null {
  arity(raw, 0);
  return null;
}

/** A parameterless list reducer: `reduce` returns what the children receive (nil included). */
function listReducer(name: string, doc: ActionDoc, reduce: (events: readonly Event[]) => Event | Event[] | null) {
  return defineAction({
    name,
    doc,
    state: 'none',
    params: noParams,
    build(_params, ctx): Node {
      const emit = ctx.emit;
      return (emission) => emit(reduce(requireList(emission, name)));
    },
  });
}

/** A parameterless list action that decides itself what (if anything) to emit. */
function listConsumer(
  name: string,
  doc: ActionDoc,
  run: (events: readonly Event[], emit: (event: Event) => void) => void,
) {
  return defineAction({
    name,
    doc,
    state: 'none',
    params: noParams,
    build(_params, ctx): Node {
      const emit = ctx.emit;
      return (emission) => run(requireList(emission, name), emit);
    },
  });
}

function withMetric(event: Event, metric: number | null): Event {
  return { ...event, metric };
}

function sumOf(events: readonly Event[], action: string): number {
  let total = 0;
  for (let i = 0; i < events.length; i++) total += metricOrZero(events[i] as Event, action);
  return total;
}

export const collCount = listReducer(
  'coll-count',
  {
    summary:
      'Emits the most recent event of the list with `:metric` = the number of events; an empty list gives `{:metric 0}`.',
    params: '[]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-count :children [{:action :info}]}]}',
  },
  (events) => (events.length === 0 ? { metric: 0 } : withMetric(mostRecent(events) as Event, events.length)),
);

export const collSum = listReducer(
  'coll-sum',
  {
    summary:
      'Emits the most recent event of the list with `:metric` = the sum of the metrics (a missing metric counts as 0); nil for an empty list.',
    params: '[]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-sum :children [{:action :info}]}]}',
  },
  (events) => (events.length === 0 ? null : withMetric(mostRecent(events) as Event, sumOf(events, 'coll-sum'))),
);

export const collMean = listReducer(
  'coll-mean',
  {
    summary:
      'Emits the most recent event of the list with `:metric` = the mean of the metrics (a missing metric counts as 0); nil for an empty list.',
    params: '[]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-mean :children [{:action :info}]}]}',
  },
  (events) =>
    events.length === 0 ? null : withMetric(mostRecent(events) as Event, sumOf(events, 'coll-mean') / events.length),
);

function extremum(
  events: readonly Event[],
  action: string,
  replaces: (candidate: number, best: number) => boolean,
): Event | null {
  let best: Event | null = null;
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as Event;
    // Clojure truthiness: nil and false are "no metric"; 0 is a metric.
    if (event.metric === undefined || event.metric === null || (event.metric as unknown) === false) continue;
    const metric = requireNumber(event.metric, `:${action}: :metric`);
    if (best === null || replaces(metric, best.metric as number)) best = event;
  }
  return best;
}

export const collMax = listReducer(
  'coll-max',
  {
    summary:
      'Emits the event of the list with the highest metric (events without a metric are ignored; the later one wins ties); nil when no event has a metric.',
    params: '[]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-max :children [{:action :info}]}]}',
  },
  (events) => extremum(events, 'coll-max', (candidate, best) => candidate >= best),
);

export const collMin = listReducer(
  'coll-min',
  {
    summary:
      'Emits the event of the list with the lowest metric (events without a metric are ignored; the later one wins ties); nil when no event has a metric.',
    params: '[]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-min :children [{:action :info}]}]}',
  },
  (events) => extremum(events, 'coll-min', (candidate, best) => candidate <= best),
);

export const collQuotient = listReducer(
  'coll-quotient',
  {
    summary:
      'Emits the most recent event of the list with `:metric` = m1 / m2 / m3 ... in list order (dividing by zero is an error, as in Clojure); nil for an empty list. Pairs with `:project`.',
    params: '[]',
    example:
      '{:action :project :params [[[:= :service "enqueues"] [:= :service "dequeues"]]] :children [{:action :coll-quotient :children [{:action :info}]}]}',
  },
  (events) => {
    if (events.length === 0) return null;
    // `(reduce / [m])` returns m untouched, whatever it is.
    let quotient = (events[0] as Event).metric ?? null;
    for (let i = 1; i < events.length; i++) {
      const divisor = requireNumber((events[i] as Event).metric, ':coll-quotient: :metric');
      if (divisor === 0) throw new RangeError(':coll-quotient: Divide by zero');
      quotient = requireNumber(quotient, ':coll-quotient: :metric') / divisor;
    }
    return withMetric(mostRecent(events) as Event, quotient);
  },
);

export const collRate = listReducer(
  'coll-rate',
  {
    summary:
      'Emits the newest event of the list (the later one on ties) with `:metric` = the sum of the metrics per second between the oldest and the newest event (the plain sum when all times are equal); nil for an empty list. Every event needs a `:time`.',
    params: '[]',
    example:
      '{:action :fixed-event-window :params [{:size 3}] :children [{:action :coll-rate :children [{:action :info}]}]}',
  },
  (events) => {
    if (events.length === 0) return null;
    let base = events[0] as Event;
    let minTime = requireNumber(base.time, ':coll-rate: :time');
    let total = 0;
    for (let i = 0; i < events.length; i++) {
      const event = events[i] as Event;
      const time = requireNumber(event.time, ':coll-rate: :time');
      total += requireNumber(event.metric, ':coll-rate: :metric');
      if (time < minTime) minTime = time;
      if (time >= (base.time as number)) base = event;
    }
    const interval = (base.time as number) - minTime;
    return withMetric(base, interval === 0 ? total : total / (interval / NS_PER_SECOND));
  },
);

export const collPercentiles = defineAction({
  name: 'coll-percentiles',
  state: 'none',
  doc: {
    summary:
      'For each quantile q (>= 0), emits, one at a time, the event at rank `min(n-1, floor(n·q))` of the list sorted by metric (events without a metric are ignored), with `[:attributes :quantile]` = q as a string.',
    params: '[[number ...]]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-percentiles :params [[0.5 0.99]] :children [{:action :info}]}]}',
  },
  params(raw) {
    arity(raw, 1);
    const quantiles = raw[0];
    if (!Array.isArray(quantiles))
      throw new ParamError('quantiles', `expected a vector of quantiles, got ${describe(quantiles)}`);
    return quantiles.map((q, i) => {
      const value = number(q, `quantiles[${i}]`);
      if (value < 0) throw new ParamError(`quantiles[${i}]`, `expected a quantile >= 0, got ${value}`);
      return value;
    });
  },
  build(quantiles, ctx): Node {
    const emit = ctx.emit;
    const labels = quantiles.map(quantileLabel);
    return (emission) => {
      const events = requireList(emission, 'coll-percentiles').filter(
        (e) => e.metric !== undefined && e.metric !== null && (e.metric as unknown) !== false,
      );
      if (events.length === 0) return;
      events.sort((a, b) => compareValues(a.metric, b.metric));
      const n = events.length;
      for (let i = 0; i < quantiles.length; i++) {
        const event = events[Math.min(n - 1, Math.floor(n * (quantiles[i] as number)))] as Event;
        emit(assocIn(event, QUANTILE_PATH, labels[i]));
      }
    };
  },
});

const QUANTILE_PATH: Path = ['attributes', 'quantile'];

function metricOrder(descending: boolean, action: string): (a: Event, b: Event) => number {
  const what = `:${action}: :metric`;
  return (a, b) => {
    const ma = requireNumber(a.metric, what);
    const mb = requireNumber(b.metric, what);
    if (ma === mb) return 0;
    return ma > mb === descending ? -1 : 1;
  };
}

function extremes(name: string, descending: boolean, doc: ActionDoc) {
  const order = metricOrder(descending, name);
  return defineAction({
    name,
    doc,
    state: 'none',
    params(raw) {
      arity(raw, 1);
      return positiveInteger(raw[0], 'count');
    },
    build(count, ctx): Node {
      const emit = ctx.emit;
      return (emission) => {
        const events = requireList(emission, name);
        emit(events.length === 0 ? null : [...events].sort(order).slice(0, count));
      };
    },
  });
}

export const collTop = extremes('coll-top', true, {
  summary:
    'Emits the list of the `n` events with the highest metrics, highest first (stable on ties); nil for an empty list. Every event needs a numeric metric.',
  params: '[integer]',
  example:
    '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-top :params [5] :children [{:action :info}]}]}',
});

export const collBottom = extremes('coll-bottom', false, {
  summary:
    'Emits the list of the `n` events with the lowest metrics, lowest first (stable on ties); nil for an empty list. Every event needs a numeric metric.',
  params: '[integer]',
  example:
    '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-bottom :params [5] :children [{:action :info}]}]}',
});

/** Upstream takes a keyword only; a nested path (`[:attributes :rank]`) is accepted too. */
export const collSort = defineAction({
  name: 'coll-sort',
  state: 'none',
  doc: {
    summary: 'Emits the list sorted (stably) by the field, nil values first.',
    params: '[field]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-sort :params [:time] :children [{:action :info}]}]}',
  },
  params(raw) {
    arity(raw, 1);
    return path(raw[0], 'field');
  },
  build(field, ctx): Node {
    const emit = ctx.emit;
    return (emission) =>
      emit([...requireList(emission, 'coll-sort')].sort((a, b) => compareValues(getIn(a, field), getIn(b, field))));
  },
});

export const collIncrease = listConsumer(
  'coll-increase',
  {
    summary:
      'For a counter: with at least two events, emits the newest event of the list (by time, the first one on ties) with `:metric` = newest metric − oldest metric, only when that increase is positive (a reset emits nothing).',
    params: '[]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-increase :children [{:action :info}]}]}',
  },
  (events, emit) => {
    if (events.length < 2) return;
    let newest = events[0] as Event;
    let oldest = newest;
    for (let i = 1; i < events.length; i++) {
      const event = events[i] as Event;
      const time = requireNumber(event.time, ':coll-increase: :time');
      if (time < requireNumber(oldest.time, ':coll-increase: :time')) oldest = event;
      else if (time > requireNumber(newest.time, ':coll-increase: :time')) newest = event;
    }
    const increase =
      requireNumber(newest.metric, ':coll-increase: :metric') - requireNumber(oldest.metric, ':coll-increase: :metric');
    if (increase > 0) emit(withMetric(newest, increase));
  },
);

export const collWhere = defineAction({
  name: 'coll-where',
  state: 'none',
  doc: {
    summary: 'Emits the (possibly empty) list of the events of the list that match the condition.',
    params: '[condition]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m"}] :children [{:action :coll-where :params [[:> :metric 10]] :children [{:action :coll-count :children [{:action :info}]}]}]}',
  },
  params(raw) {
    arity(raw, 1);
    return condition(raw[0], 'condition');
  },
  build(matches, ctx): Node {
    const emit = ctx.emit;
    return (emission) => emit(requireList(emission, 'coll-where').filter((event) => matches(event)));
  },
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const collectionActions: ActionDefinition<any>[] = [
  collCount,
  collSum,
  collMean,
  collMax,
  collMin,
  collQuotient,
  collRate,
  collPercentiles,
  collTop,
  collBottom,
  collSort,
  collIncrease,
  collWhere,
];
