/**
 * EDN text <-> JS values. The value model used everywhere in the stream part:
 * - keywords are interned `Keyword` instances (`kw('state') === kw('state')`), so they can key a Map;
 * - maps are `Map<EdnValue, EdnValue>` (keys may be keywords, strings, vectors...);
 * - vectors and lists are JS arrays; sets are `Set`s; nil is `null`; integers and floats are numbers
 *   (ratios such as `1/2` become their double value); strings are strings; symbols are `EdnSymbol`.
 *
 * `parseEdn` reads text (with `#env` and `#secret`), `printEdn` writes it back Clojure-style, `ednToJs` /
 * `jsToEdn` convert to and from the JSON-shaped event model.
 */
import { isDeepStrictEqual } from 'node:util';
import { parseEDNString } from 'edn-data';
import { DEFAULT_MAX_EDN_DEPTH } from './nesting.ts';

export class Keyword {
  private static readonly interned = new Map<string, Keyword>();
  private constructor(readonly name: string) {}
  static of(name: string): Keyword {
    let keyword = Keyword.interned.get(name);
    if (keyword === undefined) {
      keyword = new Keyword(name);
      Keyword.interned.set(name, keyword);
    }
    return keyword;
  }
  toString(): string {
    return `:${this.name}`;
  }
}

export class EdnSymbol {
  constructor(readonly name: string) {}
  toString(): string {
    return this.name;
  }
}

export type EdnValue =
  | null
  | boolean
  | number
  | string
  | Keyword
  | EdnSymbol
  | EdnValue[]
  | Set<EdnValue>
  | Map<EdnValue, EdnValue>;

export type EdnMap = Map<EdnValue, EdnValue>;

export const kw = (name: string): Keyword => Keyword.of(name);

export function isKeyword(value: unknown): value is Keyword {
  return value instanceof Keyword;
}

export function isEdnMap(value: unknown): value is EdnMap {
  return value instanceof Map;
}

// ---------------------------------------------------------------------------------------------------------
// Reading. edn-data does the value conversion; it is lax about structure (unclosed input gives null, an odd
// map drops its last key, `[1 2}` closes a vector as a set), so `checkStructure` scans the text first and
// reports the first problem with its position. It is one linear pass, cheap next to the parse itself.
// ---------------------------------------------------------------------------------------------------------

export class EdnError extends Error {}

/** The default of `streams.max-edn-depth`: collections nest at most this deep (src/stream/nesting.ts). */
export const MAX_EDN_DEPTH = DEFAULT_MAX_EDN_DEPTH;

const SUPPORTED_TAGS = new Set(['env', 'secret', 'object']);
const INT = /^[-+]?(0|[1-9][0-9]*)N?$/;
const FLOAT = /^[-+]?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?(0|[1-9][0-9]*))?M?$/;
const RATIO = /^([-+]?[0-9]+)\/([0-9]+)$/;
const STRING_ESCAPES = new Set(['t', 'r', 'n', 'b', 'f', '\\', '"']);
const CLOSERS: Record<string, string> = { '(': ')', '[': ']', '{': '}', '#{': '}' };

interface Position {
  line: number;
  column: number;
}

interface Frame extends Position {
  open: string;
  forms: number;
  lastForm: Position | null;
}

interface Prefix extends Position {
  text: string;
  depth: number;
}

const at = (p: Position): string => `line ${p.line}, column ${p.column}`;

