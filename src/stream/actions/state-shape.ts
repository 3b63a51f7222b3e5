/**
 * The shapes of saved action states (docs/durability.md, "Damaged state"). A state read back from a checkpoint
 * passes its action's shape before the action's `load` sees it: a row damaged on disk or edited by hand is refused,
 * and that action starts afresh (logged and counted), instead of being adopted and misbehaving later (a window
 * longer than its size never emits again; a string where a time was compares false forever).
 *
 * Each stateful action declares one shape next to its `keepState`, built from these few pieces. A shape checks the
 * value where it is and returns it as it is (typed), so checking allocates nothing.
 */
import type { Event } from '../event.ts';

/** A saved state that does not have the shape its action saves. `where` is the path inside the state. */
export class StateShapeError extends Error {
  constructor(
    readonly where: string,
    readonly problem: string,
  ) {
    super(where === '' ? problem : `${where}: ${problem}`);
  }

  /** The same error seen from an enclosing state (a `:by` fork, by its key). */
  within(prefix: string): StateShapeError {
    return new StateShapeError(this.where === '' ? prefix : `${prefix}, ${this.where}`, this.problem);
  }
}

/** Checks `value`, found at `where`, and returns it typed; throws StateShapeError. */
export interface Shape<T> {
  (value: unknown, where: string): T;
  /** What the shape accepts, for messages ("a finite number"). */
  readonly what: string;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (typeof value === 'number') return Number.isFinite(value) ? `the number ${value}` : `${value}`;
  return typeof value === 'object' ? 'a map' : `a ${typeof value}`;
}

function shape<T>(what: string, accepts: (value: unknown) => boolean): Shape<T> {
  const check = (value: unknown, where: string): T => {
    if (!accepts(value)) throw new StateShapeError(where, `expected ${what}, got ${describe(value)}`);
    return value as T;
  };
  return Object.assign(check, { what });
}

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const finite = shape<number>('a finite number', (value) => typeof value === 'number' && Number.isFinite(value));
export const integer = shape<number>('an integer', (value) => Number.isSafeInteger(value));
export const natural = shape<number>(
  'an integer >= 0',
  (value) => Number.isSafeInteger(value) && (value as number) >= 0,
);
export const boolean = shape<boolean>('a boolean', (value) => typeof value === 'boolean');
/** Any JSON value (a last value compared with `=`, a sum not checked until it is used). */
export const anything = shape<unknown>('anything', () => true);
/** An event: a map, whatever its fields (actions check the fields they read, as they do for live events). */
export const event = shape<Event>('an event (a map)', isMap);

export function nullable<T>(inner: Shape<T>): Shape<T | null> {
  const what = `${inner.what} or null`;
  const check = (value: unknown, where: string): T | null => {
    if (value === null) return null;
    try {
      return inner(value, where);
    } catch (error) {
      // Said of the value itself: it is neither; deeper down, the inner message is the precise one.
      if (error instanceof StateShapeError && error.where === where)
        throw new StateShapeError(where, `expected ${what}, got ${describe(value)}`);
      throw error;
    }
  };
  return Object.assign(check, { what });
}

/** A list whose every item has the shape `item`, of at most `max` (or exactly `length`) items. */
export function list<T>(item: Shape<T>, bounds: { max?: number; length?: number } = {}): Shape<T[]> {
  const what =
    bounds.length !== undefined
      ? `a list of ${bounds.length}`
      : bounds.max !== undefined
        ? `a list of at most ${bounds.max}`
        : 'a list';
  const check = (value: unknown, where: string): T[] => {
    if (!Array.isArray(value)) throw new StateShapeError(where, `expected ${what}, got ${describe(value)}`);
    if (
      (bounds.length !== undefined && value.length !== bounds.length) ||
      (bounds.max !== undefined && value.length > bounds.max)
    ) {
      throw new StateShapeError(where, `expected ${what}, got ${describe(value)}`);
    }
    for (let i = 0; i < value.length; i++) item(value[i], `${where}[${i}]`);
    return value as T[];
  };
  return Object.assign(check, { what });
}

type Fields<T> = { readonly [K in keyof T]-?: Shape<T[K]> };

/** A map with these fields (a missing one is `undefined`, which only `anything` accepts); other keys are ignored. */
export function record<T>(fields: Fields<T>): Shape<T> {
  const entries = Object.entries(fields) as [string, Shape<unknown>][];
  const check = (value: unknown, where: string): T => {
    if (!isMap(value)) throw new StateShapeError(where, `expected a map, got ${describe(value)}`);
    for (const [key, field] of entries) field(value[key], where === '' ? key : `${where}.${key}`);
    return value as T;
  };
  return Object.assign(check, { what: 'a map' });
}

/** `inner`, and a rule across its fields: `rule` returns what is wrong, or null. */
export function refine<T>(inner: Shape<T>, rule: (value: T) => string | null): Shape<T> {
  const check = (value: unknown, where: string): T => {
    const checked = inner(value, where);
    const problem = rule(checked);
    if (problem !== null) throw new StateShapeError(where, problem);
    return checked;
  };
  return Object.assign(check, { what: inner.what });
}
