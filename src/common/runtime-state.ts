/**
 * The port of runtime state (docs/architecture.md, "Runtime state"): what operators change while the service runs
 * (pauses, alert state and acknowledgements, sessions, subscriptions, tokens, incidents, maintenance windows), kept
 * so that it survives restarts and, in a cluster, is the same on every node. A part declares each kind of state it
 * keeps as a `StateKind` and reads and writes it through the `StateCollection` it gets back; it never knows where
 * the state lives.
 *
 * Two implementations, chosen once when the parts are built: a single node keeps each collection in its SQLite
 * database (src/db/runtime-state.ts); a cluster keeps it in a JetStream KV bucket and mirrors it into every node's
 * SQLite, so that reads stay local and go on while NATS is away.
 *
 * Reads are synchronous and local: each collection is held in memory. Writes resolve once the change is durable
 * where the state lives (committed to SQLite; acknowledged by JetStream) and applied here; they reject with an
 * `UnavailableError` (a 503 in every part's routes) when the state cannot be written now.
 */

/** A value past what the store keeps (`cluster.max-state-value-bytes`): the part answers it as a 400. */
export class StateValueTooLargeError extends Error {}

/** One kind of runtime state, as its part declares it. */
export interface StateKind<T> {
  /** `[a-z][a-z0-9-]*`: the collection's name (its rows' `kind`, its keys' prefix on the bus). */
  readonly name: string;
  /**
   * Checks a stored or replicated value and answers it typed; throws an Error naming the problem when it is not
   * one. What comes from the bus or the disk is untrusted: this is the same validation as an API body's.
   */
  readonly parse: (value: unknown) => T;
  /** Where this node keeps the collection; the `runtime_state` table's rows of this kind when absent. */
  readonly rows?: LocalRows<T>;
}

/** A collection's rows in this node's database (a table of its own, for people who query it with SQL). */
export interface LocalRows<T> {
  /** Every stored row, as stored: each value is checked by `parse` before use, so a damaged one costs one row. */
  load(): Iterable<readonly [key: string, value: unknown]>;
  save(key: string, value: T): void;
  remove(key: string): void;
  /** Makes the rows exactly `entries` (a cluster node catching up with the replicated state). */
  replaceAll(entries: ReadonlyMap<string, T>): void;
}

/** Who made a change that a listener sees: this node's API, or another node (through the cluster). */
export type ChangeOrigin = 'local' | 'remote';

export type ChangeListener<T> = (key: string, value: T | undefined, origin: ChangeOrigin) => void;

export interface StateCollection<T> {
  get(key: string): T | undefined;
  entries(): IterableIterator<[string, T]>;
  readonly size: number;
  /** Stores `value` under `key`; resolves once durable and applied here (listeners called). */
  put(key: string, value: T): Promise<void>;
  /** Removes `key`; resolves whether it was there, once durable and applied here. */
  delete(key: string): Promise<boolean>;
  /** Called for every change applied here, in the order applied; the returned function stops the calls. */
  onChange(listener: ChangeListener<T>): () => void;
}

/** Why a stored value was skipped when a collection was loaded (counted and logged by the implementation). */
export interface SkippedValue {
  readonly kind: string;
  readonly key: string;
  readonly reason: string;
}

export interface RuntimeState {
  /** The collection of `kind`, loaded from where it lives; a kind's name is taken once. */
  collection<T>(kind: StateKind<T>): StateCollection<T>;
  /** Why changes cannot be written now (the cluster's store is not reachable or not ready), or null. */
  unwritable(): string | null;
}
