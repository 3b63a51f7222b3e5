/**
 * `vigie graph`: the streams of stream files as a Graphviz DOT graph, like Mirabelle's `graphviz` command (README,
 * Streams). Each stream is a cluster entered from a node named after it (its `:description` below, `default`
 * marked); each action is a node labelled with its name; an edge from an action to its children carries the
 * parent's params as EDN, `next` when it has none. Unlike upstream, node ids are deterministic, stream names
 * need not be DOT identifiers and every stream has its own entry node.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type EdnMap, type EdnValue, isEdnMap, isKeyword, kw, parseEdn, printEdn } from './edn.ts';

export class GraphError extends Error {}

interface NamedStream {
  name: string;
  file: string;
  config: EdnValue;
}

/** Reads the stream files (a directory stands for its regular files); the first file defining a name wins. */
export async function readStreamFiles(paths: readonly string[]): Promise<NamedStream[]> {
  const streams = new Map<string, NamedStream>();
  for (const file of await expandFiles(paths)) {
    let parsed: EdnValue;
    try {
      parsed = parseEdn(await readFile(file, 'utf8'));
    } catch (error) {
      throw new GraphError(`${file}: ${(error as Error).message}`);
    }
    if (!isEdnMap(parsed)) throw new GraphError(`${file}: expected a map of stream names to stream configs`);
    for (const [key, config] of parsed) {
      if (!isKeyword(key)) throw new GraphError(`${file}: expected keyword stream names, got ${printEdn(key)}`);
      if (!streams.has(key.name)) streams.set(key.name, { name: key.name, file, config });
    }
  }
  return [...streams.values()];
}

async function expandFiles(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const path of paths) {
    const info = await stat(path).catch(() => null);
    if (info === null) throw new GraphError(`${path}: no such file or directory`);
    if (!info.isDirectory()) {
      files.push(path);
      continue;
    }
    const entries = await readdir(path, { withFileTypes: true });
    for (const entry of entries.filter((e) => e.isFile()).sort((a, b) => (a.name < b.name ? -1 : 1)))
      files.push(join(path, entry.name));
  }
  return files;
}

const ACTION = kw('action');
const PARAMS = kw('params');
const CHILDREN = kw('children');
const ACTIONS = kw('actions');
const DESCRIPTION = kw('description');
const DEFAULT = kw('default');

/** The DOT text of the streams, in the order given. */
export function streamsToDot(streams: readonly NamedStream[]): string {
  const lines = [
    'digraph streams {',
    '  rankdir = TB;',
    '  node [shape = box, fontname = "Helvetica"];',
    '  edge [fontname = "Helvetica", fontsize = 10];',
  ];
  streams.forEach((stream, index) => {
    const where = `${stream.file}: stream ${stream.name}`;
    if (!isEdnMap(stream.config)) throw new GraphError(`${where}: expected a map with :actions`);
    const description = stream.config.get(DESCRIPTION);
    const entryLabel = [
      stream.name + (stream.config.get(DEFAULT) === true ? ' (default)' : ''),
      ...(typeof description === 'string' ? [description] : []),
    ];
    const entry = `s${index}`;
    lines.push(`  subgraph ${quote(`cluster_${stream.name}`)} {`, `    label = ${quote(stream.name)};`);
    lines.push(`    ${entry} [label = ${quote(entryLabel.join('\n'))}, shape = ellipse];`);
    const counter = { next: 0 };
    addAction(lines, where, entry, null, stream.config.get(ACTIONS), counter);
    lines.push('  }');
  });
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

function addAction(
  lines: string[],
  where: string,
  parent: string,
  parentParams: EdnValue | undefined | null,
  action: EdnValue | undefined,
  counter: { next: number },
): void {
  if (!isEdnMap(action))
    throw new GraphError(
      `${where}: expected an action map {:action ...}, got ${action === undefined ? 'nothing' : printEdn(action)}`,
    );
  const name = action.get(ACTION);
  if (!isKeyword(name)) throw new GraphError(`${where}: an action needs an :action keyword, got ${printEdn(action)}`);
  const node = `${parent.split('_')[0]}_${counter.next++}`;
  lines.push(`    ${node} [label = ${quote(name.name)}];`);
  const entered = /^s\d+$/.test(parent);
  lines.push(`    ${parent} -> ${node}${entered ? '' : ` [label = ${quote(edgeLabel(parentParams))}]`};`);
  const children = childrenOf(action);
  for (const child of children) addAction(lines, where, node, action.get(PARAMS), child, counter);
}

function childrenOf(action: EdnMap): EdnValue[] {
  const children = action.get(CHILDREN);
  if (children === undefined || children === null) return [];
  return Array.isArray(children) ? children : [children];
}

function edgeLabel(params: EdnValue | undefined | null): string {
  if (params === null || params === undefined || (Array.isArray(params) && params.length === 0)) return 'next';
  return printEdn(params);
}

/** A DOT double-quoted string: quotes and backslashes escaped, newlines as centred line breaks. */
function quote(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}
