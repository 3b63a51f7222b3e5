/**
 * Keys built from the values of a few event fields, for `by` forks and `coalesce` buffers. Two events get
 * the same key exactly when their field values are equal (structurally for maps and vectors), so the key
 * can index a JS Map.
 *
 * Hot path (one call per event): with a single top-level field holding a string, number, boolean or nil,
 * the value itself is the key (no allocation). Otherwise the key is a string of self-delimiting parts
 * (type tag, length, text), which cannot collide; only map/vector values go through a canonical encoding.
 */
import type { Event } from '../event.ts';
import { getIn, type Path } from '../lang/path.ts';

export type FieldKey = string | number | boolean | null | undefined;

/** `missingIsNil`: whether an absent field counts as nil (`by`: yes, as `juxt` reads it; `coalesce`: no, upstream
 *  leaves absent fields out of its key). */
export function fieldKeyFunction(
  fields: readonly Path[],
  { missingIsNil }: { missingIsNil: boolean },
): (event: Event) => FieldKey {
  if (fields.length === 1 && (fields[0] as Path).length === 1) {
    const field = (fields[0] as Path)[0] as string;
    return (event) => {
      const value = event[field];
      if (value === undefined) return missingIsNil ? null : undefined;
      switch (typeof value) {
        case 'number':
        case 'boolean':
          return value;
        case 'string':
          // A string starting with NUL is escaped so it cannot equal the encoding of a map or vector.
          return value.charCodeAt(0) === 0 ? `\u0000s${value}` : value;
        default:
          return value === null ? null : `\u0000${encodeValue(value)}`;
      }
    };
  }
  return (event) => {
    let key = '';
    for (let i = 0; i < fields.length; i++) {
      const value = getIn(event, fields[i] as Path);
      key += value === undefined && !missingIsNil ? 'u' : encodeValue(value);
    }
    return key;
  };
}

/** A self-delimiting encoding: equal values give equal strings, different values different strings. */
function encodeValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return `s${value.length}:${value}`;
    case 'number':
      return `n${value};`;
    case 'boolean':
      return value ? 't' : 'f';
    case 'undefined':
      return 'z';
    case 'object': {
      if (value === null) return 'z';
      if (Array.isArray(value)) {
        let text = `v${value.length}:`;
        for (const element of value) text += encodeValue(element);
        return text;
      }
      const keys = Object.keys(value).sort();
      let text = `m${keys.length}:`;
      for (const key of keys) text += encodeValue(key) + encodeValue((value as Record<string, unknown>)[key]);
      return text;
    }
    default:
      return `o${String(value).length}:${String(value)}`;
  }
}
