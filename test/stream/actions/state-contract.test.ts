/**
 * The state contract (src/stream/actions/types.ts): every action says whether it keeps state, a `kept` action
 * registers it, and saving then loading it into a fresh compilation changes nothing that follows. This walks
 * the whole action table, so that a new action cannot forget it: one that keeps state without saying so, or without
 * saving all of it, emits something else once restarted.
 */
import { describe, expect, it } from 'vitest';
import { actionTable } from '../../../src/stream/actions/action-table.ts';
import { StateShapeError } from '../../../src/stream/actions/state-shape.ts';
import type { StreamServices } from '../../../src/stream/actions/types.ts';
import { compileStream } from '../../../src/stream/engine/compiler.ts';
import { type EdnValue, isEdnMap, kw, parseEdn, printEdn } from '../../../src/stream/lang/edn.ts';
import type { Emission, Event } from '../../../src/stream/event.ts';
import { IndexStore } from '../../../src/stream/index-store.ts';
import { loadUnits, saveUnits } from '../../../src/stream/engine/state-units.ts';

const S = 1_000_000_000;

function services(taps: Map<string, Emission[]>): StreamServices {
  return {
    streamName: 'contract',
    testMode: true,
    index: new IndexStore(),
    reinject: () => {},
    output: () => {},
    hasOutput: () => true,
    publish: () => {},
    hasAsyncQueue: () => true,
    enqueue: (_queue, emit, emission) => emit(emission),
    tap: (name, emission) => {
      const recorded = taps.get(name) ?? [];
      recorded.push(emission);
      taps.set(name, recorded);
    },
    log: () => {},
  };
}

/**
 * The action's documented example (some examples put it under a window that feeds it lists), with the children of
 * the action replaced by taps (`:tap-0`, `:tap-1`...), so that what it emits shows.
 */
function observed(name: string): string {
  const replaceChildren = (node: EdnValue): EdnValue => {
    if (!isEdnMap(node)) return node;
    const children = node.get(kw('children'));
    const copy = new Map<EdnValue, EdnValue>(node);
    if (node.get(kw('action')) === kw(name)) {
      const count = Array.isArray(children) ? children.length : 0;
      if (count > 0)
        copy.set(
          kw('children'),
          Array.from({ length: count }, (_, i) => parseEdn(`{:action :tap :params [:tap-${i}]}`)),
        );
    } else if (Array.isArray(children)) copy.set(kw('children'), children.map(replaceChildren));
    return copy;
  };
  return `{:actions ${printEdn(replaceChildren(parseEdn((actionTable.get(name) as { doc: { example: string } }).doc.example)))}}`;
}

/** Sixty events of everything the actions read: times a second apart, hosts, metrics that move, states that flap. */
const EVENTS: Event[] = Array.from({ length: 60 }, (_, i) => ({
  host: `h${i % 3}`,
  service: i % 4 < 2 ? 'api' : 'db',
  metric: (i * 7) % 23,
  state: i % 15 < 7 ? 'critical' : 'ok',
  time: 1_700_000_000 * S + i * S,
  ttl: i % 5 === 0 ? 2 : 60,
  tags: i % 2 === 0 ? ['a', 'b'] : ['c'],
  payload: '{"x": 1}',
  description: `event ${i}`,
}));

/** Runs the events through a compilation; with `restart`, through a fresh one restored from JSON after each event. */
function emissions(config: string, restart: boolean): { taps: Record<string, Emission[]>; errors: string[] } {
  const taps = new Map<string, Emission[]>();
  const errors: string[] = [];
  const compile = () =>
    compileStream(parseEdn(config), services(taps), { onError: (error) => errors.push((error as Error).message) });
  let stream = compile();
  for (const event of EVENTS) {
    stream.push(structuredClone(event));
    if (!restart) continue;
    const saved = saveUnits(stream.stateUnits);
    stream = compile();
    const failures = loadUnits(stream.stateUnits, saved);
    if (failures.length > 0) throw failures[0]?.error;
  }
  return { taps: Object.fromEntries(taps), errors };
}

describe('the state contract of every action', () => {
  const actions = [...actionTable.values()];

  it('every action says whether it keeps state', () => {
    for (const action of actions) expect(['kept', 'none'], action.name).toContain(action.state);
  });

  it.each(actions.map((action) => [action.name, action.state]))(
    '%s (state %s) registers its state exactly when it keeps one',
    (name, state) => {
      const units = compileStream(parseEdn(observed(name)), services(new Map())).stateUnits;
      const own = units.filter((unit) => unit.action === name);
      if (state === 'kept') {
        expect(own).toHaveLength(1);
        expect(own[0]?.action).toBe(name);
      } else expect(own).toEqual([]);
    },
  );

  it.each(actions.map((action) => [action.name]))(
    '%s emits the same after a restart from its saved state after every event',
    (name) => {
      const config = observed(name);
      const straight = emissions(config, false);
      const restarted = emissions(config, true);
      expect(restarted).toEqual(straight);
    },
  );

  /** Wrong values for a saved state: wholly wrong, then each number of its top level as a string and each list
   *  as a map (fields that hold any value, like `:changed`'s last one, are strings or null and left alone). */
  function damaged(state: unknown): unknown[] {
    const wrong: unknown[] = [null, 'garbage', 42, [{}, 1]];
    if (typeof state !== 'object' || state === null || Array.isArray(state)) return wrong;
    for (const [key, value] of Object.entries(state)) {
      if (typeof value === 'number') wrong.push({ ...state, [key]: String(value) });
      if (Array.isArray(value)) wrong.push({ ...state, [key]: {} });
    }
    return wrong;
  }

  it.each(actions.filter((action) => action.state === 'kept').map((action) => [action.name]))(
    '%s refuses a saved state of the wrong shape',
    (name) => {
      const config = parseEdn(observed(name));
      const stream = compileStream(config, services(new Map()), { onError: () => {} });
      for (const event of EVENTS.slice(0, 30)) stream.push(structuredClone(event));
      const unit = stream.stateUnits.find((candidate) => candidate.action === name);
      const saved = saveUnits(stream.stateUnits).get(unit?.path as string);
      expect(saved).toBeDefined();
      for (const state of damaged(saved?.state)) {
        const fresh = compileStream(config, services(new Map()), { onError: () => {} });
        const failures = loadUnits(
          fresh.stateUnits,
          new Map([[unit?.path as string, { hash: saved?.hash as string, state }]]),
        );
        expect(failures, `${name} given ${JSON.stringify(state)}`).toHaveLength(1);
        expect(failures[0]?.error, JSON.stringify(state)).toBeInstanceOf(StateShapeError);
      }
    },
  );

  it('the saved states are plain JSON: saving after a load gives the same data back', () => {
    for (const action of actions.filter((candidate) => candidate.state === 'kept')) {
      const stream = compileStream(parseEdn(observed(action.name)), services(new Map()), { onError: () => {} });
      for (const event of EVENTS.slice(0, 30)) stream.push(structuredClone(event));
      const saved = saveUnits(stream.stateUnits);
      const fresh = compileStream(parseEdn(observed(action.name)), services(new Map()), { onError: () => {} });
      loadUnits(fresh.stateUnits, saved);
      expect(saveUnits(fresh.stateUnits), action.name).toEqual(saved);
    }
  });
});