function isDelimiter(char: string): boolean {
  return /[\s,";()[\]{}]/.test(char);
}

/** Throws an EdnError naming the position and what was expected at the first structural problem. */
function checkStructure(text: string, maxDepth: number): void {
  const stack: Frame[] = [];
  const prefixes: Prefix[] = [];
  let topForms = 0;
  let line = 1;
  let column = 1;
  let i = 0;
  const fail: (where: Position, message: string) => never = (where, message) => {
    throw new EdnError(`Invalid EDN at ${at(where)}: ${message}`);
  };
  const advance = (count: number): void => {
    for (let k = 0; k < count; k++) {
      if (text[i] === '\n') {
        line++;
        column = 1;
      } else column++;
      i++;
    }
  };
  const completeForm = (start: Position): void => {
    while (prefixes.length > 0 && (prefixes[prefixes.length - 1] as Prefix).depth === stack.length) {
      if ((prefixes.pop() as Prefix).text === '#_') return;
    }
    const frame = stack[stack.length - 1];
    if (frame === undefined) {
      if (++topForms > 1) fail(start, 'expected end of input after the first value');
    } else {
      frame.forms++;
      frame.lastForm = start;
    }
  };
  const checkNoDanglingPrefix = (where: Position): void => {
    const prefix = prefixes[prefixes.length - 1];
    if (prefix !== undefined && prefix.depth === stack.length) fail(where, `expected a value after '${prefix.text}' (at ${at(prefix)})`);
  };
  while (i < text.length) {
    const char = text[i] as string;
    const start = { line, column };
    if (/[\s,]/.test(char)) {
      advance(1);
    } else if (char === ';') {
      while (i < text.length && text[i] !== '\n') advance(1);
    } else if (char === '"') {
      advance(1);
      for (;;) {
        if (i >= text.length) fail({ line, column }, `expected '"' to close the string opened at ${at(start)}`);
        const c = text[i];
        if (c === '"') break;
        if (c === '\\') {
          const escaped = text[i + 1] ?? '';
          const escapeAt = { line, column };
          if (escaped === 'u') {
            if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail(escapeAt, 'expected 4 hex digits after \\u');
            advance(6);
            continue;
          }
          if (!STRING_ESCAPES.has(escaped)) fail(escapeAt, `invalid escape '\\${escaped}' in a string`);
          advance(2);
          continue;
        }
        advance(1);
      }
      advance(1);
      completeForm(start);
    } else if (char === '(' || char === '[' || char === '{' || (char === '#' && text[i + 1] === '{')) {
      const open = char === '#' ? '#{' : char;
      if (stack.length >= maxDepth) fail(start, `collections nest deeper than the limit of ${maxDepth} levels (streams.max-edn-depth)`);
      advance(open.length);
      stack.push({ open, line: start.line, column: start.column, forms: 0, lastForm: null });
    } else if (char === ')' || char === ']' || char === '}') {
      checkNoDanglingPrefix(start);
      const frame = stack.pop();
      if (frame === undefined) fail(start, `unexpected '${char}' with nothing to close`);
      const expected = CLOSERS[frame.open];
      if (char !== expected) fail(start, `expected '${expected}' to close '${frame.open}' opened at ${at(frame)}, got '${char}'`);
      if (frame.open === '{' && frame.forms % 2 === 1) {
        fail(start, `the map opened at ${at(frame)} has a key with no value (the last key is at ${at(frame.lastForm as Position)})`);
      }
      advance(1);
      completeForm(frame);
    } else if (char === '#') {
      const next = text[i + 1] ?? '';
      if (next === '_') {
        prefixes.push({ text: '#_', depth: stack.length, ...start });
        advance(2);
      } else if (next === '"') {
        fail(start, 'regular expression literals (#"...") are not supported');
      } else if (/[A-Za-z]/.test(next)) {
        let end = i + 1;
        while (end < text.length && !isDelimiter(text[end] as string)) end++;
        const tag = text.slice(i + 1, end);
        if (!SUPPORTED_TAGS.has(tag)) fail(start, `unsupported tag #${tag} (only #env, #secret and #object are supported)`);
        prefixes.push({ text: `#${tag}`, depth: stack.length, ...start });
        advance(end - i);
      } else {
        fail(start, `unsupported dispatch '#${next}'`);
      }
    } else {
      let end = i + 1;
      // A character literal takes the character after the backslash even when it is a delimiter (`\(`).
      if (char === '\\') end++;
      while (end < text.length && !isDelimiter(text[end] as string)) end++;
      // Inside `#object[...]`, Clojure's own tokens (`0x6b5f8707`, `fn$x`): read, then dropped as a whole.
      if (!prefixes.some((prefix) => prefix.text === '#object' && prefix.depth < stack.length)) checkToken(text.slice(i, end), start, fail);
      advance(end - i);
      completeForm(start);
    }
  }
  const end = { line, column };
  checkNoDanglingPrefix(end);
  const open = stack[stack.length - 1];
  if (open !== undefined) fail(end, `expected '${CLOSERS[open.open]}' to close '${open.open}' opened at ${at(open)}`);
  if (topForms === 0) fail(end, 'expected a value, got end of input');
}

function checkToken(token: string, start: Position, fail: (where: Position, message: string) => never): void {
  if (/^[-+]?[0-9]/.test(token)) {
    const ratio = RATIO.exec(token);
    if (ratio !== null && Number(ratio[2]) === 0) fail(start, `invalid ratio ${token}: division by zero`);
    if (ratio === null && !INT.test(token) && !FLOAT.test(token)) fail(start, `invalid number ${token}`);
  } else if (token.length === 2 && token[0] === '\\' && isDelimiter(token[1] as string)) {
    fail(start, `the character literal ${token} is not supported, use a string`);
  } else if (token.startsWith(':')) {
    if (token.length === 1 || token[1] === ':' || token.endsWith('/')) fail(start, `invalid keyword ${token}`);
  }
}

type Raw = unknown;

function fromEdnData(raw: Raw): EdnValue {
  if (raw === null || typeof raw === 'boolean' || typeof raw === 'number' || typeof raw === 'string') return raw;
  if (typeof raw === 'bigint') return Number(raw);
  if (Array.isArray(raw)) return raw.map(fromEdnData);
  const node = raw as Record<string, Raw>;
  if ('key' in node) return kw(node.key as string);
  if ('map' in node) {
    const result: EdnMap = new Map();
    for (const [rawKey, rawValue] of node.map as [Raw, Raw][]) {
      const key = fromEdnData(rawKey);
      if (result.has(key)) throw new EdnError(`Invalid EDN: duplicate key ${printEdn(key)} in a map`);
      result.set(key, fromEdnData(rawValue));
    }
    return result;
  }
  if ('list' in node) return (node.list as Raw[]).map(fromEdnData);
  if ('set' in node) return new Set((node.set as Raw[]).map(fromEdnData));
  if ('sym' in node) {
    const ratio = RATIO.exec(node.sym as string);
    return ratio === null ? new EdnSymbol(node.sym as string) : Number(ratio[1]) / Number(ratio[2]);
  }
  if ('char' in node) return node.char as string;
  if ('tag' in node) return fromTag(node.tag as string, fromEdnData(node.val));
  throw new EdnError(`Invalid EDN: unexpected value ${String(raw)}`);
}

function fromTag(tag: string, value: EdnValue): EdnValue {
  if (tag === 'secret') return value;
  // How Clojure prints a JVM object, a function among them: Mirabelle's compile command writes smax's and smin's
  // `:condition` so (docs/differences.md, "Compiled EDN"). Nothing can be read back from it.
  if (tag === 'object') return null;
  if (tag === 'env') {
    const name = value instanceof EdnSymbol ? value.name : value;
    if (typeof name !== 'string') throw new EdnError(`Invalid EDN: #env expects a variable name, got ${printEdn(value)}`);
    return process.env[name] ?? null;
  }
  throw new EdnError(`Invalid EDN: unsupported tag #${tag}`);
}

/**
 * Reads one EDN value. Supports the aero tags `#env VAR` (the variable's value, nil when unset) and
 * `#secret x` (x), and reads a JVM object as Clojure prints it (`#object[...]`) as nil; any other tag is an error.
 * Throws EdnError naming the position of the problem, or saying that collections nest deeper than `maxDepth`
 * (the reader's `streams.max-edn-depth`, which its caller holds: the default when it has no config).
 */
export function parseEdn(text: string, maxDepth = DEFAULT_MAX_EDN_DEPTH): EdnValue {
  checkStructure(text, maxDepth);
  let raw: Raw;
  try {
    // #inst is handled by edn-data itself; routing it to the generic tag shape makes it fail like any tag.
    raw = parseEDNString(text, { tagHandlers: { inst: (val) => ({ tag: 'inst', val }) } });
  } catch (error) {
    throw new EdnError(`Invalid EDN: ${error instanceof Error ? error.message : String(error)}`);
  }
  return fromEdnData(raw);
}

// ---------------------------------------------------------------------------------------------------------
// Printing (Clojure `pr-str` style) and conversions between EDN and the JSON-shaped event model.
// ---------------------------------------------------------------------------------------------------------

const STRING_PRINT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\t': '\\t', '\r': '\\r', '\b': '\\b', '\f': '\\f' };

function printString(value: string): string {
  return `"${value.replace(/["\\\n\t\r\b\f]/g, (c) => STRING_PRINT_ESCAPES[c] as string)}"`;
}

/** Numbers: integral values print as integers (a JS number does not remember `1.0`), others like Java
 *  doubles (`0.5`, `1.0E-7`, `1.0E21`). */
export function printNumber(value: number): string {
  if (Number.isNaN(value)) return '##NaN';
  if (!Number.isFinite(value)) return value > 0 ? '##Inf' : '##-Inf';
  const text = String(value);
  const exponent = text.indexOf('e');
  if (exponent === -1) return text;
  const mantissa = text.slice(0, exponent);
  return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}E${text.slice(exponent + 1).replace('+', '')}`;
}

/** Prints a value as Clojure's `pr-str` does: `{:a 1, :b [1 2]}`, `#{:x}`, `nil`. Lists print as vectors. */
export function printEdn(value: EdnValue): string {
  if (value === null) return 'nil';
  if (typeof value === 'string') return printString(value);
  if (typeof value === 'number') return printNumber(value);
  if (typeof value === 'boolean' || value instanceof Keyword || value instanceof EdnSymbol) return value.toString();
  if (Array.isArray(value)) return `[${value.map(printEdn).join(' ')}]`;
  if (value instanceof Set) return `#{${[...value].map(printEdn).join(' ')}}`;
  const entries: string[] = [];
  for (const [key, entry] of value) entries.push(`${printEdn(key)} ${printEdn(entry)}`);
  return `{${entries.join(', ')}}`;
}

/** EDN to the JSON-shaped model of events: keywords and symbols become their names, maps plain objects
 *  (non-keyword, non-string keys are printed as EDN), sets arrays. */
export function ednToJs(value: EdnValue): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Keyword || value instanceof EdnSymbol) return value.name;
  if (Array.isArray(value)) return value.map(ednToJs);
  if (value instanceof Set) return [...value].map(ednToJs);
  const result: Record<string, unknown> = {};
  for (const [key, entry] of value) {
    const name = key instanceof Keyword ? key.name : typeof key === 'string' ? key : printEdn(key);
    result[name] = ednToJs(entry);
  }
  return result;
}

/** The JSON-shaped model back to EDN, for printing events: object keys become keywords. */
export function jsToEdn(value: unknown): EdnValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(jsToEdn);
  if (value instanceof Keyword || value instanceof EdnSymbol) return value;
  if (value instanceof Map || value instanceof Set) return value as EdnValue;
  if (typeof value === 'object') {
    const result: EdnMap = new Map();
    for (const [key, entry] of Object.entries(value)) if (entry !== undefined) result.set(kw(key), jsToEdn(entry));
    return result;
  }
  return String(value);
}

/**
 * Structural equality of EDN values (Clojure `=` except that a JS number cannot tell 1 from 1.0). Keywords are
 * interned and symbols are plain objects, so Node's deep equality is exactly that.
 */
export function ednEquals(a: EdnValue, b: EdnValue): boolean {
  return isDeepStrictEqual(a, b);
}
