/**
 * Where-conditions (`[:and [:= :service "api"] [:> :metric 10]]`), compiled once into closures so that an
 * event is tested without interpreting the EDN again. Grammar (Mirabelle's, plus `:not`):
 *
 *   condition := [:and condition*] | [:or condition*] | [:not condition] | [op field arg*]
 *   field     := :key | [:key :nested ...]
 *
 * Deliberate differences from Mirabelle: a condition on a missing or non-numeric value is false instead of
 * throwing (`[:> :metric 1]` on an event without metric, `[:regex :host "a.*"]` without host); keyword
 * arguments compare equal to strings of the same name (`[:= :state :ok]` matches `"ok"`), since event values
 * come from JSON. As upstream: `:contains` never matches substrings, `:regex` must match the whole value. Regular
 * expressions run on RE2 (src/regex.ts, linear time): `(?i)` works, backreferences and lookaround are refused.
 */
import { compileRegex, type LinearRegex } from '../../common/regex.ts';
import { ednToJs, type EdnValue, isKeyword, printEdn } from './edn.ts';
import type { Event } from '../event.ts';

export type Condition = (event: Event) => boolean;

type Reader = (event: Event) => unknown;
type Operator = (read: Reader, args: readonly EdnValue[], fail: (problem: string) => never) => Condition;

const alwaysTrue: Condition = () => true;
const alwaysFalse: Condition = () => false;

