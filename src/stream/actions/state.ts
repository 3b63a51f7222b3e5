/**
 * Actions that keep state across events: conditions held over time, rate limiting, change detection,
 * derivatives and running extremes. Every instance has its own state and clock (the event times it has
 * seen; never the wall clock). Durations are nanoseconds or duration strings (`"10s"`), like every action.
 */
import { type Condition, valueEquals } from '../condition.ts';
import { type EdnValue, ednToJs } from '../edn.ts';
import type { Emission, Event } from '../event.ts';
import { NS_PER_SECOND } from '../event.ts';
import { getIn } from '../path.ts';
import { arity, boolean, condition, number, path, positiveInteger } from './params.ts';
import * as shape from './state-shape.ts';
import { type ActionDefinition, type ActionDoc, defineAction, ParamError } from './types.ts';

function isEvent(emission: Emission): emission is Event {
  return emission !== null && !Array.isArray(emission);
}

const conditionRunShape = shape.record({ ok: shape.boolean, start: shape.finite });

function conditionOverTime(actionName: string, doc: ActionDoc) {
  return defineAction({
    name: actionName,
    doc,
    state: 'kept',
    params: (raw, read) => {
      arity(raw, 2);
      return { test: condition(raw[0], 'condition'), dt: read.duration(raw[1], 'duration', { allowZero: true }) };
    },
    build: ({ test, dt }: { test: Condition; dt: number }, { emit, keepState }) => {
      let ok = false;
      let start = 0;
      keepState<{ ok: boolean; start: number }>({
        shape: conditionRunShape,
        save: () => ({ ok, start }),
        load: (state) => {
          ({ ok, start } = state);
        },
      });
      return (emission) => {
        if (!isEvent(emission)) return;
        const time = emission.time;
        if (typeof time !== 'number') return;
        if (!test(emission)) ok = false;
        else if (!ok) {
          ok = true;
          start = time;
        }
        if (ok && time > start + dt) emit(emission);
      };
    },
  });
}

/** Mirabelle's DSL compiles `(above-dt {:threshold t :duration d})` to `[[:> :metric t] d]`, and likewise
 *  for the others: all five take the condition itself. */
export const condDt = conditionOverTime('cond-dt', {
  summary:
    'Forwards events once the condition has held for longer than the duration (in event time), and every matching event after that; a non-matching event ends the run. Events without `:time` are ignored.',
  params: '[condition duration]',
  example: '{:action :cond-dt :params [[:= :state "critical"] "1m"] :children [{:action :error}]}',
});
export const aboveDt = conditionOverTime('above-dt', {
  summary: '`:cond-dt` under the name Mirabelle\'s DSL gives it for `[:> :metric threshold]`.',
  params: '[condition duration]',
  example: '{:action :above-dt :params [[:> :metric 90] 60000000000] :children [{:action :error}]}',
});
export const belowDt = conditionOverTime('below-dt', {
  summary: '`:cond-dt` under the name Mirabelle\'s DSL gives it for `[:< :metric threshold]`.',
  params: '[condition duration]',
  example: '{:action :below-dt :params [[:< :metric 10] "1m"] :children [{:action :error}]}',
});
export const betweenDt = conditionOverTime('between-dt', {
  summary: '`:cond-dt` under the name Mirabelle\'s DSL gives it for `[:and [:> :metric low] [:< :metric high]]`.',
  params: '[condition duration]',
  example: '{:action :between-dt :params [[:and [:> :metric 10] [:< :metric 90]] "30s"] :children [{:action :info}]}',
});
export const outsideDt = conditionOverTime('outside-dt', {
  summary: '`:cond-dt` under the name Mirabelle\'s DSL gives it for `[:or [:< :metric low] [:> :metric high]]`.',
  params: '[condition duration]',
  example: '{:action :outside-dt :params [[:or [:< :metric 10] [:> :metric 90]] "30s"] :children [{:action :error}]}',
});

const throttleShape = shape.record({ windowStart: shape.nullable(shape.finite), passed: shape.natural });

