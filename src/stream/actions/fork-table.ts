/**
 * The forks of one `by` node and their checkpoints (docs/durability.md, "Checkpoints"). A checkpoint saves only
 * the forks that changed since the previous one, a slice at a time while events keep flowing, and still saves
 * every fork as it was when the checkpoint began: a fork that is due and about to change (an event routed to it,
 * or its removal as idle) is saved first. A key whose fork was removed before the checkpoint began, or created
 * after, saves as null (no fork at that point).
 *
 * Hot path: routing an event costs two flag reads on the fork (`due`, `changed`); the bookkeeping happens once
 * per fork per checkpoint.
 */
import type { FieldKey } from './field-key.ts';
import * as shape from './state-shape.ts';
import type { ForkedChildren, KeyedSaved, KeyedStateHandle, SavedStates, StateHandle } from './types.ts';

/**
 * A fork as the routing sees it. Its children's save and load live in a map of their own: holding them on this
 * object slowed the routing of every event by a fifth (bench/engine.ts, 6.2 -> 4.8 M events/s), keeping them
 * beside it costs nothing measurable.
 */
export interface Fork {
  readonly key: FieldKey;
  readonly emit: ForkedChildren['emit'];
  /** Event time of the newest event routed to it (the idle GC reads it). */
  lastSeen: number;
  /** Changed since the last checkpoint began. */
  changed: boolean;
  /** Due for the running checkpoint and not saved yet. */
  due: boolean;
}

/** A saved fork: its last-seen time and the states of its children (null when none keeps state). */
type SavedFork = [lastSeen: number, states: SavedStates | null];

/** A saved fork as read back (null: no fork at that point); each child's state is then checked by its own shape. */
const savedForkShape = shape.nullable(
  shape.refine(shape.list(shape.anything, { length: 2 }), ([lastSeen, states]) => {
    if (typeof lastSeen !== 'number' || !Number.isFinite(lastSeen))
      return 'expected [last-seen time, states]: the time is not a finite number';
    return states === null || (typeof states === 'object' && !Array.isArray(states))
      ? null
      : 'expected [last-seen time, states]: the states are not a map or null';
  }),
);

const savedEntryShape = shape.refine(shape.list(shape.anything, { length: 2 }), ([key]) =>
  typeof key === 'string' ? null : 'expected [fork key, fork]: the key is not a string',
) as shape.Shape<[string, unknown]>;

/** A fork key as `JSON.stringify` wrote it: the value of the `:by` fields (src/stream/actions/field-key.ts). */
function parseForkKey(text: string): FieldKey {
  let key: unknown;
  try {
    key = JSON.parse(text);
  } catch {
    throw new shape.StateShapeError('', 'the fork key is not JSON');
  }
  if (key !== null && typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'boolean')
    throw new shape.StateShapeError('', `the fork key is not a string, a number, a boolean or nil`);
  return key;
}

export class ForkTable<O> implements KeyedStateHandle<O> {
  readonly keyed = true;
  /** The forks by key; read-only outside this class (the caller looks forks up here, on its hot path). */
  readonly forks = new Map<FieldKey, Fork>();
  private readonly children = new Map<FieldKey, ForkedChildren>();
  /** Keys changed since the last checkpoint began, possibly repeated (a fork removed and created again). */
  private changedKeys: FieldKey[] = [];
  private due: FieldKey[] | null = null;
  private dueCursor = 0;
  /** Due keys saved ahead of the cursor, because they were about to change. */
  private readonly savedEarly = new Set<FieldKey>();
  private onSave: ((key: string, saved: unknown) => void) | null = null;

  constructor(
    private readonly createChildren: () => ForkedChildren,
    private readonly own: StateHandle<O>,
  ) {
    this.shape = shape.record<KeyedSaved<O>>({ own: own.shape, entries: shape.list(savedEntryShape) });
  }

  /** The whole table's shape; each fork's entry is checked as it is loaded (`loadEntry`). */
  readonly shape: shape.Shape<KeyedSaved<O>>;

  get size(): number {
    return this.forks.size;
  }

  get(key: FieldKey): Fork | undefined {
    return this.forks.get(key);
  }

