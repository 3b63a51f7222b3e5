#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=8 --heap-growing-percent=20
// Runs the bundle that `npm install` (the `prepare` script) and `npm start` build into dist/, so `npx vigie`
// and `npm start` run the same code. The first line's flags and variable (also in package.json's `start` and
// `vigie` scripts) are those that pay at both a small deployment and 12,000 checks (docs/performance.md, "The
// launcher's flags"): `--heap-growing-percent=20` holds 12,000 checks' RSS at about 137 MB instead of 280,
// `--max-semi-space-size=8` bounds the young generation (17 MB there), and MALLOC_MMAP_THRESHOLD_ keeps glibc from
// raising the size above which it maps a block of its own (and unmaps it when freed) after the first such block is
// freed: 12 MB of a small deployment's RSS. Source maps are off: with them on, Node loads the bundle's maps, which
// cover the dependencies bundled with it, megabytes of RSS so that stack traces point into src/ and node_modules/
// rather than dist/ (bench/JOURNAL.md, "Memory"). NODE_OPTIONS=--enable-source-maps turns them on.
// It starts any node: a node of a cluster changes at startup, from its config, what V8 lets it change at run time
// (src/process/node-tuning.ts; docs/cluster.md, "Running a node").
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
