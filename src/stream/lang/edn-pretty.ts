/**
 * Indented EDN for people (the dashboard shows stream configs with it): a collection that fits in the width
 * stays on one line, a longer one puts each element (each key/value of a map) on its own line.
 */
import { type EdnValue, printEdn } from './edn.ts';

const WIDTH = 80;

export function prettyEdn(value: EdnValue, indent = 0): string {
  const flat = printEdn(value);
  if (indent + flat.length <= WIDTH || value === null || typeof value !== 'object' || !isCollection(value)) return flat;
  const inner = ' '.repeat(indent + 1);
  if (value instanceof Map) {
    const lines: string[] = [];
    for (const [key, entry] of value) {
      const keyText = printEdn(key);
      lines.push(`${keyText} ${prettyEdn(entry, indent + 1 + keyText.length + 1)}`);
    }
    return `{${lines.join(`\n${inner}`)}}`;
  }
  const [open, close, items] = Array.isArray(value) ? ['[', ']', value] : ['#{', '}', [...value]];
  const pad = ' '.repeat(indent + open.length);
  return `${open}${items.map((item) => prettyEdn(item, indent + open.length)).join(`\n${pad}`)}${close}`;
}

function isCollection(value: object): value is EdnValue[] | Set<EdnValue> | Map<EdnValue, EdnValue> {
  return Array.isArray(value) || value instanceof Set || value instanceof Map;
}
