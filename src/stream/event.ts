/**
 * The event model of the stream engine. An event is a free-form JSON object; the conventional fields are
 * typed here. `time` is epoch nanoseconds in a JS number (values near today's epoch round to 256 ns, which
 * is accepted and documented), `ttl` is seconds.
 */
export interface Event {
  host?: string;
  service?: string;
  name?: string;
  state?: string;
  metric?: number | null;
  time?: number;
  ttl?: number;
  description?: string;
  tags?: string[];
  attributes?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What flows from an action to its children: one event, or a list of events (windows, `coll-*`), or
 *  nil (Mirabelle passes nil on, e.g. `coll-max` of a list without metrics). */
export type Emission = Event | Event[] | null;

/** One event rather than a list or nil: what the actions that take single events keep. */
export function isEvent(emission: Emission): emission is Event {
  return emission !== null && !Array.isArray(emission);
}

const DEFAULT_TTL_SECONDS = 120;
export const NS_PER_SECOND = 1e9;

/** Mirabelle's expiry rule with the unit bug fixed: `ttl` is seconds. */
export function isExpired(clockNs: number, event: Event): boolean {
  if (event.state === 'expired') return true;
  const time = event.time;
  if (typeof time !== 'number') return false;
  const ttl = typeof event.ttl === 'number' ? event.ttl : DEFAULT_TTL_SECONDS;
  return clockNs - time > ttl * NS_PER_SECOND;
}

/** Wall-clock now in epoch ns, used only at ingestion (actions never read the wall clock). */
export function nowNs(): number {
  return Date.now() * 1e6;
}
