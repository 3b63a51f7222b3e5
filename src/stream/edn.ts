/**
 * EDN text <-> JS values. The value model used everywhere in the stream part:
 * - keywords are interned `Keyword` instances (`kw('state') === kw('state')`), so they can key a Map;
 * - maps are `Map<EdnValue, EdnValue>` (keys may be keywords, strings, vectors...);
 * - vectors and lists are JS arrays; sets are `Set`s; nil is `null`; integers and floats are numbers
 *   (ratios such as `1/2` become their double value); strings are strings; symbols are `EdnSymbol`.
 *
 * PARSER AND PRINTER: implementation below is filled in by the stream-engine work (see issue 5).
 */
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
