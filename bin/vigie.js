#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=20
// Runs the bundle that `npm install` (the `prepare` script) and `npm start` build into dist/, so `npx vigie`
// and `npm start` run the same code. Source maps make stack traces point into src/. The V8 heap flags of the
// first line (also in package.json's `start` and `vigie` scripts) are explained in docs/performance.md.
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/main.js', import.meta.url);
if (!existsSync(bundle)) {
  console.error('vigie: dist/main.js is missing; build it with `npm run build` (npm install does it too)');
  process.exit(1);
}
process.setSourceMapsEnabled(true);
await import(bundle.href);
