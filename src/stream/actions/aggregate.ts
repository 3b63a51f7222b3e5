/**
 * Time aggregations: `sum`, `mean`, `top`, `bottom`, `rate`, `ratio` and `ssort` run on the shared windowing
 * engine (aggregation-engine.ts; `fixed-time-window` lives in window.ts), `percentiles` on an HdrHistogram
 * (percentiles.ts). Every event must have a `:time` (upstream throws otherwise, and so do we).
 */
import type { Event } from '../event.ts';
import { NS_PER_SECOND } from '../event.ts';
import { getIn, type Path } from '../lang/path.ts';
import {
  type Aggregator,
  EVENT_LIST_WINDOWS,
  readWindowParams,
  type WindowParams,
  windowedAggregation,
} from './aggregation-engine.ts';
import { compareValues, metricOrZero, requireNumber } from './numbers.ts';
import { boolean, condition, describe, path, ParamError } from './params.ts';
import { percentiles } from './percentiles.ts';
import * as shape from './state-shape.ts';
import { type ActionDefinition, defineAction, type Emit } from './types.ts';

/** Emits one finalised event per flushed window. */
function eachWindow<A>(finalise: (accumulator: A) => Event): (windows: A[], emit: Emit) => void {
  return (windows, emit) => {
    for (let i = 0; i < windows.length; i++) emit(finalise(windows[i] as A));
  };
}

interface SumWindow {
  base: Event;
  sum: unknown;
  count: number;
}

const sumAggregator: Aggregator<SumWindow> = {
  // The sum is checked when it is added to, like the metrics it sums.
  shape: shape.record({ base: shape.event, sum: shape.anything, count: shape.natural }),
  start: (event) => ({ base: event, sum: event.metric, count: 1 }),
  add(window, event) {
    window.sum = requireNumber(window.sum, ':sum: :metric') + requireNumber(event.metric, ':sum: :metric');
    // A strictly later event becomes the base; on equal times the earlier base stays.
    if ((event.time as number) > (window.base.time as number)) window.base = event;
    window.count++;
    return window;
  },
  flush: eachWindow((window) => (window.count === 1 ? window.base : { ...window.base, metric: window.sum as number })),
};

export const sum = defineAction({
  name: 'sum',
  state: 'kept',
  doc: {
    summary:
      'Sums the metrics of each `:duration` window and emits the most recent event of the window with that sum. Every event needs a `:time`.',
    params: '[{:duration duration :delay duration?}]',
    example: '{:action :sum :params [{:duration "10s" :delay "2s"}] :children [{:action :info}]}',
  },
  params: (raw, read) => readWindowParams('sum', raw, read),
  build: (params, ctx) => windowedAggregation('sum', params, sumAggregator, ctx),
});

interface MeanWindow {
  base: Event;
  sum: number;
  count: number;
}

const meanAggregator: Aggregator<MeanWindow> = {
  shape: shape.record({ base: shape.event, sum: shape.finite, count: shape.natural }),
  start: (event) => ({ base: event, sum: metricOrZero(event, 'mean'), count: 1 }),
  add(window, event) {
    window.sum += metricOrZero(event, 'mean');
    window.count++;
    if ((event.time as number) > (window.base.time as number)) window.base = event;
    return window;
  },
  flush: eachWindow((window) => ({ ...window.base, metric: window.sum / window.count })),
};

export const mean = defineAction({
  name: 'mean',
  state: 'kept',
  doc: {
    summary:
      "Emits the most recent event of each `:duration` window with the mean of the window's metrics (a missing metric counts as 0). Every event needs a `:time`.",
    params: '[{:duration duration :delay duration?}]',
    example: '{:action :mean :params [{:duration 60000000000}] :children [{:action :info}]}',
  },
  params: (raw, read) => readWindowParams('mean', raw, read),
  build: (params, ctx) => windowedAggregation('mean', params, meanAggregator, ctx),
});

function extremumAggregator(
  action: string,
  keepCurrent: (current: number, candidate: number) => boolean,
): Aggregator<Event> {
  const what = `:${action}: :metric`;
  return {
    shape: shape.event,
    start: (event) => event,
    // On equal metrics the newer arrival wins, as upstream.
    add: (current, event) =>
      keepCurrent(requireNumber(current.metric, what), requireNumber(event.metric, what)) ? current : event,
    flush: eachWindow((event) => event),
  };
}

const topAggregator = extremumAggregator('top', (current, candidate) => current > candidate);
const bottomAggregator = extremumAggregator('bottom', (current, candidate) => current < candidate);

export const top = defineAction({
  name: 'top',
  state: 'kept',
  doc: {
    summary: 'Emits the event with the highest metric of each `:duration` window. Every event needs a `:time`.',
    params: '[{:duration duration :delay duration?}]',
    example: '{:action :top :params [{:duration "1m"}] :children [{:action :info}]}',
  },
  params: (raw, read) => readWindowParams('top', raw, read),
  build: (params, ctx) => windowedAggregation('top', params, topAggregator, ctx),
});

export const bottom = defineAction({
  name: 'bottom',
  state: 'kept',
  doc: {
    summary: 'Emits the event with the lowest metric of each `:duration` window. Every event needs a `:time`.',
    params: '[{:duration duration :delay duration?}]',
    example: '{:action :bottom :params [{:duration "1m"}] :children [{:action :info}]}',
  },
  params: (raw, read) => readWindowParams('bottom', raw, read),
  build: (params, ctx) => windowedAggregation('bottom', params, bottomAggregator, ctx),
});

