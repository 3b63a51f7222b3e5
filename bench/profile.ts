/**
 * Breaks a V8 CPU profile (`node --cpu-prof`) of the service down by component, over the last `windowS` seconds
 * before the process started to stop. Each sample goes to the first component found walking its stack from the
 * leaf up, libraries before our own files before Node's internals (a socket connect that undici makes is
 * undici's; one that the TCP check makes is the TCP check's). Frames of the bundle (dist/main.cjs)
 * are mapped back to src/ and node_modules/ through their source maps. Shares are of one core over the window:
 * they add up to the process's main-thread CPU.
 *
 *   node --import tsx bench/profile.ts FILE.cpuprofile [windowS] [endSkipMs]
 *
 * PROFILE_TOP=<n>: how many of the busiest functions to list (25).
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Tested in order against each frame's source; the first pattern that matches names the frame's component. */
const LIBRARIES: [string, RegExp][] = [
  ['undici', /node_modules\/undici\//],
  ['NATS client', /node_modules\/@nats-io\//],
  ['MessagePack (event log)', /node_modules\/msgpackr\//],
  ['prom-client', /node_modules\/prom-client\//],
  ['SQLite', /node_modules\/(better-sqlite3|drizzle-orm)\//],
  ['logging', /node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream)\//],
  ['HTTP API (fastify)', /node_modules\/(fastify|@fastify|find-my-way|avvio|light-my-request)\//],
];
const OURS: [string, RegExp][] = [
  ['TCP connect', /src\/healthcheck\/kinds\/tcp\//],
  ['HTTP check', /src\/healthcheck\/kinds\/http\//],
  ['SQLite', /src\/healthcheck\/results\/(repository|result-writer|result-statements)\.ts$/],
  ['prom-client', /src\/healthcheck\/metrics\.ts$/],
  ['results and states', /src\/healthcheck\/(results|registry|states|alerts)\//],
  ['timers/scheduler', /src\/healthcheck\/(scheduling\/|run-signal\.ts$)/],
  ['stream part', /src\/stream\//],
  ['cluster part', /src\/cluster\//],
];
const NODE: [string, RegExp][] = [
  ['TCP connect', /^node:(net|internal\/net|internal\/stream_base_commons|internal\/dns|dns)/],
  ['timers/scheduler', /^node:(timers|internal\/timers)/],
];

export interface Breakdown {
  window_s: number;
  samples: number;
  /** Share of one core over the window, per component, busiest first. */
  share_of_one_core: Record<string, number>;
  /** The busiest functions (self time), for the next step. */
  top_functions: { name: string; where: string; share_of_one_core: number }[];
}

/** The server bundle (bin/build.mjs), whose positions are mapped back through its source map. */
const BUNDLE = /\/dist\/main\.cjs$/;

export function profileBreakdown(file: string, options: { windowS: number; endSkipMs?: number }): Breakdown {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    nodes.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const maps = new Map<string, SourceMap | null>();
  const sourceOf = (node: ProfileNode): string => {
    const { url, lineNumber, columnNumber } = node.callFrame;
    if (!url.startsWith('file://') || !BUNDLE.test(url)) return url;
    let map = maps.get(url);
    if (map === undefined) {
      try {
        map = new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8')));
      } catch {
        map = null;
      }
      maps.set(url, map);
    }
    const entry = map?.findEntry(lineNumber, columnNumber) as { originalSource?: string } | undefined;
    return entry?.originalSource ?? url;
  };
  const sources = new Map<number, string>();
  const source = (id: number): string => {
    let text = sources.get(id);
    if (text === undefined) {
      text = sourceOf(nodes.get(id) as ProfileNode);
      sources.set(id, text);
    }
    return text;
  };
  const categories = new Map<number, string>();
  const categorize = (leaf: number): string => {
    const cached = categories.get(leaf);
    if (cached !== undefined) return cached;
    const leafName = (nodes.get(leaf) as ProfileNode).callFrame.functionName;
    let category: string | undefined;
    if (leafName === '(idle)' || leafName === '(program)' || leafName === '(garbage collector)') category = leafName;
    for (const table of [LIBRARIES, OURS, NODE]) {
      for (let id: number | undefined = leaf; category === undefined && id !== undefined; id = parent.get(id)) {
        const where = source(id);
        category = table.find(([, pattern]) => pattern.test(where))?.[0];
      }
    }
    category ??= 'other';
    categories.set(leaf, category);
    return category;
  };

  // Sample timestamps are µs on the profile's clock; the window ends `endSkipMs` before the profile does.
  const windowEnd = profile.endTime - (options.endSkipMs ?? 0) * 1000;
  const windowStart = windowEnd - options.windowS * 1e6;
  const byCategory = new Map<string, number>();
  const bySelf = new Map<number, number>();
  let time = profile.startTime;
  let counted = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    time += delta;
    if (time < windowStart || time > windowEnd) continue;
    const id = profile.samples[i] as number;
    const category = categorize(id);
    byCategory.set(category, (byCategory.get(category) ?? 0) + delta);
    bySelf.set(id, (bySelf.get(id) ?? 0) + delta);
    counted++;
  }
  const share = (us: number) => Number((us / (options.windowS * 1e6)).toFixed(4));
  const selfByFunction = new Map<string, { name: string; where: string; us: number }>();
  for (const [id, us] of bySelf) {
    const frame = (nodes.get(id) as ProfileNode).callFrame;
    const where = `${source(id).replace(/^.*\/(src|node_modules)\//, '$1/')}`;
    const key = `${frame.functionName}@${where}`;
    const entry = selfByFunction.get(key) ?? { name: frame.functionName || '(anonymous)', where, us: 0 };
    entry.us += us;
    selfByFunction.set(key, entry);
  }
  return {
    window_s: options.windowS,
    samples: counted,
    share_of_one_core: Object.fromEntries(
      [...byCategory].sort((a, b) => b[1] - a[1]).map(([name, us]) => [name, share(us)]),
    ),
    top_functions: [...selfByFunction.values()]
      .filter((entry) => entry.name !== '(idle)')
      .sort((a, b) => b.us - a.us)
      .slice(0, Number(process.env.PROFILE_TOP ?? 25))
      .map((entry) => ({ name: entry.name, where: entry.where, share_of_one_core: share(entry.us) })),
  };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, windowS, endSkipMs] = process.argv.slice(2);
  if (file === undefined) throw new Error('usage: bench/profile.ts FILE.cpuprofile [windowS] [endSkipMs]');
  console.log(
    JSON.stringify(
      profileBreakdown(file, { windowS: Number(windowS ?? 60), endSkipMs: Number(endSkipMs ?? 0) }),
      null,
      2,
    ),
  );
}
