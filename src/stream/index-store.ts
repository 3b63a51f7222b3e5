/**
 * The index of one stream (Mirabelle v0.13's, brought back): the latest event per label combination, fed by
 * `:index` actions, expired by `:reaper`, searched by `POST /api/v1/index/<name>/search`, and snapshotted to
 * SQLite by the service. Its clock, `currentTime`, is the newest `:time` it has indexed (ns, 0 when empty):
 * expiry and the `current-time` route use that clock, never the wall clock.
 */
import type { Condition } from './lang/condition.ts';
import { type Event, isExpired } from './event.ts';
import { getIn, type Path } from './lang/path.ts';

export interface IndexSnapshot {
  currentTime: number;
  entries: { key: string; event: Event }[];
}

/** Label paths prepared once per `:index` action: sorted so that `[:host :service]` and `[:service :host]`
 *  address the same entries, as Clojure's `select-keys` maps would. */
export interface IndexLabels {
  readonly paths: readonly Path[];
  readonly names: readonly string[];
}

export function indexLabels(paths: readonly Path[]): IndexLabels {
  const sorted = [...paths].sort((a, b) => (a.join('.') < b.join('.') ? -1 : 1));
  return { paths: sorted, names: sorted.map((path) => `${path.join('.')}\u001e`) };
}

const FIELD_SEPARATOR = '\u001f';

/** The key of `select-keys(event, labels)`: each present label contributes its name, a type mark and its
 *  value, so `{host "1"}` and `{host 1}` and a missing host are three keys. */
function indexKey(event: Event, labels: IndexLabels): string {
  let key = '';
  for (let i = 0; i < labels.paths.length; i++) {
    const value = getIn(event, labels.paths[i] as Path);
    if (value === undefined) continue;
    if (key !== '') key += FIELD_SEPARATOR;
    key += labels.names[i] as string;
    if (typeof value === 'string') key += `s${value}`;
    else if (typeof value === 'number' || typeof value === 'boolean' || value === null) key += `p${String(value)}`;
    else key += `j${JSON.stringify(value)}`;
  }
  return key;
}

/** Called with every event an `:index` action gives the store (the `/index` websocket feed). */
export type IndexListener = (event: Event) => void;

export interface IndexStoreOptions {
  /** Entries kept at most; an event of a new key past it is not indexed and `onFull` is called. */
  maxEntries?: number;
  onFull?: () => void;
}

export class IndexStore {
  private readonly entries = new Map<string, Event>();
  /** Keys set or removed since the last `takeChanges()`: what the next snapshot writes (docs/hardening.md). */
  private changed = new Set<string>();
  private clock = 0;
  /** Set by the engine when a feed exists (not in test mode); null costs one comparison per insert. */
  listener: IndexListener | null = null;
  private readonly maxEntries: number;
  private readonly onFull: () => void;

  constructor(options: IndexStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? Infinity;
    this.onFull = options.onFull ?? (() => {});
  }

  /** The newest indexed time, ns; 0 when nothing was indexed. */
  get currentTime(): number {
    return this.clock;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Indexes an event under its labels: an `expired` state removes the entry, timeless events are skipped. */
  insert(event: Event, labels: IndexLabels): void {
    // Mirabelle v0.13 publishes every event the action receives, timeless ones and expirations included.
    if (this.listener !== null) this.listener(event);
    const time = event.time;
    if (typeof time !== 'number') return;
    if (time > this.clock) this.clock = time;
    const key = indexKey(event, labels);
    if (event.state === 'expired') {
      if (this.entries.delete(key)) this.changed.add(key);
    } else if (this.entries.size < this.maxEntries || this.entries.has(key)) {
      this.entries.set(key, event);
      this.changed.add(key);
    } else this.onFull();
  }

  /** The first `limit` matching entries; `truncated` when more matched. */
  search(condition: Condition, limit = Infinity): { events: Event[]; truncated: boolean } {
    const events: Event[] = [];
    for (const event of this.entries.values()) {
      if (!condition(event)) continue;
      if (events.length >= limit) return { events, truncated: true };
      events.push(event);
    }
    return { events, truncated: false };
  }

  /** Removes the entries older than their ttl (seconds, default 120) at the index clock and returns them
   *  with `state: "expired"`, for the reaper to re-inject. */
  expire(): Event[] {
    const expired: Event[] = [];
    for (const [key, event] of this.entries) {
      if (isExpired(this.clock, event)) {
        this.entries.delete(key);
        this.changed.add(key);
        expired.push({ ...event, state: 'expired' });
      }
    }
    return expired;
  }

  /** The event indexed under `key`, if any. */
  entry(key: string): Event | undefined {
    return this.entries.get(key);
  }

  /** Every key, live: a key added while it is iterated is visited, a removed one skipped (Map semantics). */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** Whether a key was set or removed since the last `takeChanges()`. */
  get hasChanges(): boolean {
    return this.changed.size > 0;
  }

  /** The keys set or removed since the previous call; later changes collect in a new set. */
  takeChanges(): Set<string> {
    const changed = this.changed;
    this.changed = new Set();
    return changed;
  }

  snapshot(): IndexSnapshot {
    const entries: IndexSnapshot['entries'] = [];
    for (const [key, event] of this.entries) entries.push({ key, event });
    return { currentTime: this.clock, entries };
  }

  /** Replaces the contents with a snapshot (taken from this class, possibly in an earlier process). */
  restore(snapshot: IndexSnapshot): void {
    this.entries.clear();
    for (const { key, event } of snapshot.entries) this.entries.set(key, event);
    this.changed.clear();
    this.clock = snapshot.currentTime;
  }

  clear(): void {
    for (const key of this.entries.keys()) this.changed.add(key);
    this.entries.clear();
    this.clock = 0;
  }
}
