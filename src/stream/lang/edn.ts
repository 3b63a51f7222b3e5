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
import { checkStructure, RATIO } from './edn-structure.ts';
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
  null | boolean | number | string | Keyword | EdnSymbol | EdnValue[] | Set<EdnValue> | Map<EdnValue, EdnValue>;

export type EdnMap = Map<EdnValue, EdnValue>;

export const kw = (name: string): Keyword => Keyword.of(name);

export function isKeyword(value: unknown): value is Keyword {
  return value instanceof Keyword;
}

export function isEdnMap(value: unknown): value is EdnMap {
  return value instanceof Map;
}

// ---------------------------------------------------------------------------------------------------------
// Reading. edn-data does the value conversion; edn-structure.ts checks the structure of the text first.
// ---------------------------------------------------------------------------------------------------------

export class EdnError extends Error {}

/** The default of `streams.max-edn-depth`: collections nest at most this deep (src/stream/lang/nesting.ts). */
export const MAX_EDN_DEPTH = DEFAULT_MAX_EDN_DEPTH;

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
    if (typeof name !== 'string')
      throw new EdnError(`Invalid EDN: #env expects a variable name, got ${printEdn(value)}`);
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
  checkStructure(text, maxDepth, (message) => {
    throw new EdnError(message);
  });
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

const STRING_PRINT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\t': '\\t',
  '\r': '\\r',
  '\b': '\\b',
  '\f': '\\f',
};

function printString(value: string): string {
  return `"${value.replace(/["\\\n\t\r\b\f]/g, (c) => STRING_PRINT_ESCAPES[c] as string)}"`;
}

/** Numbers: integral values print as integers (a JS number does not remember `1.0`), others like Java
 *  doubles (`0.5`, `1.0E-7`, `1.0E21`). */
function printNumber(value: number): string {
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
