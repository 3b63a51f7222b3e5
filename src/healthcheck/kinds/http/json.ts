/**
 * JSON conditions of HTTP checks (`json: [{path, equals | matches | exists}]`, docs/checks.md, HTTP): the body is
 * parsed as JSON and each condition looks at the value at `path`.
 *
 * Paths are RFC 6901 JSON Pointers (`/status`, `/checks/0/state`, `""` for the whole document), written here rather
 * than taken from a JSONPath library: a pointer names exactly one value, which is what a condition compares, it is
 * a standard with no dialects (JSONPath had many before RFC 9535), and it takes 30 lines where a JSONPath engine
 * would bring filters and wildcards a check does not need. `matches` runs through the linear-time engine
 * (src/common/regex.ts), like `body-regexp`.
 */
import { Type } from '@sinclair/typebox';
import { compileRegex, type LinearRegex } from '../../../common/regex.ts';
import { errorText } from '../common.ts';
import { CheckValidationError } from '../validation-error.ts';

/** A condition as written (kept in the definition and listed back as is). */
export interface JsonCondition {
  path: string;
  equals?: unknown;
  matches?: string;
  exists?: boolean;
}

export const jsonConditionSchema = Type.Object(
  {
    path: Type.String(),
    equals: Type.Optional(Type.Unknown()),
    matches: Type.Optional(Type.String()),
    exists: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** The largest body JSON conditions parse; a larger one fails the run rather than hold megabytes per check. */
export const JSON_BODY_LIMIT = 1024 * 1024;

/** `/a/b~1c` → `['a', 'b/c']`; throws a message for the field otherwise. */
function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/'))
    throw new Error(`must be a JSON Pointer (RFC 6901): empty or starting with "/", got ${JSON.stringify(pointer)}`);
  if (/~(?![01])/.test(pointer))
    throw new Error(
      `must be a JSON Pointer (RFC 6901): "~" must be followed by 0 or 1 (~0 is "~", ~1 is "/"), got ${JSON.stringify(pointer)}`,
    );
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Validates the conditions (field paths `json[i].path`...); returns them as written. */
export function parseJsonConditions(input: readonly JsonCondition[] | undefined): JsonCondition[] {
  return (input ?? []).map((condition, i) => {
    try {
      pointerTokens(condition.path);
    } catch (error) {
      throw new CheckValidationError(`json[${i}].path`, errorText(error));
    }
    const given = (['equals', 'matches', 'exists'] as const).filter((key) => key in condition);
    if (given.length !== 1) {
      throw new CheckValidationError(
        `json[${i}]`,
        `must have exactly one of equals, matches, exists, got ${given.length === 0 ? 'none' : given.join(' and ')}`,
      );
    }
    if (condition.matches !== undefined) {
      try {
        compileRegex(condition.matches, 'search');
      } catch (error) {
        throw new CheckValidationError(
          `json[${i}].matches`,
          `must be a valid RE2 regular expression: ${errorText(error)}`,
        );
      }
    }
    return { ...condition };
  });
}

const MISSING = Symbol('missing');

function valueAt(document: unknown, tokens: readonly string[]): unknown {
  let current: unknown = document;
  for (const token of tokens) {
    if (Array.isArray(current)) {
      // RFC 6901: an array index is digits without a leading zero; `-` (past the end) never names a value.
      if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= current.length) return MISSING;
      current = current[Number(token)];
    } else if (current !== null && typeof current === 'object' && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token];
    } else return MISSING;
  }
  return current;
}

/** JSON equality: objects by their keys whatever the order, numbers by value (`1` equals `1.0`). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => jsonEqual(item, other[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  return (
    keys.length === Object.keys(right).length &&
    keys.every((key) => Object.hasOwn(right, key) && jsonEqual(left[key], right[key]))
  );
}

/** A value as a message quotes it: its JSON text, cut at 200 characters. */
function shown(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

interface CompiledCondition {
  condition: JsonCondition;
  tokens: string[];
  regexp: LinearRegex | null;
}

/** The conditions of one check, compiled once; `failure(body)` is null when they all hold, else the message. */
export class JsonConditions {
  private readonly compiled: CompiledCondition[];

  constructor(conditions: readonly JsonCondition[]) {
    this.compiled = conditions.map((condition) => ({
      condition,
      tokens: pointerTokens(condition.path),
      regexp: condition.matches !== undefined ? compileRegex(condition.matches, 'search') : null,
    }));
  }

  failure(body: Buffer): string | null {
    if (body.length > JSON_BODY_LIMIT)
      return `healthcheck body is larger than ${JSON_BODY_LIMIT} bytes, the limit of the json conditions`;
    let document: unknown;
    try {
      document = JSON.parse(body.toString('utf8'));
    } catch (error) {
      return `healthcheck body is not JSON (${errorText(error)}): ${body.subarray(0, 1000).toString('utf8')}`;
    }
    for (const { condition, tokens, regexp } of this.compiled) {
      const value = valueAt(document, tokens);
      const at = `JSON condition failed at ${JSON.stringify(condition.path)}`;
      if (condition.exists !== undefined) {
        if (condition.exists && value === MISSING) return `${at}: no value there`;
        if (!condition.exists && value !== MISSING) return `${at}: expected no value, got ${shown(value)}`;
      } else if (value === MISSING) {
        return `${at}: no value there`;
      } else if (regexp !== null) {
        // A string is matched as it is; any other value as its JSON text (`42`, `true`).
        const text = typeof value === 'string' ? value : JSON.stringify(value);
        if (!regexp.test(text)) return `${at}: ${shown(value)} does not match regex ${condition.matches}`;
      } else if (!jsonEqual(value, condition.equals)) {
        return `${at}: expected ${shown(condition.equals)}, got ${shown(value)}`;
      }
    }
    return null;
  }
}