  /** A new fork for `key` (which has none), with fresh children. */
  create(key: FieldKey, lastSeen: number): Fork {
    const children = this.createChildren();
    const fork: Fork = { key, emit: children.emit, lastSeen, changed: true, due: false };
    this.forks.set(key, fork);
    this.children.set(key, children);
    this.changedKeys.push(key);
    return fork;
  }

  /** Call before anything changes in the fork (its last-seen time included); a no-op unless `fork.due` or
   *  `!fork.changed`, which the caller may test first to save the call. */
  touch(fork: Fork): void {
    if (fork.due) this.saveEarly(fork);
    if (!fork.changed) {
      fork.changed = true;
      this.changedKeys.push(fork.key);
    }
  }

  /** Removes the forks last seen before `oldest`. */
  removeIdle(oldest: number): void {
    for (const [key, fork] of this.forks) {
      if (fork.lastSeen >= oldest) continue;
      this.touch(fork);
      this.forks.delete(key);
      this.children.delete(key);
    }
  }

  saveOwn(): O {
    return this.own.save();
  }

  save(): KeyedSaved<O> {
    const entries: [string, unknown][] = [];
    for (const fork of this.forks.values()) entries.push([JSON.stringify(fork.key), this.saveFork(fork)]);
    return { own: this.own.save(), entries };
  }

  load(state: KeyedSaved<O>): void {
    this.forks.clear();
    this.children.clear();
    this.changedKeys = [];
    this.own.load(state.own);
    for (const [text, saved] of state.entries) this.loadEntry(text, saved);
  }

  /** Restores one entry of `save()` (a checkpoint stores them one per row); a damaged one throws StateShapeError
   *  naming the fork. */
  loadEntry(text: string, saved: unknown): void {
    try {
      const checked = savedForkShape(saved, '') as SavedFork | null;
      if (checked === null) return;
      const [lastSeen, states] = checked;
      const children = this.createChildren();
      const fork: Fork = { key: parseForkKey(text), emit: children.emit, lastSeen, changed: false, due: false };
      if (states !== null) children.load(states);
      this.forks.set(fork.key, fork);
      this.children.set(fork.key, children);
    } catch (error) {
      throw error instanceof shape.StateShapeError ? error.within(`fork ${text}`) : error;
    }
  }

  beginCheckpoint(onSave: (key: string, saved: unknown) => void): void {
    if (this.due !== null) this.endCheckpoint(false);
    const keys = [...new Set(this.changedKeys)];
    this.changedKeys = [];
    for (const key of keys) {
      const fork = this.forks.get(key);
      if (fork === undefined) continue;
      fork.changed = false;
      fork.due = true;
    }
    this.due = keys;
    this.dueCursor = 0;
    this.onSave = onSave;
  }

  saveDue(max: number): boolean {
    const due = this.due;
    const onSave = this.onSave;
    if (due === null || onSave === null) return true;
    let saved = 0;
    while (this.dueCursor < due.length && saved < max) {
      const key = due[this.dueCursor++] as FieldKey;
      const fork = this.forks.get(key);
      if (fork !== undefined && fork.due) {
        fork.due = false;
        onSave(JSON.stringify(key), this.saveFork(fork));
      } else if (!this.savedEarly.has(key)) {
        // Gone before the checkpoint began, or created since: there was no fork at that point.
        onSave(JSON.stringify(key), null);
      }
      saved++;
    }
    return this.dueCursor >= due.length;
  }

  endCheckpoint(completed: boolean): void {
    const due = this.due;
    if (due === null) return;
    if (!completed) {
      for (const key of due) {
        const fork = this.forks.get(key);
        if (fork !== undefined) {
          fork.due = false;
          if (fork.changed) continue;
          fork.changed = true;
        }
        this.changedKeys.push(key);
      }
    }
    this.due = null;
    this.dueCursor = 0;
    this.savedEarly.clear();
    this.onSave = null;
  }

  markAllChanged(): void {
    for (const fork of this.forks.values()) {
      if (fork.changed) continue;
      fork.changed = true;
      this.changedKeys.push(fork.key);
    }
  }

  private saveEarly(fork: Fork): void {
    fork.due = false;
    this.savedEarly.add(fork.key);
    (this.onSave as (key: string, saved: unknown) => void)(JSON.stringify(fork.key), this.saveFork(fork));
  }

  private saveFork(fork: Fork): SavedFork {
    return [fork.lastSeen, (this.children.get(fork.key) as ForkedChildren).save()];
  }
}
