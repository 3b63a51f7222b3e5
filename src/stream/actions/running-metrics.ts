/**
 * The State-over-time actions computed from the sequence of metrics: the derivative against the previous event,
 * an exponentially weighted moving average, and the running highest and lowest. Each keeps only the last value it
 * needs, not a run of events (state.ts holds those, and the family's list).
 */
import type { EdnValue } from '../lang/edn.ts';
import { type Event, isEvent, NS_PER_SECOND } from '../event.ts';
import { arity, boolean, number, ParamError } from './params.ts';
import * as shape from './state-shape.ts';
import { type ActionDoc, defineAction } from './types.ts';

const derivativeShape = shape.record({
  primed: shape.boolean,
  previousMetric: shape.finite,
  previousTime: shape.finite,
});

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
        if (
          best === null ||
          (typeof metric === 'number' && (typeof best.metric !== 'number' || better(metric, best.metric)))
        )
          best = emission;
        emit(best);
      };
    },
  });
}

export const smax = runningBest('smax', (candidate, best) => candidate > best, {
  summary:
    'Emits, for every event, the event with the highest metric seen so far (events without a numeric metric do not replace it). One parameter is accepted and ignored.',
  params: '[]',
  example: '{:action :smax :children [{:action :info}]}',
});
export const smin = runningBest('smin', (candidate, best) => candidate < best, {
  summary:
    'Emits, for every event, the event with the lowest metric seen so far (events without a numeric metric do not replace it). One parameter is accepted and ignored.',
  params: '[]',
  example: '{:action :smin :children [{:action :info}]}',
});
