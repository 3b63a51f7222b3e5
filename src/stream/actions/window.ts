/**
 * Windows: actions that buffer events and emit lists (count-based, time-based, latest-per-key,
 * latest-per-condition). Time-based ones advance on event time only.
 */
import type { Condition } from '../lang/condition.ts';
import type { EdnValue } from '../lang/edn.ts';
import type { Emission, Event } from '../event.ts';
import { isExpired } from '../event.ts';
import { type Aggregator, EVENT_LIST_WINDOWS, readWindowParams, windowedAggregation } from './aggregation-engine.ts';
import { fieldKeyFunction, type FieldKey } from './field-key.ts';
import { requireNumber } from './numbers.ts';
import { arity, condition, describe, type ParamReading, paths, positiveInteger, ParamError } from './params.ts';
import * as shape from './state-shape.ts';
import { type ActionDefinition, defineAction } from './types.ts';

function readSize(raw: readonly EdnValue[], read: ParamReading): { size: number } {
  arity(raw, 1);
  const options = read.map(raw[0], 'config');
  return { size: positiveInteger(read.option(options, 'size'), ':size') };
}

export const fixedEventWindow = defineAction({
  name: 'fixed-event-window',
  state: 'kept',
  doc: {
    summary: 'Buffers events and emits them as one list every `:size` events; the next event starts a new list.',
    params: '[{:size integer}]',
    example:
      '{:action :fixed-event-window :params [{:size 5}] :children [{:action :coll-mean :children [{:action :info}]}]}',
  },
  params: readSize,
  build({ size }, ctx) {
    const emit = ctx.emit;
    let window: Event[] = [];
    // A full window is emitted at once: a saved one holds fewer than `size` events (one of `size` would never emit).
    ctx.keepState<Event[]>({
      shape: shape.list(shape.event, { max: size - 1 }),
      save: () => window,
      load: (state) => {
        window = state;
      },
    });
    return (emission) => {
      window.push(emission as Event);
      if (window.length === size) {
        const full = window;
        window = [];
        emit(full);
      }
    };
  },
});

export const movingEventWindow = defineAction({
  name: 'moving-event-window',
  state: 'kept',
  doc: {
    summary: 'On every event, emits the list of the last `:size` events, oldest first.',
    params: '[{:size integer}]',
    example:
      '{:action :moving-event-window :params [{:size 10}] :children [{:action :coll-max :children [{:action :info}]}]}',
  },
  params: readSize,
  build({ size }, ctx) {
    const emit = ctx.emit;
    let window: Event[] = [];
    ctx.keepState<Event[]>({
      shape: shape.list(shape.event, { max: size }),
      save: () => window,
      load: (state) => {
        window = state;
      },
    });
    return (emission) => {
      window.push(emission as Event);
      if (window.length > size) window.shift();
      emit(window.slice());
    };
  },
});

const listAggregator: Aggregator<Event[]> = {
  ...EVENT_LIST_WINDOWS,
  flush(windows, emit) {
    for (let i = 0; i < windows.length; i++) emit(windows[i] as Event[]);
  },
};

export const fixedTimeWindow = defineAction({
  name: 'fixed-time-window',
  state: 'kept',
  doc: {
    summary:
      "Emits each `:duration` window of events as a list (in arrival order), windows aligned on the first event's time; a window is emitted when an event past its end plus `:delay` (default 0, for late events) arrives. Every event needs a `:time`.",
    params: '[{:duration duration :delay duration?}]',
    example:
      '{:action :fixed-time-window :params [{:duration "1m" :delay "10s"}] :children [{:action :coll-max :children [{:action :info}]}]}',
  },
  params: (raw, read) => readWindowParams('fixed-time-window', raw, read),
  build: (params, ctx) => windowedAggregation('fixed-time-window', params, listAggregator, ctx),
});

/** The `:time` of a time-tolerant action's input: `undefined` when absent or nil, a thrown error when it is
 *  something else (Clojure comparisons throw on strings). */
function optionalTime(emission: Emission, action: string): number | undefined {
  if (emission === null || Array.isArray(emission)) return undefined;
  const time = emission.time;
  return time === undefined || time === null ? undefined : requireNumber(time, `:${action}: :time`);
}

const movingTimeShape = shape.record({ cutoff: shape.finite, window: shape.list(shape.event) });

export const movingTimeWindow = defineAction({
  name: 'moving-time-window',
  state: 'kept',
  doc: {
    summary:
      'A sliding window of the events of the last `:duration` before the newest time seen; emits the whole window (a list) on every accepted event. Events without `:time` are kept; an event at or before the cutoff (initially 0) is dropped without emission.',
    params: '[{:duration duration}]',
    example:
      '{:action :moving-time-window :params [{:duration "30s"}] :children [{:action :coll-mean :children [{:action :info}]}]}',
  },
  params(raw, read) {
    arity(raw, 1);
    return { duration: read.duration(read.option(read.map(raw[0], 'config'), 'duration'), ':duration') };
  },
  build({ duration: windowDuration }, ctx) {
    const emit = ctx.emit;
    let cutoff = 0;
    let window: Event[] = [];
    ctx.keepState<{ cutoff: number; window: Event[] }>({
      shape: movingTimeShape,
      save: () => ({ cutoff, window }),
      load: (state) => {
        ({ cutoff, window } = state);
      },
    });
    return (emission) => {
      const time = optionalTime(emission, 'moving-time-window');
      cutoff = Math.max(cutoff, (time ?? 0) - windowDuration);
      if (time !== undefined && time <= cutoff) return;
      const next: Event[] = [];
      for (let i = 0; i < window.length; i++) {
        const event = window[i] as Event;
        if (event.time === undefined || event.time === null || (event.time as number) > cutoff) next.push(event);
      }
      next.push(emission as Event);
      window = next;
      // The emitted list is the state itself, never mutated afterwards (the next event builds a new one).
      emit(next);
    };
  },
});

