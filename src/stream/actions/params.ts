/**
 * Readers for action params, used by every builder's `params()`. Each one checks one value and throws a
 * `ParamError` naming the parameter and what is wrong; the compiler adds the action name.
 */
import { DurationError, parseDuration } from '../../common/duration.ts';
import { closestName } from '../../common/schema-errors.ts';
import { compileCondition, type Condition } from '../lang/condition.ts';
import { type EdnMap, type EdnValue, isEdnMap, isKeyword, Keyword, kw } from '../lang/edn.ts';
import type { Path } from '../lang/path.ts';

export function describe(value: EdnValue | undefined): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'nil';
  if (isKeyword(value)) return `the keyword ${value.toString()}`;
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'a vector';
  if (value instanceof Map) return 'a map';
  if (value instanceof Set) return 'a set';
  return String(value);
}

/** Checks the number of positional params (`min`..`max`). */
export function arity(raw: readonly EdnValue[], min: number, max = min): void {
  if (raw.length < min || raw.length > max) {
    const expected = min === max ? `${min}` : `${min} to ${max}`;
    throw new ParamError('params', `expected ${expected} parameter(s), got ${raw.length}`);
  }
}

/** A map whose keys are the user's (fields to set, fields to rename), not options: any key goes. */
export function freeMap(value: EdnValue | undefined, name: string): EdnMap {
  if (!isEdnMap(value)) throw new ParamError(name, `expected a map, got ${describe(value)}`);
  return value;
}

/**
 * What reading one action's params gathers, handed to its `params()`: the options maps it read and the keys it
 * read from each (to refuse the others), and the warnings its readers give. One per action per compile, so two
 * compilations never see each other's.
 */
export class ParamReading {
  private readonly optionsRead = new Map<EdnMap, Set<string>>();

  /** `into` receives the warnings (a bare-number duration under 1 ms...). */
  constructor(private readonly into: string[]) {}

  /** An options map (`[{:duration "10s" ...}]`): every key of it must be one `option()` reads. */
  map(value: EdnValue | undefined, name: string): EdnMap {
    if (!isEdnMap(value)) throw new ParamError(name, `expected a map, got ${describe(value)}`);
    this.optionsRead.set(value, this.optionsRead.get(value) ?? new Set());
    return value;
  }

  /** Reads `:key` of an options map; `undefined` when absent or nil. */
  option(options: EdnMap, key: string): EdnValue | undefined {
    this.optionsRead.get(options)?.add(key);
    const value = options.get(kw(key));
    return value === null ? undefined : value;
  }

  /**
   * A time param: a number is nanoseconds (what Mirabelle's compiled EDN holds), a string is a Go duration. A
   * number under 1 ms is accepted (tests use small times) with a warning: `10` most often means ten seconds
   * (docs/stream-language.md, time and durations).
   */
  duration(value: EdnValue | undefined, name: string, options: { allowZero?: boolean } = {}): number {
    const ns = durationParam(value, name, options);
    if (typeof value === 'number' && ns > 0 && ns < SUSPICIOUS_BARE_DURATION_NS) {
      this.into.push(`${name} ${value} is ${value} ns; write "${value}s" for seconds`);
    }
    return ns;
  }

  /** The first key of an options map that no `option()` read (only one close to a read key when `closeOnly`). */
  unknownKey(closeOnly: boolean): ParamError | null {
    return firstUnknownKey(this.optionsRead, closeOnly);
  }
}

/**
 * Runs `read` (an action's `params()`) with a fresh `ParamReading` whose warnings go to `warnings`, then refuses
 * a key of an options map that no `option()` read: a typo (`:durration`) must not be ignored while the action
 * runs with a default. When `read` failed first (a required key missing, which the typo often causes), a key
 * close to one it did read is named instead, with the key it most likely meant; the keys it had not reached yet
 * are not judged.
 */
export function readParams<T>(warnings: string[], read: (reading: ParamReading) => T): T {
  const reading = new ParamReading(warnings);
  let result: T;
  try {
    result = read(reading);
  } catch (error) {
    const misspelled = reading.unknownKey(true);
    if (misspelled !== null) throw misspelled;
    throw error;
  }
  const unknown = reading.unknownKey(false);
  if (unknown !== null) throw unknown;
  return result;
}

