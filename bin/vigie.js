#!/usr/bin/env node
// Runs the bundle that `npm install` (the `prepare` script) and `npm start` build into dist/, so `npx vigie`
// and `npm start` run the same code. Source maps make stack traces point into src/.
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/main.js', import.meta.url);
if (!existsSync(bundle)) {
  console.error('vigie: dist/main.js is missing; build it with `npm run build` (npm install does it too)');
  process.exit(1);
}
process.setSourceMapsEnabled(true);
await import(bundle.href);