export const throttle = defineAction({
  name: 'throttle',
  state: 'kept',
  doc: {
    summary:
      'Lets at most `:count` events through per window of `:duration` (event time); a window opens with the first event at or after the end of the previous one. Events without `:time` are dropped.',
    params: '[{:count integer :duration duration}]',
    example: '{:action :throttle :params [{:count 3 :duration "1m"}] :children [{:action :error}]}',
  },
  params: (raw, read) => {
    arity(raw, 1);
    const options = read.map(raw[0], 'options');
    return { count: positiveInteger(read.option(options, 'count'), 'count'), window: read.duration(read.option(options, 'duration'), 'duration') };
  },
  build: ({ count, window }, { emit, keepState }) => {
    let windowStart: number | null = null;
    let passed = 0;
    keepState<{ windowStart: number | null; passed: number }>({
      shape: throttleShape,
      save: () => ({ windowStart, passed }),
      load: (state) => {
        ({ windowStart, passed } = state);
      },
    });
    return (emission) => {
      if (!isEvent(emission)) return;
      const time = emission.time;
      if (typeof time !== 'number') return;
      if (windowStart === null || time >= windowStart + window) {
        windowStart = time;
        passed = 1;
        emit(emission);
      } else if (passed < count) {
        passed++;
        emit(emission);
      }
    };
  },
});

// The last value: any JSON, and nothing when the field was missing (`null` then, as `getIn(...) ?? null`).
const changedShape = shape.record({ last: shape.anything });

export const changed = defineAction({
  name: 'changed',
  state: 'kept',
  doc: {
    summary: 'Forwards an event only when the value of `:field` differs from the previous event\'s (the first event is compared with `:init`, default nil).',
    params: '[{:field field :init value?}]',
    example: '{:action :changed :params [{:field :state :init "ok"}] :children [{:action :error}]}',
  },
  params: (raw, read) => {
    arity(raw, 1);
    const options = read.map(raw[0], 'options');
    return { field: path(read.option(options, 'field'), 'field'), init: ednToJs(read.option(options, 'init') ?? null) };
  },
  build: ({ field, init }, { emit, keepState }) => {
    let last = init;
    keepState<{ last: unknown }>({
      shape: changedShape,
      save: () => ({ last }),
      load: (state) => {
        last = state.last;
      },
    });
    return (emission) => {
      if (!isEvent(emission)) return;
      const value = getIn(emission, field) ?? null;
      if (valueEquals(value, last)) return;
      last = value;
      emit(emission);
    };
  },
});

interface StableState {
  newest: number | null;
  running: boolean;
  value?: unknown;
  start: number;
  held: Event[];
}
const stableShape = shape.record<StableState>({
  newest: shape.nullable(shape.finite),
  running: shape.boolean,
  value: shape.anything,
  start: shape.finite,
  held: shape.list(shape.event),
});

export const stable = defineAction({
  name: 'stable',
  state: 'kept',
  doc: {
    summary:
      'Forwards events once the field has kept the same value for longer than the duration: the events of the run are held back until then and released together, then each later event of the run passes; a run that changes too early is discarded. Events without `:time`, or older than the newest seen, are dropped.',
    params: '[duration field]',
    example: '{:action :stable :params ["1m" :state] :children [{:action :info}]}',
  },
  params: (raw, read) => {
    arity(raw, 2);
    return { dt: read.duration(raw[0], 'duration', { allowZero: true }), field: path(raw[1], 'field') };
  },
  build: ({ dt, field }, { emit, keepState }) => {
    let newest = -Infinity;
    let running = false;
    let value: unknown;
    let start = 0;
    let held: Event[] = [];
    // JSON has no -Infinity (no event seen yet) and no undefined (the field was missing): both are said apart.
    keepState<StableState>({
      shape: stableShape,
      save: () => ({ newest: newest === -Infinity ? null : newest, running, ...(value === undefined ? {} : { value }), start, held }),
      load: (state) => {
        newest = state.newest ?? -Infinity;
        running = state.running;
        value = Object.hasOwn(state, 'value') ? state.value : undefined;
        start = state.start;
        held = state.held;
      },
    });
    return (emission) => {
      if (!isEvent(emission)) return;
      const time = emission.time;
      if (typeof time !== 'number' || time < newest) return;
      newest = time;
      const current = getIn(emission, field);
      if (!running || !valueEquals(current, value)) {
        running = true;
        value = current;
        start = time;
        held = [emission];
      } else if (time <= start + dt) {
        held.push(emission);
      } else {
        const release = held;
        held = [];
        for (const event of release) emit(event);
        emit(emission);
      }
    };
  },
});

const derivativeShape = shape.record({ primed: shape.boolean, previousMetric: shape.finite, previousTime: shape.finite });

