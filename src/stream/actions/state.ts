/**
 * Actions that keep state across events: conditions held over time, rate limiting, change detection,
 * derivatives and running extremes (those last two, computed from the metrics alone, in running-metrics.ts).
 * Every instance has its own state and clock (the event times it has seen; never the wall clock).
 * Durations are nanoseconds or duration strings (`"10s"`), like every action.
 */
import { type Condition, valueEquals } from '../lang/condition.ts';
import { ednToJs } from '../lang/edn.ts';
import { type Event, isEvent } from '../event.ts';
import { getIn } from '../lang/path.ts';
import { arity, condition, path, positiveInteger } from './params.ts';
import { ddt, ddtPos, ewmaTimeless, smax, smin } from './running-metrics.ts';
import * as shape from './state-shape.ts';
import { type ActionDefinition, type ActionDoc, defineAction } from './types.ts';

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
const condDt = conditionOverTime('cond-dt', {
  summary:
    'Forwards events once the condition has held for longer than the duration (in event time), and every matching event after that; a non-matching event ends the run. Events without `:time` are ignored.',
  params: '[condition duration]',
  example: '{:action :cond-dt :params [[:= :state "critical"] "1m"] :children [{:action :error}]}',
});
const aboveDt = conditionOverTime('above-dt', {
  summary: "`:cond-dt` under the name Mirabelle's DSL gives it for `[:> :metric threshold]`.",
  params: '[condition duration]',
  example: '{:action :above-dt :params [[:> :metric 90] 60000000000] :children [{:action :error}]}',
});
const belowDt = conditionOverTime('below-dt', {
  summary: "`:cond-dt` under the name Mirabelle's DSL gives it for `[:< :metric threshold]`.",
  params: '[condition duration]',
  example: '{:action :below-dt :params [[:< :metric 10] "1m"] :children [{:action :error}]}',
});
const betweenDt = conditionOverTime('between-dt', {
  summary: "`:cond-dt` under the name Mirabelle's DSL gives it for `[:and [:> :metric low] [:< :metric high]]`.",
  params: '[condition duration]',
  example: '{:action :between-dt :params [[:and [:> :metric 10] [:< :metric 90]] "30s"] :children [{:action :info}]}',
});
const outsideDt = conditionOverTime('outside-dt', {
  summary: "`:cond-dt` under the name Mirabelle's DSL gives it for `[:or [:< :metric low] [:> :metric high]]`.",
  params: '[condition duration]',
  example: '{:action :outside-dt :params [[:or [:< :metric 10] [:> :metric 90]] "30s"] :children [{:action :error}]}',
});

const throttleShape = shape.record({ windowStart: shape.nullable(shape.finite), passed: shape.natural });

const throttle = defineAction({
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
    return {
      count: positiveInteger(read.option(options, 'count'), 'count'),
      window: read.duration(read.option(options, 'duration'), 'duration'),
    };
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

const changed = defineAction({
  name: 'changed',
  state: 'kept',
  doc: {
    summary:
      "Forwards an event only when the value of `:field` differs from the previous event's (the first event is compared with `:init`, default nil).",
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

const stable = defineAction({
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
      save: () => ({
        newest: newest === -Infinity ? null : newest,
        running,
        ...(value === undefined ? {} : { value }),
        start,
        held,
      }),
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

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const stateActions: ActionDefinition<any>[] = [
  aboveDt,
  belowDt,
  betweenDt,
  outsideDt,
  condDt,
  throttle,
  changed,
  stable,
  ddt,
  ddtPos,
  ewmaTimeless,
  smax,
  smin,
];