const coalesceShape = shape.record({
  events: shape.list(shape.event),
  currentTime: shape.finite,
  lastTick: shape.nullable(shape.finite),
});

export const coalesce = defineAction({
  name: 'coalesce',
  state: 'kept',
  doc: {
    summary:
      'Keeps the latest event per combination of `:fields` values and, at most every `:duration` of event time, emits the list of the kept events that are not expired (`:ttl`, seconds); expired ones are dropped. Events without `:time` and expired events are ignored; the first event only starts the clock.',
    params: '[{:duration duration :fields [field ...]}]',
    example:
      '{:action :coalesce :params [{:duration "10s" :fields [:host :service]}] :children [{:action :coll-sum :children [{:action :info}]}]}',
  },
  params(raw, read) {
    arity(raw, 1);
    const options = read.map(raw[0], 'config');
    return {
      duration: read.duration(read.option(options, 'duration'), ':duration'),
      fields: paths(read.option(options, 'fields'), ':fields'),
    };
  },
  build({ duration: interval, fields }, ctx) {
    const emit = ctx.emit;
    const keyOf = fieldKeyFunction(fields, { missingIsNil: false });
    const buffer = new Map<FieldKey, Event>();
    let currentTime = 0;
    let lastTick: number | undefined;
    // The buffer is saved as its events: each one's key is its own fields' (`keyOf`), so it is rebuilt in order.
    ctx.keepState<{ events: Event[]; currentTime: number; lastTick: number | null }>({
      shape: coalesceShape,
      save: () => ({ events: [...buffer.values()], currentTime, lastTick: lastTick ?? null }),
      load: (state) => {
        buffer.clear();
        for (const event of state.events) buffer.set(keyOf(event), event);
        currentTime = state.currentTime;
        lastTick = state.lastTick ?? undefined;
      },
    });
    const store = (event: Event): void => {
      const key = keyOf(event);
      const current = buffer.get(key);
      // The buffered event stays only when strictly more recent.
      if (current === undefined || !((current.time as number) > (event.time as number))) buffer.set(key, event);
    };
    return (emission) => {
      const time = optionalTime(emission, 'coalesce');
      if (time === undefined) return;
      const event = emission as Event;
      const now = Math.max(currentTime, time);
      if (isExpired(now, event)) return;
      if (lastTick === undefined) {
        // Upstream does not record the clock on the first event; only later events move it.
        lastTick = time;
        store(event);
        return;
      }
      currentTime = now;
      store(event);
      if (now < lastTick + interval) return;
      lastTick = now;
      const live: Event[] = [];
      for (const [key, buffered] of buffer) {
        if (isExpired(now, buffered)) buffer.delete(key);
        else live.push(buffered);
      }
      emit(live);
    };
  },
});

export const project = defineAction({
  name: 'project',
  state: 'kept',
  doc: {
    summary:
      'Keeps one slot per condition, holding the most recent non-expired event that matched it; after every event, emits the filled slots (in condition order) as a list, if any. Expired slots are cleared on every event.',
    params: '[[condition ...]]',
    example:
      '{:action :project :params [[[:= :service "enqueues"] [:= :service "dequeues"]]] :children [{:action :coll-quotient :children [{:action :info}]}]}',
  },
  params(raw) {
    arity(raw, 1);
    const conditions = raw[0];
    if (!Array.isArray(conditions))
      throw new ParamError('conditions', `expected a vector of conditions, got ${describe(conditions)}`);
    return { conditions: conditions.map((c, i) => condition(c, `conditions[${i}]`)) };
  },
  build({ conditions }, ctx) {
    const emit = ctx.emit;
    let slots: (Event | null)[] = conditions.map(() => null);
    let currentTime = 0;
    ctx.keepState<{ slots: (Event | null)[]; currentTime: number }>({
      shape: shape.record({
        slots: shape.list(shape.nullable(shape.event), { length: conditions.length }),
        currentTime: shape.finite,
      }),
      save: () => ({ slots, currentTime }),
      load: (state) => {
        ({ slots, currentTime } = state);
      },
    });
    return (emission) => {
      const time = optionalTime(emission, 'project');
      const event = emission as Event;
      if (time !== undefined && time > currentTime) currentTime = time;
      const store = time !== undefined && !isExpired(currentTime, event);
      let filled = 0;
      for (let i = 0; i < slots.length; i++) {
        let slot = slots[i] as Event | null;
        if (store && (conditions[i] as Condition)(event) && (slot === null || (time as number) > (slot.time as number)))
          slot = event;
        else if (slot !== null && isExpired(currentTime, slot)) slot = null;
        slots[i] = slot;
        if (slot !== null) filled++;
      }
      if (filled === 0) return;
      const list: Event[] = [];
      for (const slot of slots) if (slot !== null) list.push(slot);
      emit(list);
    };
  },
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const windowActions: ActionDefinition<any>[] = [
  fixedEventWindow,
  movingEventWindow,
  fixedTimeWindow,
  movingTimeWindow,
  coalesce,
  project,
];
