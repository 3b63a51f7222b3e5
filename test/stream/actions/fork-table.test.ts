import { describe, expect, it } from 'vitest';
import { ForkTable } from '../../../src/stream/actions/fork-table.ts';
import { finite } from '../../../src/stream/actions/state-shape.ts';
import type { ForkedChildren, SavedStates } from '../../../src/stream/actions/types.ts';

/** Children that count what they receive: the state a checkpoint must capture. */
function countingChildren(): ForkedChildren & { count: number } {
  const children = {
    count: 0,
    emit: () => {
      children.count++;
    },
    save: (): SavedStates => ({ '0.0': children.count }),
    load: (states: SavedStates) => {
      children.count = states['0.0'] as number;
    },
  };
  return children;
}

function table() {
  let own = 0;
  const forks = new ForkTable(countingChildren, {
    shape: finite,
    save: () => own,
    load: (state: number) => (own = state),
  });
  /** What `by` does with an event: the fork for the key (made if needed), touched before it changes. */
  const route = (key: string, time: number) => {
    let fork = forks.get(key);
    if (fork === undefined) fork = forks.create(key, time);
    else {
      forks.touch(fork);
      fork.lastSeen = time;
    }
    fork.emit(null);
  };
  return { forks, route };
}

/** Runs a checkpoint to its end, `during` called between slices of one fork. */
function checkpoint(forks: ForkTable<number>, during: (slice: number) => void = () => {}): Map<string, unknown> {
  const saved = new Map<string, unknown>();
  forks.beginCheckpoint((key, state) => {
    expect(saved.has(key), `${key} saved once`).toBe(false);
    saved.set(key, state);
  });
  for (let slice = 0; !forks.saveDue(1); slice++) during(slice);
  forks.endCheckpoint(true);
  return saved;
}

describe('ForkTable checkpoints', () => {
  it('saves only the forks that changed since the previous checkpoint', () => {
    const { forks, route } = table();
    route('a', 1);
    route('b', 2);
    expect([...checkpoint(forks).keys()].sort()).toEqual(['"a"', '"b"']);
    route('b', 3);
    expect([...checkpoint(forks).entries()]).toEqual([['"b"', [3, { '0.0': 2 }]]]);
    expect(checkpoint(forks).size).toBe(0);
  });

  it('saves every fork as it was when the checkpoint began, whatever happens to it during the slices', () => {
    const { forks, route } = table();
    for (const key of ['a', 'b', 'c', 'd']) route(key, 1);
    checkpoint(forks);
    route('a', 2); // a: 2 events
    route('b', 2); // b: 2 events
    route('c', 2); // c: 2 events, removed as idle during the checkpoint
    forks.removeIdle(2); // d (last seen at 1) is gone before the checkpoint begins
    const saved = checkpoint(forks, (slice) => {
      if (slice === 0) {
        route('b', 10); // due and not saved yet: saved first, as it was
        route('b', 11);
        forks.removeIdle(10); // removes a and c, both last seen at 2
        route('d', 10); // created after the checkpoint began: it had no fork then
        route('e', 10);
      }
    });
    expect(Object.fromEntries(saved)).toEqual({
      '"a"': [2, { '0.0': 2 }],
      '"b"': [2, { '0.0': 2 }],
      '"c"': [2, { '0.0': 2 }],
      '"d"': null,
    });
    // What changed during the checkpoint is due at the next one.
    expect(Object.fromEntries(checkpoint(forks))).toEqual({
      '"a"': null,
      '"b"': [11, { '0.0': 4 }],
      '"c"': null,
      '"d"': [10, { '0.0': 1 }],
      '"e"': [10, { '0.0': 1 }],
    });
  });

  it('makes what a failed checkpoint was saving due again', () => {
    const { forks, route } = table();
    route('a', 1);
    route('b', 1);
    forks.beginCheckpoint(() => {});
    forks.saveDue(1);
    forks.endCheckpoint(false);
    expect([...checkpoint(forks).keys()].sort()).toEqual(['"a"', '"b"']);
  });

  it('saves whole and loads back, forks with their last-seen time and their children', () => {
    const { forks, route } = table();
    route('a', 1);
    route('a', 5);
    route('b', 3);
    const whole = JSON.parse(JSON.stringify(forks.save())) as ReturnType<typeof forks.save>;
    const { forks: restored } = table();
    restored.load(whole);
    expect(restored.size).toBe(2);
    expect(restored.get('a')?.lastSeen).toBe(5);
    expect(restored.save().entries).toEqual([
      ['"a"', [5, { '0.0': 2 }]],
      ['"b"', [3, { '0.0': 1 }]],
    ]);
    // Loaded forks are what the database holds: nothing is due until they change or all are marked.
    expect(checkpoint(restored).size).toBe(0);
    restored.markAllChanged();
    expect(checkpoint(restored).size).toBe(2);
  });
});
