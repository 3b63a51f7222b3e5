/**
 * Nested field access on events. A path is the list of key names: `:host` is `['host']`,
 * `[:attributes :env]` is `['attributes', 'env']`.
 */
import type { Event } from '../event.ts';

export type Path = readonly string[];

export function getIn(event: unknown, path: Path): unknown {
  let current: unknown = event;
  for (let i = 0; i < path.length; i++) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[path[i] as string];
  }
  return current;
}

/** Returns a copy of the event with the value set at the path (intermediate objects are copied). */
export function assocIn<E extends Event>(event: E, path: Path, value: unknown): E {
  if (path.length === 1) return { ...event, [path[0] as string]: value };
  return assocInObject(event, path, 0, value) as E;
}

function assocInObject(object: unknown, path: Path, depth: number, value: unknown): Record<string, unknown> {
  const base =
    object !== null && typeof object === 'object' && !Array.isArray(object) ? (object as Record<string, unknown>) : {};
  const key = path[depth] as string;
  const next = depth === path.length - 1 ? value : assocInObject(base[key], path, depth + 1, value);
  return { ...base, [key]: next };
}

/** Returns a copy without the key at the path; parent maps emptied by the removal are removed too. */
export function dissocIn<E extends Event>(event: E, path: Path): E {
  return dissocInObject(event, path, 0) as E;
}

function dissocInObject(object: Record<string, unknown>, path: Path, depth: number): Record<string, unknown> {
  const key = path[depth] as string;
  if (!(key in object)) return object;
  const copy = { ...object };
  if (depth === path.length - 1) {
    delete copy[key];
  } else {
    const child = copy[key];
    if (child === null || typeof child !== 'object' || Array.isArray(child)) return object;
    const updated = dissocInObject(child as Record<string, unknown>, path, depth + 1);
    if (Object.keys(updated).length === 0) delete copy[key];
    else copy[key] = updated;
  }
  return copy;
}
