/**
 * Memory per `:by` fork and per index entry, to size streams.max-forks and streams.max-index-entries
 * (docs/hardening.md). Pushes N events of distinct hosts through `by [:host] -> fixed-time-window 10s` and
 * through `index [:host]`, compiled by the real stream compiler, and divides the heap growth (after a full GC)
 * and the RSS growth by N. Writes bench/results/cardinality.json.
 *
 * `node --import tsx bench/cardinality.ts [keys]`
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { StreamServices } from '../src/stream/actions/types.ts';
import { compileStream } from '../src/stream/engine/compiler.ts';
import { parseEdn } from '../src/stream/lang/edn.ts';
import { IndexStore } from '../src/stream/index-store.ts';

const KEYS = Number(process.argv[2] ?? 200_000);
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const PIPELINES = {
  fork: '{:actions {:action :by :params [{:fields [:host]}] :children [{:action :fixed-time-window :params [{:duration "10s"}]}]}}',
  indexEntry: '{:actions {:action :index :params [[:host]]}}',
};

function measure(pipeline: string): { heapBytes: number; rssBytes: number } {
  const index = new IndexStore();
  const limits = { maxForks: Infinity, maxIndexEntries: Infinity, forkIdleNs: 3600e9 };
  const services: StreamServices = {
    streamName: 'bench',
    testMode: false,
    index,
    reinject: () => {},
    output: () => {},
    hasOutput: () => false,
    tap: () => {},
    log: () => {},
    publish: () => {},
    hasAsyncQueue: () => false,
    enqueue: () => {},
    limits,
  };
  const stream = compileStream(parseEdn(pipeline), services);
  gc();
  const before = process.memoryUsage();
  for (let i = 0; i < KEYS; i++)
    stream.push({ host: `host-${i}.example.net`, service: 'cpu', metric: i, time: 1_700_000_000e9 + i, ttl: 60 });
  gc();
  const after = process.memoryUsage();
  stream.push({ host: 'host-0.example.net', time: 1_700_000_000e9 }); // keeps the stream (and its forks) alive until measured
  if (pipeline === PIPELINES.indexEntry && index.size !== KEYS)
    throw new Error(`expected ${KEYS} entries, got ${index.size}`);
  return {
    heapBytes: Math.round((after.heapUsed - before.heapUsed) / KEYS),
    rssBytes: Math.round((after.rss - before.rss) / KEYS),
  };
}

// The index first: RSS freed by a previous measure would make the next one's RSS growth look smaller.
const indexEntry = measure(PIPELINES.indexEntry);
const fork = measure(PIPELINES.fork);
console.log(`per :by fork (fixed-time-window child): ${fork.heapBytes} B heap, ${fork.rssBytes} B RSS`);
console.log(
  `per index entry: ${indexEntry.heapBytes} B heap, ${indexEntry.rssBytes} B RSS (event of 5 fields included)`,
);

const dir = join(import.meta.dirname, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(
  join(dir, 'cardinality.json'),
  `${JSON.stringify({ keys: KEYS, fork, indexEntry, cores: cpus().length, node: process.version })}\n`,
);