function derivative(actionName: string, positiveByDefault: boolean, doc: ActionDoc) {
  return defineAction({
    name: actionName,
    doc,
    state: 'kept',
    params: (raw: readonly EdnValue[]) => {
      arity(raw, 0, 1);
      return raw.length === 0 || raw[0] === null ? positiveByDefault : boolean(raw[0], 'positive-only');
    },
    build: (positiveOnly, { emit, keepState }) => {
      let primed = false;
      let previousMetric = 0;
      let previousTime = 0;
      keepState<{ primed: boolean; previousMetric: number; previousTime: number }>({
        shape: derivativeShape,
        save: () => ({ primed, previousMetric, previousTime }),
        load: (state) => {
          ({ primed, previousMetric, previousTime } = state);
        },
      });
      return (emission) => {
        if (!isEvent(emission)) return;
        const { metric, time } = emission;
        if (typeof metric !== 'number' || typeof time !== 'number') return;
        if (primed && time !== previousTime) {
          const rate = ((metric - previousMetric) * NS_PER_SECOND) / (time - previousTime);
          if (!positiveOnly || rate >= 0) emit({ ...emission, metric: rate });
        }
        primed = true;
        previousMetric = metric;
        previousTime = time;
      };
    },
  });
}

export const ddt = derivative('ddt', false, {
  summary:
    'Replaces the metric by its derivative per second against the previous event (the first event only primes; events without a numeric metric or a time are skipped, as are events at the previous time). With `true`, negative derivatives are dropped.',
  params: '[boolean?]',
  example: '{:action :ddt :children [{:action :info}]}',
});
export const ddtPos = derivative('ddt-pos', true, {
  summary: '`:ddt` that drops negative derivatives (counter resets) unless given `false`.',
  params: '[boolean?]',
  example: '{:action :ddt-pos :children [{:action :info}]}',
});

const ewmaShape = shape.record({ average: shape.finite });

export const ewmaTimeless = defineAction({
  name: 'ewma-timeless',
  state: 'kept',
  doc: {
    summary:
      'Exponentially weighted moving average with weight r (0 to 1): m = r·metric + (1−r)·m, starting at 0, emitted as the metric. An event without a numeric metric is emitted with a nil metric.',
    params: '[number]',
    example: '{:action :ewma-timeless :params [0.5] :children [{:action :info}]}',
  },
  params: (raw) => {
    arity(raw, 1);
    const r = number(raw[0], 'r');
    if (r < 0 || r > 1) throw new ParamError('r', `expected a number between 0 and 1, got ${r}`);
    return r;
  },
  build: (r, { emit, keepState }) => {
    let average = 0;
    keepState<{ average: number }>({
      shape: ewmaShape,
      save: () => ({ average }),
      load: (state) => {
        average = state.average;
      },
    });
    return (emission) => {
      if (!isEvent(emission)) return;
      const metric = emission.metric;
      if (typeof metric !== 'number') {
        emit({ ...emission, metric: null });
        return;
      }
      average = r * metric + (1 - r) * average;
      emit({ ...emission, metric: average });
    };
  },
});

const runningBestShape = shape.record({ best: shape.nullable(shape.event) });

function runningBest(actionName: string, better: (candidate: number, best: number) => boolean, doc: ActionDoc) {
  return defineAction({
    name: actionName,
    doc,
    state: 'kept',
    // Mirabelle's DSL puts a (non-serialisable) function here; anything given is ignored.
    params: (raw) => arity(raw, 0, 1),
    build: (_params, { emit, keepState }) => {
      let best: Event | null = null;
      keepState<{ best: Event | null }>({
        shape: runningBestShape,
        save: () => ({ best }),
        load: (state) => {
          best = state.best;
        },
      });
      return (emission) => {
        if (!isEvent(emission)) return;
        const metric = emission.metric;
        if (best === null || (typeof metric === 'number' && (typeof best.metric !== 'number' || better(metric, best.metric)))) best = emission;
        emit(best);
      };
    },
  });
}

export const smax = runningBest('smax', (candidate, best) => candidate > best, {
  summary: 'Emits, for every event, the event with the highest metric seen so far (events without a numeric metric do not replace it). One parameter is accepted and ignored.',
  params: '[]',
  example: '{:action :smax :children [{:action :info}]}',
});
export const smin = runningBest('smin', (candidate, best) => candidate < best, {
  summary: 'Emits, for every event, the event with the lowest metric seen so far (events without a numeric metric do not replace it). One parameter is accepted and ignored.',
  params: '[]',
  example: '{:action :smin :children [{:action :info}]}',
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const stateActions: ActionDefinition<any>[] = [aboveDt, belowDt, betweenDt, outsideDt, condDt, throttle, changed, stable, ddt, ddtPos, ewmaTimeless, smax, smin];
