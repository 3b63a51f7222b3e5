/**
 * Mirabelle's `compile` command writes a stream directory of EDN that carries, besides each action's params, what
 * the DSL adds (docs/differences.md, "Compiled EDN"): `:description` maps on every node, `:aggr-fn` and
 * `:nested?` in the windows' options, `:children nil`, `#object[...]` for smax's function. The fixture holds one
 * compiled call of every DSL function; the real reader and compiler must take all of it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { actionTable } from '../../../src/stream/actions/action-table.ts';
import type { StreamServices } from '../../../src/stream/actions/types.ts';
import { compileStream } from '../../../src/stream/engine/compiler.ts';
import { type EdnMap, type EdnValue, isEdnMap, isKeyword, parseEdn } from '../../../src/stream/lang/edn.ts';
import { IndexStore } from '../../../src/stream/index-store.ts';

const COMPILED_DIR = join(import.meta.dirname, '../../fixtures/mirabelle-compiled');
const compiled = () => parseEdn(readFileSync(join(COMPILED_DIR, 'streams.clj'), 'utf8')) as EdnMap;

function services(streamName: string): StreamServices {
  return {
    streamName,
    testMode: true,
    index: new IndexStore(),
    reinject: () => {},
    output: () => {},
    hasOutput: (name) => name === 'influxdb',
    publish: () => {},
    hasAsyncQueue: (name) => name === 'thread-pool',
    enqueue: () => {},
    tap: () => {},
    log: () => {},
  };
}

function actionsIn(value: EdnValue, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const item of value) actionsIn(item, into);
  else if (isEdnMap(value)) {
    const action = value.get([...value.keys()].find((key) => isKeyword(key) && key.name === 'action') as EdnValue);
    if (isKeyword(action)) into.add(action.name);
    for (const [key, item] of value)
      if (isKeyword(key) && (key.name === 'children' || key.name === 'actions')) actionsIn(item, into);
  }
  return into;
}

const compileError = (edn: string): string => {
  try {
    compileStream(parseEdn(edn), services('s'));
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('compiled');
};

describe("Mirabelle's compiled EDN", () => {
  it('compiles every stream of a directory written by `mirabelle compile`', () => {
    const streams = compiled();
    const names: string[] = [];
    for (const [name, config] of streams) {
      const streamName = isKeyword(name) ? name.name : String(name);
      expect(() => compileStream(config, services(streamName)), streamName).not.toThrow();
      names.push(streamName);
    }
    expect(names).toEqual(['filters', 'held', 'transforms', 'windows', 'aggregations', 'plumbing']);
  });

  it('holds a compiled call of every action of Mirabelle (every action of the action table but the ones Vigie adds)', () => {
    const found = actionsIn([...compiled().values()], new Set());
    const vigieOnly = ['critical', 'warning', 'tagged-any', 'index', 'reaper'];
    expect([...found].sort()).toEqual([...actionTable.keys()].filter((name) => !vigieOnly.includes(name)).sort());
  });

  it('runs what it compiled: ssort with :nested? sorts by the nested field', () => {
    const stream = compileStream(
      parseEdn(
        '{:actions {:action :ssort :params [{:duration 5000000000 :field [:attributes :rank] :aggr-fn :ssort :nested? true}] :children ({:action :tap :params [:sorted]})}}',
      ),
      { ...services('s'), tap: (_name, emission) => sorted.push(emission) },
    );
    const sorted: unknown[] = [];
    for (const [time, rank] of [
      [1e9, 3],
      [2e9, 1],
      [3e9, 2],
      [11e9, 0],
    ])
      stream.push({ time, attributes: { rank } });
    expect(sorted).toEqual([
      { time: 2e9, attributes: { rank: 1 } },
      { time: 3e9, attributes: { rank: 2 } },
      { time: 1e9, attributes: { rank: 3 } },
    ]);
  });

  it('still refuses an unknown key, with a did-you-mean', () => {
    expect(
      compileError('{:actions {:action :ssort :params [{:duration 5 :field :time :aggr-fn :ssort :nestd? false}]}}'),
    ).toMatch(/^Invalid parameter :nestd\? for action :ssort: unknown key \(did you mean :nested\?\?\)/);
    expect(compileError('{:actions {:action :sum :params [{:duration 5 :aggr-fm :+}]}}')).toMatch(
      /Invalid parameter :aggr-fm for action :sum: unknown key \(did you mean :aggr-fn\?\)/,
    );
  });

  it("refuses a :nested? that contradicts the field, and an :aggr-fn that is another action's", () => {
    expect(compileError('{:actions {:action :ssort :params [{:duration 5 :field :time :nested? "yes"}]}}')).toMatch(
      /Invalid parameter :nested\? for action :ssort: expected true or false/,
    );
    expect(compileError('{:actions {:action :ssort :params [{:duration 5 :field :time :nested? true}]}}')).toMatch(
      /Invalid parameter :nested\? for action :ssort: is true but :field the keyword :time is not a nested path/,
    );
    expect(compileError('{:actions {:action :sum :params [{:duration 5 :aggr-fn :max}]}}')).toMatch(
      /Invalid parameter :aggr-fn for action :sum: expected :\+ \(what Mirabelle's compiler writes for :sum\), got the keyword :max/,
    );
  });
});
