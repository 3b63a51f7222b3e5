/**
 * The contract between the stream compiler and the action table. An action is data in, a closure out:
 * `params` validates the raw EDN params once, when the stream is compiled; `build` returns the node that
 * receives what the parent emits, holding its state in the closure and calling `ctx.emit` for its children.
 */
import type { ParamReading } from './params.ts';
import type { DropReason, StreamLimits } from '../limits.ts';
import type { EdnValue } from '../lang/edn.ts';
import type { Emission, Event } from '../event.ts';
import type { IndexStore } from '../index-store.ts';
import type { Shape } from './state-shape.ts';

/** A compiled node: receives one emission from its parent. */
export type Node = (emission: Emission) => void;

/** Sends an emission to every child of the node, in order; each child is isolated by the compiler, so a
 *  throwing child does not stop its siblings (the error goes to the enclosing error handler). */
export type Emit = (emission: Emission) => void;

/** Called with what an action threw on an emission; counts, logs, and routes to an `exception-stream`. */
export type ErrorHandler = (error: unknown, emission: Emission) => void;

/** What a stream instance gives its actions. One per compiled stream; test mode swaps the side effects. */
export interface StreamServices {
  readonly streamName: string;
  readonly testMode: boolean;
  /** The index of this stream (used by `:index`, `:reaper`). */
  readonly index: IndexStore;
  /** Pushes an event into another stream (`null` = this stream, `default` = every default stream). */
  reinject(destination: string | null, event: Event): void;
  /** Hands an emission to a configured output (no-op in test mode). */
  output(name: string, emission: Emission): void;
  /** Whether an output of that name is configured (checked at compile time). */
  hasOutput(name: string): boolean;
  /** Publishes an emission on a websocket pubsub channel (`publish!`; never called in test mode). */
  publish(channel: string, emission: Emission): void;
  /** Whether `streams.async-queues` declares that queue (checked at compile time; any name in test mode). */
  hasAsyncQueue(name: string): boolean;
  /** Runs `emit(emission)` later, from the named async queue (`async-queue!`; never called in test mode). */
  enqueue(queue: string, emit: Emit, emission: Emission): void;
  /** Records an emission on a tap (test mode only). */
  tap(name: string, emission: Emission): void;
  log(level: 'debug' | 'info' | 'error', emission: Emission): void;
  /** Cardinality caps; DEFAULT_STREAM_LIMITS when absent. */
  readonly limits?: StreamLimits;
  /** Reports an event dropped at a cap (counted and logged by the engine). */
  dropped?(reason: DropReason): void;
}

/**
 * How a node's state leaves and re-enters the process (docs/durability.md): `save` returns the state as plain
 * JSON data (objects, arrays, strings, finite numbers, booleans, null; events are plain objects already), which
 * the caller serialises at once, so it may share structure with the live state; `load` gets back what `save`
 * returned, through JSON, from a node compiled from the same config, and adopts it. What `load` is given has
 * passed `shape` first (src/stream/actions/state-shape.ts): a state read from the disk may be damaged.
 */
export interface StateHandle<S = unknown> {
  readonly shape: Shape<S>;
  save(): S;
  load(state: S): void;
}

/** The saved states of the stateful nodes of one compilation (a stream, or one `by` fork), by node path. */
export type SavedStates = Record<string, unknown>;

/** What a keyed state saves whole: the node's own state and one entry per key. */
export interface KeyedSaved<O = unknown> {
  own: O;
  entries: [key: string, saved: unknown][];
}

/**
 * The state of a node holding many independent copies of its children (`by`: one per key). A checkpoint saves
 * only the entries that changed since the previous one, and saves each as it was when the checkpoint began even
 * though events keep flowing: an entry about to change while it is still due is saved first
 * (docs/durability.md, "Checkpoints").
 */
export interface KeyedStateHandle<O = unknown> extends StateHandle<KeyedSaved<O>> {
  readonly keyed: true;
  /** The node's own state, without its entries. */
  saveOwn(): O;
  /**
   * Starts a checkpoint: the entries changed since the previous start become due, and each due entry is
   * handed to `onSave` (null: the key had no entry when the checkpoint began) before it changes or when
   * `saveDue` reaches it, whichever comes first.
   */
  beginCheckpoint(onSave: (key: string, saved: unknown) => void): void;
  /** Saves at most `max` due entries; true when none is due any more. */
  saveDue(max: number): boolean;
  /** Ends the checkpoint; when it did not complete, every entry it made due is due again at the next one. */
  endCheckpoint(completed: boolean): void;
  /** Makes every entry due at the next checkpoint (the stored copy is rewritten whole). */
  markAllChanged(): void;
}

export function isKeyedState(handle: StateHandle): handle is KeyedStateHandle {
  return (handle as Partial<KeyedStateHandle>).keyed === true;
}

/** One more compilation of a node's children, with its own state (a `by` fork). */
export interface ForkedChildren {
  readonly emit: Emit;
  /** The states of the stateful nodes below, by path; null when no node below keeps state. */
  save(): SavedStates | null;
  /** Restores what `save` returned (paths it does not know are ignored). */
  load(states: SavedStates): void;
}

export interface BuildContext {
  readonly services: StreamServices;
  /** Sends to all compiled children of this node. */
  readonly emit: Emit;
  /** Number of children this node has in its config. */
  readonly childCount: number;
  /** Compiles the children again with fresh state (one call per `by` fork). */
  forkChildren(): ForkedChildren;
  /**
   * Registers the state of the node being built, once, from `build`; an action whose definition says
   * `state: 'kept'` must call it, one that says `state: 'none'` must not (test/stream/actions/state-contract.test.ts).
   */
  keepState<S>(handle: StateHandle<S>): void;
  /** Compiles child `index` alone, with errors inside it sent to `onError` (for `exception-stream`). */
  compileChild(index: number, onError: ErrorHandler): Emit;
  /** The error handler enclosing this node (the stream's, or the nearest `exception-stream`'s). */
  readonly onError: ErrorHandler;
}

/**
 * What docs/actions.md says about an action (generated by `npm run docs`). `params` is the expected shape
 * of the params vector in the notation docs/actions.md defines (`[condition duration]`,
 * `[{:duration duration :delay duration?}]`); parameter errors may quote it, so keep it exact.
 */
export interface ActionDoc {
  /** One or two sentences: what the action does with what it receives. */
  readonly summary: string;
  /** The params vector's shape; `[]` for an action without params. */
  readonly params: string;
  /** One complete action node in EDN, children included; it must compile (test/stream/actions/reference.test.ts). */
  readonly example: string;
}

export interface ActionDefinition<P = unknown> {
  /** The EDN keyword name, without the colon (`fixed-time-window`). */
  readonly name: string;
  readonly doc: ActionDoc;
  /** Validates and normalises the raw params; throws `ParamError` naming the parameter and the problem. Options
   *  maps and durations are read through `read` (src/stream/actions/params.ts), this compile's own. */
  params(raw: readonly EdnValue[], read: ParamReading): P;
  /** Child count rule checked at compile time (`exception-stream` needs exactly 2, leaves none). */
  readonly children?: 'none' | 'any' | number;
  /**
   * `kept`: what the node emits depends on the emissions before (a window, a clock, a last value), and `build`
   * registers that state with `ctx.keepState` so that it survives restarts and reloads. `none`: it depends on
   * the current emission only.
   */
  readonly state: 'none' | 'kept';
  build(params: P, ctx: BuildContext): Node;
}

/** Defines an action; the identity function exists so TypeScript infers `P` from `params`. */
export function defineAction<P>(definition: ActionDefinition<P>): ActionDefinition<P> {
  return definition;
}
