#!/usr/bin/env node
/**
 * The one build of Vigie: esbuild bundles each entry point below into `dist/`. `npm run build`, `npm start`,
 * `prepare` (so `npm install` leaves a runnable `bin/vigie.js`) and the test helper all call it.
 *
 * Every output is written aside and renamed into place, so a process that starts the bundle while another
 * builds it (parallel test workers) never loads a half-written file.
 *
 * Plain JavaScript on purpose: it runs at `npm install` time, before any TypeScript tooling is set up.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** `vigie --version` prints the package's version, fixed into the bundle. */
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;

/**
 * One bundle per entry, each with its own `platform` and `target`; `copy` lists files copied beside the output.
 * @type {({ name: string; copy?: string[] } & import('esbuild').BuildOptions)[]}
 */
export const ENTRIES = [
  {
    name: 'server',
    entryPoints: ['src/main.ts'],
    outfile: 'dist/main.js',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Dependencies stay in node_modules: better-sqlite3 is native, and the others resolve their own files.
    packages: 'external',
    define: { VIGIE_VERSION: JSON.stringify(VERSION) },
  },
  {
    // The dashboard (src/frontend/app/), served by the service itself under /frontend/: no CDN, no other toolchain.
    name: 'frontend',
    entryPoints: { app: 'src/frontend/app/main.tsx' },
    outdir: 'dist/frontend',
    platform: 'browser',
    format: 'esm',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    copy: ['src/frontend/app/index.html'],
  },
];

/**
 * V8 keeps a module's source in the heap (functions are compiled from it when first called), one byte per
 * character when every character is Latin-1, two otherwise: a single arrow in a comment made the service's 1 MB
 * bundle a 2 MB string (docs/performance.md, "Modules loaded when used"). esbuild already escapes every non-ASCII
 * character of strings, templates and regular expressions, so what remains past Latin-1 is in comments, where a
 * `?` does no harm; each UTF-16 unit becomes one `?`, so the source map's columns still hold.
 * @param {import('esbuild').OutputFile} file
 * @returns {{ path: string; contents: Uint8Array }}
 */
function latin1Bundle(file) {
  if (!file.path.endsWith('.js')) return file;
  const text = file.text;
  // eslint-disable-next-line no-control-regex -- the range is the point: everything past Latin-1
  const latin1 = text.replace(/[^\u0000-\u00ff]/g, '?');
  return latin1 === text ? file : { path: file.path, contents: Buffer.from(latin1, 'utf8') };
}

/**
 * Builds every entry (or the named ones) and returns the paths of the bundles written.
 * @param {{ only?: string[] }} [options]
 * @returns {Promise<string[]>}
 */
export async function build(options = {}) {
  const selected = options.only ? ENTRIES.filter((entry) => options.only?.includes(entry.name)) : ENTRIES;
  const built = await Promise.all(
    selected.map(async ({ name: _name, copy = [], ...entry }) => {
      const result = await esbuild.build({
        bundle: true,
        sourcemap: true,
        logLevel: 'warning',
        ...entry,
        absWorkingDir: ROOT,
        write: false,
      });
      const outDir = join(ROOT, entry.outdir ?? dirname(entry.outfile ?? ''));
      const copies = copy.map((file) => ({ path: join(outDir, basename(file)), contents: readFileSync(join(ROOT, file)) }));
      const outputs = entry.platform === 'node' ? result.outputFiles.map(latin1Bundle) : result.outputFiles;
      return [...outputs, ...copies];
    }),
  );
  const outputs = built.flat();
  const suffix = `.${process.pid}.tmp`;
  for (const file of outputs) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path + suffix, file.contents);
  }
  // Source maps first, so a bundle in place always has its map beside it.
  const ordered = [...outputs].sort((a, b) => Number(b.path.endsWith('.map')) - Number(a.path.endsWith('.map')));
  for (const file of ordered) renameSync(file.path + suffix, file.path);
  return selected.map((entry) => join(ROOT, entry.outfile ?? entry.outdir ?? ''));
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await build();
}
