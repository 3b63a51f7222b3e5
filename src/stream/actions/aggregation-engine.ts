/**
 * Mirabelle's generic time aggregation (`fixed-time-window`, `sum`, `mean`, `top`, `bottom`, `rate`, `ratio`,
 * `ssort`): one windowing engine, one accumulator per action.
 *
 * Windows are aligned on the time of the first event ever received (not on the epoch). An event whose
 * window is older than the current one is late: it is dropped when older than `currentTime - delay`,
 * otherwise it joins its own (older) window, without flushing anything. Any other event moves the clock
 * (max time seen), flushes every window whose end is `<= clock - delay`, in the order the windows were
 * created, and then joins its window. Windows only close when a later event arrives; gaps emit nothing.
 *
 * Hot path: the live windows are two small parallel arrays (usually one or two entries), scanned linearly;
 * nothing is allocated per event except by the accumulator itself.
 */
import { type EdnValue, isKeyword } from '../lang/edn.ts';
import type { Event } from '../event.ts';
import { arity, describe, type ParamReading, ParamError } from './params.ts';
import { requireTime } from './numbers.ts';
import * as shape from './state-shape.ts';
import { type BuildContext, type Emit, type Node } from './types.ts';

export interface Aggregator<A> {
  /** The accumulator of a new window holding its first event. */
  start(event: Event): A;
  /** Adds an event to a window; returns the (possibly replaced) accumulator. */
  add(accumulator: A, event: Event): A;
  /** Emits what the flushed windows give, oldest-created first. */
  flush(windows: A[], emit: Emit): void;
  /** The shape of a saved accumulator (src/stream/actions/state-shape.ts). */
  readonly shape: shape.Shape<A>;
}

/** The windows of an aggregator that keeps each window's events, in arrival order: all but its flush. */
export const EVENT_LIST_WINDOWS: Omit<Aggregator<Event[]>, 'flush'> = {
  shape: shape.list(shape.event),
  start: (event) => [event],
  add(window, event) {
    window.push(event);
    return window;
  },
};

export interface WindowParams {
  /** Window length, ns. */
  readonly duration: number;
  /** How late (ns behind the newest event) an event may arrive and still be counted. */
  readonly delay: number;
}

/**
 * Reads `[{:duration d :delay dl ...}]` for the action `action`. Mirabelle's compiler adds `:aggr-fn`, the keyword
 * its runtime picks the aggregation by (docs/differences.md, "Compiled EDN"): here the action's name picks it, so
 * `:aggr-fn` may only be the one the compiler writes for that action (`:+` for `:sum`...), never another one.
 */
export function readWindowParams(
  action: keyof typeof AGGR_FN,
  raw: readonly EdnValue[],
  read: ParamReading,
): WindowParams & { readonly options: Map<EdnValue, EdnValue> } {
  arity(raw, 1);
  const options = read.map(raw[0], 'config');
  const windowDuration = read.duration(read.option(options, 'duration'), ':duration');
  const delay = read.option(options, 'delay');
  const aggrFn = read.option(options, 'aggr-fn');
  const expected = AGGR_FN[action];
  if (aggrFn !== undefined && !(isKeyword(aggrFn) && aggrFn.name === expected)) {
    throw new ParamError(
      ':aggr-fn',
      `expected :${expected} (what Mirabelle's compiler writes for :${action}), got ${describe(aggrFn)}`,
    );
  }
  return {
    options,
    duration: windowDuration,
    delay: delay === undefined ? 0 : read.duration(delay, ':delay', { allowZero: true }),
  };
}

/** The `:aggr-fn` Mirabelle's compiler writes for each windowed action. */
const AGGR_FN = {
  sum: '+',
  mean: 'mean',
  top: 'max',
  bottom: 'min',
  rate: 'rate',
  ratio: 'ratio',
  ssort: 'ssort',
  'fixed-time-window': 'fixed-time-window',
} as const;

/** Index of the window holding `time`. Clojure truncates the quotient toward zero and subtracts one when it
 *  is negative, so an exact negative multiple (-k·d) lands in window -k-1: kept as upstream has it. */
export function windowIndex(time: number, start: number, windowDuration: number): number {
  const quotient = (time - start) / windowDuration;
  return quotient >= 0 ? Math.floor(quotient) : Math.trunc(quotient) - 1;
}

/** What a windowed aggregation keeps: its alignment, clock and the accumulators of its open windows. */
interface WindowsState<A> {
  started: boolean;
  start: number;
  currentWindow: number;
  currentTime: number;
  ids: number[];
  accumulators: A[];
}

function windowsShape<A>(accumulator: shape.Shape<A>): shape.Shape<WindowsState<A>> {
  const fields = shape.record<WindowsState<A>>({
    started: shape.boolean,
    start: shape.finite,
    currentWindow: shape.integer,
    currentTime: shape.finite,
    ids: shape.list(shape.integer),
    accumulators: shape.list(accumulator),
  });
  return shape.refine(fields, (state) =>
    state.ids.length === state.accumulators.length
      ? null
      : `expected as many ids as accumulators, got ${state.ids.length} and ${state.accumulators.length}`,
  );
}

/** The accumulators must be plain data (events, numbers, lists of events): they are saved as they are. */
export function windowedAggregation<A>(
  action: string,
  params: WindowParams,
  aggregator: Aggregator<A>,
  ctx: BuildContext,
): Node {
  const emit = ctx.emit;
  const windowDuration = params.duration;
  const delay = params.delay;
  let started = false;
  let start = 0;
  let currentWindow = 0;
  let currentTime = 0;
  let ids: number[] = [];
  let accumulators: A[] = [];
  ctx.keepState<WindowsState<A>>({
    shape: windowsShape(aggregator.shape),
    save: () => ({ started, start, currentWindow, currentTime, ids, accumulators }),
    load: (state) => {
      ({ started, start, currentWindow, currentTime, ids, accumulators } = state);
    },
  });

  const accumulate = (id: number, event: Event): void => {
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] === id) {
        accumulators[i] = aggregator.add(accumulators[i] as A, event);
        return;
      }
    }
    ids.push(id);
    accumulators.push(aggregator.start(event));
  };

  return (emission) => {
    const time = requireTime(emission, action);
    const event = emission as Event;
    if (!started) {
      started = true;
      start = time;
      currentTime = time;
      currentWindow = 0;
      ids.push(0);
      accumulators.push(aggregator.start(event));
      return;
    }
    const id = windowIndex(time, start, windowDuration);
    if (id < currentWindow) {
      if (time >= currentTime - delay) accumulate(id, event);
      return;
    }
    if (time > currentTime) currentTime = time;
    const horizon = currentTime - delay;
    let flushed: A[] | null = null;
    let kept = 0;
    for (let i = 0; i < ids.length; i++) {
      const windowId = ids[i] as number;
      if (start + (windowId + 1) * windowDuration <= horizon) {
        (flushed ??= []).push(accumulators[i] as A);
      } else {
        ids[kept] = windowId;
        accumulators[kept] = accumulators[i] as A;
        kept++;
      }
    }
    if (kept !== ids.length) {
      ids.length = kept;
      accumulators.length = kept;
    }
    accumulate(id, event);
    currentWindow = id;
    // State is complete before anything is emitted, so a child that re-enters this node sees it consistent.
    if (flushed !== null) aggregator.flush(flushed, emit);
  };
}