function firstUnknownKey(maps: ReadonlyMap<EdnMap, ReadonlySet<string>>, closeOnly: boolean): ParamError | null {
  for (const [options, known] of maps) {
    for (const key of options.keys()) {
      const name = isKeyword(key) ? key.name : typeof key === 'string' ? key : null;
      if (name !== null && known.has(name)) continue;
      const shown = name === null ? describe(key) : `:${name}`;
      const close = name === null ? undefined : closestName(known, name);
      if (closeOnly && close === undefined) continue;
      const hint = close === undefined ? '' : ` (did you mean :${close}?)`;
      const expected = [...known].map((one) => `:${one}`).join(', ');
      return new ParamError(shown, `unknown key${hint}; the keys are ${expected}`);
    }
  }
  return null;
}

export function number(value: EdnValue | undefined, name: string): number {
  if (typeof value !== 'number' || Number.isNaN(value))
    throw new ParamError(name, `expected a number, got ${describe(value)}`);
  return value;
}

export function positiveInteger(value: EdnValue | undefined, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new ParamError(name, `expected a positive integer, got ${describe(value)}`);
  }
  return value;
}

/** Bare-number durations below this many nanoseconds (1 ms) are most likely seconds written without a unit. */
const SUSPICIOUS_BARE_DURATION_NS = 1_000_000;

/** A time param without its warning (see `ParamReading.duration`). */
function durationParam(
  value: EdnValue | undefined,
  name: string,
  { allowZero = false }: { allowZero?: boolean },
): number {
  let ns: number;
  if (typeof value === 'number') ns = value;
  else if (typeof value === 'string') {
    try {
      ns = parseDuration(value);
    } catch (error) {
      if (error instanceof DurationError) throw new ParamError(name, error.message);
      throw error;
    }
  } else throw new ParamError(name, `expected a duration (nanoseconds or a string like "10s"), got ${describe(value)}`);
  if (ns < 0 || (!allowZero && ns === 0))
    throw new ParamError(
      name,
      `expected a ${allowZero ? 'non-negative' : 'positive'} duration, got ${describe(value)}`,
    );
  return ns;
}

export function string(value: EdnValue | undefined, name: string): string {
  if (typeof value !== 'string') throw new ParamError(name, `expected a string, got ${describe(value)}`);
  return value;
}

/** A keyword or a string, returned as its bare name (stream, output and tap names). */
export function name(value: EdnValue | undefined, param: string): string {
  if (isKeyword(value)) return value.name;
  if (typeof value === 'string' && value !== '') return value;
  throw new ParamError(param, `expected a keyword, got ${describe(value)}`);
}

/** A field: a keyword (`:host`) or a vector of keywords (`[:attributes :env]`), as a path. */
export function path(value: EdnValue | undefined, param: string): Path {
  if (isKeyword(value)) return [value.name];
  if (typeof value === 'string' && value !== '') return [value];
  if (Array.isArray(value) && value.length > 0 && value.every((part) => isKeyword(part) || typeof part === 'string')) {
    return value.map((part) => (part instanceof Keyword ? part.name : (part as string)));
  }
  throw new ParamError(param, `expected a keyword or a vector of keywords, got ${describe(value)}`);
}

/** A vector of fields (each a keyword or a path vector). */
export function paths(value: EdnValue | undefined, param: string): Path[] {
  if (!Array.isArray(value)) throw new ParamError(param, `expected a vector of fields, got ${describe(value)}`);
  return value.map((field, i) => path(field, `${param}[${i}]`));
}

export function condition(value: EdnValue | undefined, param: string): Condition {
  try {
    return compileCondition(value ?? null);
  } catch (error) {
    throw new ParamError(param, error instanceof Error ? error.message : String(error));
  }
}

export function boolean(value: EdnValue | undefined, param: string): boolean {
  if (typeof value !== 'boolean') throw new ParamError(param, `expected true or false, got ${describe(value)}`);
  return value;
}

/** A compile-time error in an action's params: `Invalid parameter <param> for action :<action>: <problem>`. */
export class ParamError extends Error {
  constructor(
    readonly param: string,
    readonly problem: string,
  ) {
    super(`${param}: ${problem}`);
  }
}
