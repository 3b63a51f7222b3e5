#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=8 --heap-growing-percent=20 --no-sparkplug --bytecode-old-age=2
// Runs the bundle that `npm install` (the `prepare` script) and `npm start` build into dist/, so `npx vigie`
// and `npm start` run the same code. The V8 flags of the first line (also in package.json's `start` and `vigie`
// scripts: the heap's sizing, and no Sparkplug baseline code, 4 MB of a small service's RSS) are explained in
// docs/performance.md ("V8 heap flags"), as is MALLOC_ARENA_MAX=2: glibc gives each thread that
// allocates (V8's compiler and GC threads) an arena of its own, which keeps what it freed; two arenas for all hold
// 4 MB less of a small service's RSS, for no measurable CPU. MALLOC_MMAP_THRESHOLD_ keeps glibc from raising the size
// above which it maps a block of its own (and unmaps it when freed) after the first such block is freed, and
// `--bytecode-old-age=2` lets V8 drop the bytecode of functions unused over two full collections instead of five:
// together 2 to 4 MB less of a small deployment's RSS, for no measurable CPU or ingest throughput
// (docs/performance.md, "The old space compacted while small"). Source maps are off: with them on, Node loads the
// bundle's maps, which cover the dependencies bundled with it, megabytes of RSS so that stack traces point into src/
// and node_modules/ rather than dist/ (docs/performance.md, "Memory"). NODE_OPTIONS=--enable-source-maps turns them on.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const bundle = fileURLToPath(new URL('../dist/main.cjs', import.meta.url));
if (!existsSync(bundle)) {
  console.error('vigie: dist/main.cjs is missing; build it with `npm run build` (npm install does it too)');
  process.exit(1);
}
// Required, not imported: an import of a CommonJS file has Node scan its whole source for the names it exports.
createRequire(import.meta.url)(bundle);
