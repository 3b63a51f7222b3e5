/**
 * The wording of schema errors (key paths, "did you mean"), shared by the config loader, the check kinds, the
 * outputs and the routes' validation errors. A leaf module: it imports nothing of Vigie but the duration schema
 * marker, so config/ and every part can use it without importing each other.
 */
import type { TSchema } from '@sinclair/typebox';
import { Value, type ValueError, ValueErrorType } from '@sinclair/typebox/value';
import { isDurationSchema } from './duration.ts';

/**
 * One problem of a request body or a definition (docs/http-api.md, "Validation errors"): the key path of the field
 * (`port`, `headers.X-Foo`, `http-checks[2].timeout`; `""` for the body as a whole) and what is wrong with it.
 */
export interface FieldProblem {
  field: string;
  message: string;
  /** The message names the field itself (an unknown key, with its "did you mean"): a sentence is the message alone. */
  selfNamed?: true;
}

/** The most problems one answer lists: a body of 10,000 wrong entries is answered with the first 100. */
export const MAX_PROBLEMS = 100;

/** How a refusal words a problem in one sentence: `field: message`, as the first line of every refusal reads. */
export function problemSentence(problem: FieldProblem): string {
  return problem.field === '' || problem.selfNamed ? problem.message : `${problem.field}: ${problem.message}`;
}

/** The `errors` of an answer: each problem's field and message. */
export function wireProblems(problems: readonly FieldProblem[]): { field: string; message: string }[] {
  return problems.map(({ field, message }) => ({ field, message }));
}

/**
 * Every problem of `value` against `schema`, one per field: unknown keys first, whatever their place (`prot: 80` is
 * a misspelled `port`, and saying so beats `port: is required`), then in the schema's order. At most MAX_PROBLEMS;
 * TypeBox's errors are read lazily, so a huge wrong body costs no more than that many.
 */
export function schemaProblems(schema: TSchema, value: unknown): FieldProblem[] {
  const unknownKeys: FieldProblem[] = [];
  const others: FieldProblem[] = [];
  const seen = new Set<string>();
  for (const error of Value.Errors(schema, value)) {
    if (unknownKeys.length + others.length >= MAX_PROBLEMS) break;
    const field = jsonPointerToKey(error.path);
    if (error.type === ValueErrorType.ObjectAdditionalProperties) {
      unknownKeys.push({ field, message: describeSchemaError(error), selfNamed: true });
    } else if (!seen.has(field)) {
      seen.add(field);
      others.push({ field, message: error.value === undefined ? 'is required' : describeSchemaError(error) });
    }
  }
  return [...unknownKeys, ...others].slice(0, MAX_PROBLEMS);
}

/** `/http-checks/0/port` → `http-checks[0].port`, the way people write key paths. */
export function jsonPointerToKey(pointer: string): string {
  let key = '';
  for (const part of pointer.split('/').slice(1)) {
    const name = part.replace(/~1/g, '/').replace(/~0/g, '~');
    key += /^\d+$/.test(name) ? `[${name}]` : key === '' ? name : `.${name}`;
  }
  return key;
}

/** Turns a TypeBox error into a sentence about the value the user wrote. */
export function describeSchemaError(error: ValueError): string {
  const schema: TSchema = error.schema;
  const got = describeValue(error.value);
  if (isDurationSchema(schema) && typeof error.value !== 'string') {
    return `must be a duration string such as "10s" or "1m30s", got ${got}`;
  }
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties: {
      const key = String(error.path.split('/').pop());
      const known = Object.keys((schema as { properties?: object }).properties ?? {});
      const close = closestName(known, key);
      return `unknown key ${JSON.stringify(key)}${close ? ` (did you mean ${JSON.stringify(close)}?)` : ''}`;
    }
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required';
    case ValueErrorType.String:
      return `must be a string, got ${got}`;
    case ValueErrorType.Integer:
      return `must be an integer, got ${got}`;
    case ValueErrorType.Number:
      return `must be a number, got ${got}`;
    case ValueErrorType.Boolean:
      return `must be true or false, got ${got}`;
    case ValueErrorType.Array:
      return `must be a list, got ${got}`;
    case ValueErrorType.Object:
      return `must be a mapping, got ${got}`;
    case ValueErrorType.Union: {
      // A choice among fixed words (`auto|allow|deny`): name them rather than "expected union value".
      const options = ((schema as { anyOf?: { const?: unknown }[] }).anyOf ?? []).map((option) => option.const);
      if (options.length > 0 && options.every((option) => typeof option === 'string')) {
        return `must be one of ${options.map((option) => JSON.stringify(option)).join(', ')}, got ${got}`;
      }
      // A word or a number (`locations: all | <n>`): name both.
      const kinds = ((schema as { anyOf?: { const?: unknown; type?: unknown }[] }).anyOf ?? []).map((option) =>
        typeof option.const === 'string'
          ? JSON.stringify(option.const)
          : option.type === 'integer'
            ? 'an integer'
            : undefined,
      );
      if (
        kinds.length > 1 &&
        kinds.every((kind) => kind !== undefined) &&
        kinds.some((kind) => kind === 'an integer')
      ) {
        return `must be ${kinds.join(' or ')}, got ${got}`;
      }
      return `${error.message.toLowerCase()}, got ${got}`;
    }
    default:
      return `${error.message.toLowerCase()}, got ${got}`;
  }
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (typeof value === 'number') return `the number ${value}`;
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'a list';
  return 'a mapping';
}

/** The first of `known` within two edits of `name`: the "did you mean" hint for a misspelled key or flag. */
export function closestName(known: Iterable<string>, name: string): string | undefined {
  for (const candidate of known) if (editDistance(candidate, name) <= 2) return candidate;
  return undefined;
}

/** Levenshtein distance, for the "did you mean" hint on a misspelled key. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}