/** Clojure `=` over JSON-shaped values: structural for arrays and objects. */
export function valueEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!valueEquals(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  if (aKeys.length !== Object.keys(b).length) return false;
  for (const key of aKeys) {
    if (!Object.prototype.hasOwnProperty.call(b, key)) return false;
    if (!valueEquals((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}

function numbers(args: readonly EdnValue[], fail: (problem: string) => never): number[] {
  if (args.length === 0) fail('expected at least one value to compare with');
  return args.map((arg) =>
    typeof arg === 'number' ? arg : fail(`expected numbers to compare with, got ${printEdn(arg)}`),
  );
}

function noArgs(args: readonly EdnValue[], fail: (problem: string) => never): void {
  if (args.length > 0) fail(`expected no argument, got ${args.length}`);
}

function oneArg(args: readonly EdnValue[], fail: (problem: string) => never): EdnValue {
  if (args.length !== 1) fail(`expected exactly one argument, got ${args.length}`);
  return args[0] as EdnValue;
}

/** `[:> :m 10 5]` means m > 10 > 5: the constant part of the chain is decided once, at compile time. */
function comparison(test: (a: number, b: number) => boolean): Operator {
  return (read, args, fail) => {
    const bounds = numbers(args, fail);
    for (let i = 1; i < bounds.length; i++) if (!test(bounds[i - 1] as number, bounds[i] as number)) return alwaysFalse;
    const bound = bounds[0] as number;
    return (event) => {
      const value = read(event);
      return typeof value === 'number' && test(value, bound);
    };
  };
}

function equality(read: Reader, args: readonly EdnValue[], fail: (problem: string) => never): Condition {
  if (args.length === 0) fail('expected at least one value to compare with');
  const values = args.map(ednToJs);
  for (let i = 1; i < values.length; i++) if (!valueEquals(values[0], values[i])) return alwaysFalse;
  const expected = values[0];
  if (expected === null || typeof expected !== 'object') return (event) => read(event) === expected;
  return (event) => valueEquals(read(event), expected);
}

function contains(read: Reader, args: readonly EdnValue[], fail: (problem: string) => never): Condition {
  const expected = ednToJs(oneArg(args, fail));
  return (event) => {
    const value = read(event);
    if (!Array.isArray(value)) return false;
    for (let i = 0; i < value.length; i++) if (valueEquals(value[i], expected)) return true;
    return false;
  };
}

function regex(read: Reader, args: readonly EdnValue[], fail: (problem: string) => never): Condition {
  const source = oneArg(args, fail);
  if (typeof source !== 'string') fail(`expected a regular expression string, got ${printEdn(source)}`);
  let pattern: LinearRegex;
  try {
    pattern = compileRegex(source, 'whole');
  } catch (error) {
    fail(`invalid regular expression ${JSON.stringify(source)}: ${(error as Error).message}`);
  }
  return (event) => {
    const value = read(event);
    return typeof value === 'string' && pattern.test(value);
  };
}

const OPERATORS: Record<string, Operator> = {
  '=': equality,
  'not=': (read, args, fail) => {
    const equal = equality(read, args, fail);
    return (event) => !equal(event);
  },
  '>': comparison((a, b) => a > b),
  '>=': comparison((a, b) => a >= b),
  '<': comparison((a, b) => a < b),
  '<=': comparison((a, b) => a <= b),
  'pos?': (read, args, fail) => {
    noArgs(args, fail);
    return (event) => {
      const value = read(event);
      return typeof value === 'number' && value > 0;
    };
  },
  'neg?': (read, args, fail) => {
    noArgs(args, fail);
    return (event) => {
      const value = read(event);
      return typeof value === 'number' && value < 0;
    };
  },
  'zero?': (read, args, fail) => {
    noArgs(args, fail);
    return (event) => read(event) === 0;
  },
  'nil?': (read, args, fail) => {
    noArgs(args, fail);
    return (event) => read(event) == null;
  },
  'not-nil?': (read, args, fail) => {
    noArgs(args, fail);
    return (event) => read(event) != null;
  },
  contains,
  absent: (read, args, fail) => {
    const found = contains(read, args, fail);
    return (event) => !found(event);
  },
  regex,
};

function fieldReader(field: EdnValue | undefined, fail: (problem: string) => never): Reader {
  const name = (part: EdnValue): string => {
    if (isKeyword(part)) return part.name;
    if (typeof part === 'string' && part !== '') return part;
    return fail(
      `expected a field (a keyword or a vector of keywords), got ${part === undefined ? 'nothing' : printEdn(field ?? null)}`,
    );
  };
  if (Array.isArray(field)) {
    if (field.length === 0) fail('expected a field (a keyword or a vector of keywords), got []');
    const path = field.map(name);
    if (path.length === 1) return readKey(path[0] as string);
    return (event) => {
      let current: unknown = event;
      for (let i = 0; i < path.length; i++) {
        if (current === null || typeof current !== 'object') return undefined;
        current = (current as Record<string, unknown>)[path[i] as string];
      }
      return current;
    };
  }
  return readKey(name(field as EdnValue));
}

function readKey(key: string): Reader {
  return (event) => (event == null ? undefined : event[key]);
}

/** Compiles a condition; throws an Error naming the operator and the problem when it is malformed. */
export function compileCondition(value: EdnValue): Condition {
  const fail = (problem: string): never => {
    throw new Error(`Invalid condition ${printEdn(value)}: ${problem}`);
  };
  if (!Array.isArray(value) || value.length === 0) {
    return fail('expected a vector such as [:= :service "api"]');
  }
  const [operator, ...args] = value;
  if (!isKeyword(operator)) return fail(`expected an operator keyword first, got ${printEdn(operator ?? null)}`);
  const where = (problem: string): never => fail(`${operator.toString()} ${problem}`);
  switch (operator.name) {
    case 'and':
    case 'or': {
      const clauses = args.map(compileCondition);
      if (clauses.length === 1) return clauses[0] as Condition;
      if (operator.name === 'and') {
        return (event) => {
          for (let i = 0; i < clauses.length; i++) if (!(clauses[i] as Condition)(event)) return false;
          return true;
        };
      }
      return (event) => {
        for (let i = 0; i < clauses.length; i++) if ((clauses[i] as Condition)(event)) return true;
        return false;
      };
    }
    case 'not': {
      if (args.length !== 1) where(`expected exactly one condition, got ${args.length}`);
      const clause = compileCondition(args[0] as EdnValue);
      return (event) => !clause(event);
    }
    case 'always-true':
    case 'true':
      if (args.length > 0) where(`expected no argument, got ${args.length}`);
      return alwaysTrue;
  }
  const build = OPERATORS[operator.name];
  if (build === undefined) return fail(`unknown operator ${operator.toString()}`);
  if (args.length === 0) return where('expected a field');
  return build(fieldReader(args[0], where), args.slice(1), where);
}
