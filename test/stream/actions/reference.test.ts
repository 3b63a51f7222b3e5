import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { actionFamilies, actionTable } from '../../../src/stream/actions/action-table.ts';
import { readParams } from '../../../src/stream/actions/params.ts';
import { renderActionReference } from '../../../src/stream/actions/reference.ts';
import type { StreamServices } from '../../../src/stream/actions/types.ts';
import { compileStream } from '../../../src/stream/engine/compiler.ts';
import { type EdnMap, type EdnValue, isEdnMap, isKeyword, kw, parseEdn } from '../../../src/stream/lang/edn.ts';
import { IndexStore } from '../../../src/stream/index-store.ts';

/** The outputs the examples name, as a configured `streams.outputs` would declare them. */
const EXAMPLE_OUTPUTS = new Set(['archive', 'influx', 's3']);

function services(): StreamServices {
  return {
    streamName: 'example',
    testMode: false,
    index: new IndexStore(),
    reinject: () => {},
    output: () => {},
    hasOutput: (name) => EXAMPLE_OUTPUTS.has(name),
    tap: () => {},
    log: () => {},
    publish: () => {},
    hasAsyncQueue: (name) => name === 'my-queue',
    enqueue: () => {},
  };
}

/** The first node of the tree (depth first) whose `:action` is `name`. */
function findNode(node: EdnValue, name: string): EdnMap | undefined {
  if (!isEdnMap(node)) return undefined;
  const action = node.get(kw('action'));
  if (isKeyword(action) && action.name === name) return node;
  const children = node.get(kw('children'));
  if (!Array.isArray(children)) return undefined;
  for (const child of children) {
    const found = findNode(child, name);
    if (found !== undefined) return found;
  }
  return undefined;
}

const actions = [...actionTable.values()];

describe('the action reference (docs/actions.md)', () => {
  it('is up to date with the action table', () => {
    const onDisk = readFileSync(new URL('../../../docs/actions.md', import.meta.url), 'utf8');
    expect(onDisk, 'docs/actions.md is stale: run `npm run docs` and commit the result').toBe(renderActionReference());
  });

  it('lists every action of the table exactly once, in a family', () => {
    const listed = actionFamilies.flatMap((family) => family.actions.map((action) => action.name));
    expect(listed.length).toBe(new Set(listed).size);
    expect(new Set(listed)).toEqual(new Set(actionTable.keys()));
    const reference = renderActionReference();
    for (const name of actionTable.keys()) expect(reference).toContain(`### :${name}\n`);
  });

  it.each(actions.map((action) => [action.name, action] as const))(
    'documents :%s with a summary, a params shape and an example',
    (_name, action) => {
      expect(action.doc.summary.length).toBeGreaterThan(20);
      expect(action.doc.params).toMatch(/^\[.*\]$/);
      expect(action.doc.example).toMatch(/^\{:action :/);
    },
  );

  it.each(actions.map((action) => [action.name, action] as const))(
    'compiles the example of :%s with the real stream compiler',
    (name, action) => {
      const example = parseEdn(action.doc.example);
      const node = findNode(example, name);
      expect(node, `the example of :${name} has no :${name} node`).toBeDefined();
      const children = node?.get(kw('children'));
      const childCount = Array.isArray(children) ? children.length : 0;
      // An example shows where the events go: a node that takes children gets at least one.
      if (action.children === 'none') expect(childCount).toBe(0);
      else if (typeof action.children === 'number') expect(childCount).toBe(action.children);
      else expect(childCount).toBeGreaterThan(0);
      const stream = compileStream(new Map<EdnValue, EdnValue>([[kw('actions'), example]]), services());
      expect(typeof stream.push).toBe('function');
    },
  );

  it('params without arguments are exactly the actions whose params vector may be empty', () => {
    for (const action of actions) {
      const takesNone = (() => {
        try {
          readParams([], (read) => action.params([], read));
          return true;
        } catch {
          return false;
        }
      })();
      const shapeAllowsEmpty = action.doc.params === '[]' || /^\[[^ ]+\?\]$/.test(action.doc.params);
      expect(shapeAllowsEmpty, `:${action.name} takes ${action.doc.params}`).toBe(takesNone);
    }
  });
});
