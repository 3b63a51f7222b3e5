/**
 * A collection of runtime state as one node holds it (src/common/runtime-state.ts): the values in memory, their rows
 * in this node's database, and the listeners told of each change. Both implementations of the port build on it: a
 * single node applies a change here once it is committed; a cluster node once JetStream has acknowledged it, and
 * again for every change another node makes.
 */
import type {
  ChangeListener,
  ChangeOrigin,
  LocalRows,
  SkippedValue,
  StateCollection,
  StateKind,
} from './runtime-state.ts';

/** What a mirror reports: the rows it could not read, and listeners that threw. */
export interface MirrorReports {
  skipped(skip: SkippedValue): void;
  listenerFailed(kind: string, error: unknown): void;
}

/**
 * This node's own copy of the collections (its SQLite, src/db/runtime-state.ts), which an implementation that
 * replicates runtime state mirrors the replicated values into: reads stay local and go on while the replica is away.
 */
export interface LocalMirrors {
  /** The mirror of `kind`, loaded from this node's database; a kind's name is taken once. */
  mirror<T>(kind: StateKind<T>): StateMirror<T>;
  /** Where the mirrors report what they skip. */
  readonly reports: MirrorReports;
}

export class StateMirror<T> {
  private readonly values = new Map<string, T>();
  private readonly listeners = new Set<ChangeListener<T>>();

  constructor(
    readonly kind: StateKind<T>,
    private readonly rows: LocalRows<T>,
    private readonly reports: MirrorReports,
  ) {
    for (const [key, stored] of rows.load()) {
      try {
        this.values.set(key, kind.parse(stored));
      } catch (error) {
        reports.skipped({ kind: kind.name, key, reason: (error as Error).message });
      }
    }
  }

  get(key: string): T | undefined {
    return this.values.get(key);
  }

  entries(): IterableIterator<[string, T]> {
    return this.values.entries();
  }

  get size(): number {
    return this.values.size;
  }

  onChange(listener: ChangeListener<T>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stores and announces one change (`undefined`: removed). A listener that throws does not stop the others. */
  apply(key: string, value: T | undefined, origin: ChangeOrigin): void {
    if (value === undefined) {
      if (!this.values.delete(key)) return;
      this.rows.remove(key);
    } else {
      this.rows.save(key, value);
      this.values.set(key, value);
    }
    this.announce(key, value, origin);
  }

  /** Makes the collection exactly `next` (a node catching up), announcing each key that changed. */
  replaceAll(next: ReadonlyMap<string, T>, origin: ChangeOrigin, same: (a: T, b: T) => boolean): void {
    this.rows.replaceAll(next);
    const changed: [string, T | undefined][] = [];
    for (const key of this.values.keys()) if (!next.has(key)) changed.push([key, undefined]);
    for (const [key, value] of next) {
      const before = this.values.get(key);
      if (before === undefined || !same(before, value)) changed.push([key, value]);
    }
    this.values.clear();
    for (const [key, value] of next) this.values.set(key, value);
    for (const [key, value] of changed) this.announce(key, value, origin);
  }

  private announce(key: string, value: T | undefined, origin: ChangeOrigin): void {
    for (const listener of this.listeners) {
      try {
        listener(key, value, origin);
      } catch (error) {
        // The change is applied: the other listeners must hear of it all the same.
        this.reports.listenerFailed(this.kind.name, error);
      }
    }
  }
}

/**
 * A collection read from its mirror, as both implementations of the port serve it: they differ only in how a change
 * is written before it is applied here.
 */
export abstract class MirroredCollection<T> implements StateCollection<T> {
  constructor(protected readonly mirror: StateMirror<T>) {}

  get(key: string): T | undefined {
    return this.mirror.get(key);
  }

  entries(): IterableIterator<[string, T]> {
    return this.mirror.entries();
  }

  get size(): number {
    return this.mirror.size;
  }

  onChange(listener: ChangeListener<T>): () => void {
    return this.mirror.onChange(listener);
  }

  abstract put(key: string, value: T): Promise<void>;
  abstract delete(key: string): Promise<boolean>;
}
