/**
 * Clojure value semantics the window, aggregation and collection actions depend on: `compare` (what
 * `sort-by` uses), arithmetic that throws on nil or non-numbers instead of producing NaN, "most recent
 * event" selection, and how a quantile is printed.
 */
import type { Emission, Event } from '../event.ts';

/** A metric (or time) that Clojure arithmetic would accept; anything else throws, as `(+ nil 1)` does. */
export function requireNumber(value: unknown, what: string): number {
  if (typeof value !== 'number')
    throw new TypeError(`${what} is not a number (got ${value === undefined ? 'nothing' : JSON.stringify(value)})`);
  return value;
}

/** `(:metric event 0)`: a missing or nil metric counts as 0, another non-number throws. */
export function metricOrZero(event: Event, action: string): number {
  const metric = event.metric;
  if (metric === undefined || metric === null) return 0;
  return requireNumber(metric, `:${action}: :metric`);
}

/** The event time that time-based actions require (upstream throws on nil time). */
export function requireTime(emission: Emission, action: string): number {
  const time = emission === null || Array.isArray(emission) ? undefined : emission.time;
  if (typeof time !== 'number') throw new TypeError(`:${action} needs events with a numeric :time`);
  return time;
}

/** The list a `coll-*` action receives; nil (what `coll-max` & co. pass on for nothing) is the empty list. */
export function requireList(emission: Emission, action: string): readonly Event[] {
  if (emission === null) return EMPTY;
  if (!Array.isArray(emission))
    throw new TypeError(`:${action} expects a list of events (put it under a window action)`);
  return emission;
}

const EMPTY: readonly Event[] = Object.freeze([]);

/** Clojure's `compare` for the values events hold: nil sorts first, numbers numerically, strings by UTF-16
 *  code units, booleans false < true, vectors by length then element-wise; other mixes throw, as on the JVM. */
export function compareValues(a: unknown, b: unknown): number {
  if (a === b) return 0;
  const aNil = a === null || a === undefined;
  const bNil = b === null || b === undefined;
  if (aNil || bNil) return aNil && bNil ? 0 : aNil ? -1 : 1;
  const type = typeof a;
  if (type === typeof b) {
    if (type === 'number' || type === 'string')
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    if (type === 'boolean') return a ? 1 : -1;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return a.length < b.length ? -1 : 1;
    for (let i = 0; i < a.length; i++) {
      const c = compareValues(a[i], b[i]);
      if (c !== 0) return c;
    }
    return 0;
  }
  throw new TypeError(`cannot compare ${JSON.stringify(a)} with ${JSON.stringify(b)}`);
}

/** `(last (sort-by :time events))`: the greatest `:time`, the later one in the list on ties, nil times first. */
export function mostRecent(events: readonly Event[]): Event | undefined {
  let best = events[0];
  for (let i = 1; i < events.length; i++) {
    const event = events[i] as Event;
    if (compareValues(event.time, (best as Event).time) >= 0) best = event;
  }
  return best;
}

/** `(str q)` for a quantile: `0.5` → "0.5", `1` → "1". EDN numbers reach us as JS numbers, so a `1.0`
 *  written in the config prints as "1" (Clojure would print "1.0"). */
export function quantileLabel(quantile: number): string {
  return String(quantile);
}
