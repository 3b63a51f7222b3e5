#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 --heap-growing-percent=20 --no-sparkplug
// Runs the bundle that `npm install` (the `prepare` script) and `npm start` build into dist/, so `npx vigie`
// and `npm start` run the same code. The V8 flags of the first line (also in package.json's `start` and `vigie`
// scripts: the heap's sizing, and no Sparkplug baseline code, 4 MB of a small service's RSS) are explained in
// docs/performance.md ("V8 heap flags"), as is MALLOC_ARENA_MAX=2: glibc gives each thread that
// allocates (V8's compiler and GC threads) an arena of its own, which keeps what it freed; two arenas for all hold
// 4 MB less of a small service's RSS, for no measurable CPU. Source maps are off: with them on, Node loads the
// bundle's maps, which cover the dependencies bundled with it, megabytes of RSS so that stack traces point into src/
// and node_modules/ rather than dist/ (docs/performance.md, "Memory"). NODE_OPTIONS=--enable-source-maps turns them on.
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/main.js', import.meta.url);
if (!existsSync(bundle)) {
  console.error('vigie: dist/main.js is missing; build it with `npm run build` (npm install does it too)');
  process.exit(1);
}
await import(bundle.href);
