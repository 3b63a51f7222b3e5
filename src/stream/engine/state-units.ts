/**
 * Matching saved action states to a compiled stream (docs/durability.md, "What is kept"): a state goes back into
 * the node at the same place in the tree whose subtree has the same config (same hash), and nowhere else. So a
 * stream file with one branch edited keeps the state of every other branch, and a changed branch starts afresh.
 * States always travel as JSON, at a reload as from a checkpoint, so that both paths restore the same thing.
 */
import { StateShapeError } from '../actions/state-shape.ts';
import type { StateHandle } from '../actions/types.ts';

/**
 * The state of one stateful node of a stream, outside any `by` fork (states inside a fork are saved with it):
 * `path` is its place in the tree (`0` the root action, `0.2` its third child...), `hash` identifies the config
 * of its subtree, so that a saved state only comes back into a node built from the same config at the same place
 * (docs/durability.md).
 */
export interface StateUnit {
  readonly path: string;
  readonly action: string;
  readonly hash: string;
  readonly handle: StateHandle;
}

/** A state saved from the node at `path`, built from the subtree config of hash `hash`. */
export interface SavedUnit {
  readonly hash: string;
  readonly state: unknown;
}

export interface UnitFailure {
  readonly path: string;
  readonly action: string;
  readonly error: Error;
}

/** Loads each unit whose place and hash match a saved state; returns the units whose `load` threw (those may be
 *  half-loaded: the caller compiles the stream again and loads it without them). */
export function loadUnits(
  units: readonly StateUnit[],
  saved: ReadonlyMap<string, SavedUnit>,
  skip: ReadonlySet<string> = new Set(),
): UnitFailure[] {
  const failures: UnitFailure[] = [];
  for (const unit of units) {
    const state = saved.get(unit.path);
    if (state === undefined || state.hash !== unit.hash || skip.has(unit.path)) continue;
    try {
      loadChecked(unit.handle, state.state, '');
    } catch (error) {
      failures.push({
        path: unit.path,
        action: unit.action,
        error: error instanceof Error ? error : new Error(String(error)),
      });
    }
  }
  return failures;
}

/**
 * Loads a state into a node once it has the node's shape; `where` names the node in the message of a refusal (''
 * when the caller names it). Every load of a saved state goes through here (src/stream/actions/state-shape.ts).
 */
export function loadChecked<S>(handle: StateHandle<S>, state: unknown, where: string): void {
  try {
    handle.load(handle.shape(state, ''));
  } catch (error) {
    // A refusal deeper down (a fork of a `:by` inside a fork) is named from here too.
    throw error instanceof StateShapeError && where !== '' ? error.within(where) : error;
  }
}

/** The states of the units, as a checkpoint would store them (through JSON). */
export function saveUnits(units: readonly StateUnit[]): Map<string, SavedUnit> {
  const saved = new Map<string, SavedUnit>();
  for (const unit of units)
    saved.set(unit.path, { hash: unit.hash, state: JSON.parse(JSON.stringify(unit.handle.save())) as unknown });
  return saved;
}