interface CountWindow {
  base: Event;
  count: number;
}

function rateAggregator(params: WindowParams): Aggregator<CountWindow> {
  // Per second, exact (upstream divides by whole seconds and so throws under 1 s).
  const seconds = params.duration / NS_PER_SECOND;
  return {
    shape: shape.record({ base: shape.event, count: shape.natural }),
    start: (event) => ({ base: event, count: 1 }),
    add(window, event) {
      window.count++;
      if ((event.time as number) > (window.base.time as number)) window.base = event;
      return window;
    },
    flush: eachWindow((window) => ({ ...window.base, metric: window.count / seconds })),
  };
}

export const rate = defineAction({
  name: 'rate',
  state: 'kept',
  doc: {
    summary:
      'Counts the events of each `:duration` window and emits the most recent one with `:metric` = events per second (input metrics are ignored). Every event needs a `:time`.',
    params: '[{:duration duration :delay duration?}]',
    example: '{:action :rate :params [{:duration "10s"}] :children [{:action :info}]}',
  },
  params: (raw, read) => readWindowParams('rate', raw, read),
  build: (params, ctx) => windowedAggregation('rate', params, rateAggregator(params), ctx),
});

interface RatioParams extends WindowParams {
  readonly first: (event: Event) => boolean;
  readonly second: (event: Event) => boolean;
  readonly sumMetrics: boolean;
}

interface RatioWindow {
  base: Event;
  first: number;
  second: number;
}

function ratioAggregator(params: RatioParams): Aggregator<RatioWindow> {
  const { first, second, sumMetrics } = params;
  const count = (window: RatioWindow, event: Event): void => {
    const weight = sumMetrics ? metricOrZero(event, 'ratio') : 1;
    if (first(event)) window.first += weight;
    if (second(event)) window.second += weight;
  };
  return {
    shape: shape.record({ base: shape.event, first: shape.finite, second: shape.finite }),
    start(event) {
      const window = { base: event, first: 0, second: 0 };
      count(window, event);
      return window;
    },
    add(window, event) {
      count(window, event);
      if ((event.time as number) > (window.base.time as number)) window.base = event;
      return window;
    },
    flush: eachWindow((window) => ({ ...window.base, metric: window.second === 0 ? 0 : window.first / window.second })),
  };
}

export const ratio = defineAction({
  name: 'ratio',
  state: 'kept',
  doc: {
    summary:
      'For each `:duration` window, emits the most recent event with `:metric` = the number of events matching the first condition divided by the number matching the second (0 when none matches the second); with `:metric true`, the sums of their metrics instead of counts. Every event needs a `:time`.',
    params: '[{:duration duration :conditions [condition condition] :delay duration? :metric boolean?}]',
    example:
      '{:action :ratio :params [{:duration "1m" :conditions [[:= :state "error"] [:always-true]]}] :children [{:action :info}]}',
  },
  params(raw, read): RatioParams {
    const window = readWindowParams('ratio', raw, read);
    const conditions = read.option(window.options, 'conditions');
    if (!Array.isArray(conditions) || conditions.length !== 2) {
      throw new ParamError(':conditions', `expected a vector of two conditions, got ${describe(conditions)}`);
    }
    const metric = read.option(window.options, 'metric');
    return {
      duration: window.duration,
      delay: window.delay,
      first: condition(conditions[0], ':conditions[0]'),
      second: condition(conditions[1], ':conditions[1]'),
      sumMetrics: metric === undefined ? false : boolean(metric, ':metric'),
    };
  },
  build: (params, ctx) => windowedAggregation('ratio', params, ratioAggregator(params), ctx),
});

interface SsortParams extends WindowParams {
  readonly field: Path;
}

function ssortAggregator(field: Path): Aggregator<Event[]> {
  return {
    ...EVENT_LIST_WINDOWS,
    // Every window flushed by one event is merged, sorted (stably) and sent one event at a time.
    flush(windows, emit) {
      const events = windows.length === 1 ? (windows[0] as Event[]) : windows.flat();
      events.sort((a, b) => compareValues(getIn(a, field), getIn(b, field)));
      for (let i = 0; i < events.length; i++) emit(events[i] as Event);
    },
  };
}

export const ssort = defineAction({
  name: 'ssort',
  state: 'kept',
  doc: {
    summary:
      'Streaming sort: buffers each `:duration` window and emits its events one by one, sorted by `:field` (a keyword or a nested path). Every event needs a `:time`.',
    params: '[{:duration duration :field field :delay duration? :nested? boolean?}]',
    example: '{:action :ssort :params [{:duration "10s" :field :time :delay "5s"}] :children [{:action :info}]}',
  },
  params(raw, read): SsortParams {
    const window = readWindowParams('ssort', raw, read);
    const field = read.option(window.options, 'field');
    const nested = read.option(window.options, 'nested?');
    // What Mirabelle's compiler writes: whether :field is a vector, which its runtime then sorts by.
    if (nested !== undefined && boolean(nested, ':nested?') !== Array.isArray(field)) {
      throw new ParamError(
        ':nested?',
        `is ${String(nested)} but :field ${describe(field)} is ${Array.isArray(field) ? '' : 'not '}a nested path`,
      );
    }
    return { duration: window.duration, delay: window.delay, field: path(field, ':field') };
  },
  build: (params, ctx) => windowedAggregation('ssort', params, ssortAggregator(params.field), ctx),
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const aggregateActions: ActionDefinition<any>[] = [sum, mean, top, bottom, rate, ratio, ssort, percentiles];
