/**
 * The contract between the stream compiler and the action catalogue. An action is data in, a closure out:
 * `params` validates the raw EDN params once, when the stream is compiled; `build` returns the node that
 * receives what the parent emits, holding its state in the closure and calling `ctx.emit` for its children.
 */
import type { DropReason, StreamLimits } from '../limits.ts';
import type { EdnValue } from '../edn.ts';
import type { Emission, Event } from '../event.ts';
import type { IndexStore } from '../index-store.ts';

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
  /** Records an emission on a tap (test mode only). */
  tap(name: string, emission: Emission): void;
  log(level: 'debug' | 'info' | 'error', emission: Emission): void;
  /** Cardinality caps; DEFAULT_STREAM_LIMITS when absent. */
  readonly limits?: StreamLimits;
  /** Reports an event dropped at a cap (counted and logged by the engine). */
  dropped?(reason: DropReason): void;
}

export interface BuildContext {
  readonly services: StreamServices;
  /** Sends to all compiled children of this node. */
  readonly emit: Emit;
  /** Number of children this node has in its config. */
  readonly childCount: number;
  /** Compiles the children again with fresh state and returns their emit (one call per `by` fork). */
  forkChildren(): Emit;
  /** Compiles child `index` alone, with errors inside it sent to `onError` (for `exception-stream`). */
  compileChild(index: number, onError: ErrorHandler): Emit;
  /** The error handler enclosing this node (the stream's, or the nearest `exception-stream`'s). */
  readonly onError: ErrorHandler;
}

export interface ActionDefinition<P = unknown> {
  /** The EDN keyword name, without the colon (`fixed-time-window`). */
  readonly name: string;
  /** Validates and normalises the raw params; throws `ParamError` naming the parameter and the problem. */
  params(raw: readonly EdnValue[]): P;
  /** Child count rule checked at compile time (`exception-stream` needs exactly 2, leaves none). */
  readonly children?: 'none' | 'any' | number;
  build(params: P, ctx: BuildContext): Node;
}

/** Defines an action; the identity function exists so TypeScript infers `P` from `params`. */
export function defineAction<P>(definition: ActionDefinition<P>): ActionDefinition<P> {
  return definition;
}

/** A compile-time error in an action's params: `Invalid parameter <param> for action :<action>: <problem>`. */
export class ParamError extends Error {
  constructor(
    readonly param: string,
    readonly problem: string,
  ) {
    super(`${param}: ${problem}`);
  }
}
