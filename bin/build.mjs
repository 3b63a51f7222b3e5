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
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** `vigie --version` prints the package's version, fixed into the bundle. */
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;

/**
 * Leaves out of the bundle every package imported by `import()`, as the server entry explains.
 * @type {import('esbuild').Plugin}
 */
const packagesImportedWhenUsed = {
  name: 'packages-imported-when-used',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, external: true } : undefined,
    );
  },
};

/**
 * The names local to each dependency's functions minified, file by file, as esbuild loads it into the bundle: V8 keeps
 * the bundle's source in the heap, and these names were 225 KB of it (bench/JOURNAL.md, "Dependencies' local names
 * minified"). Vigie's own code keeps its names, so its stack frames and the types of its logged errors read as
 * written. A file transformed alone cannot know which of its module-level names other code reads, so those keep
 * theirs too; the source map still leads back to each file as published.
 * @type {import('esbuild').Plugin}
 */
const dependenciesMinified = {
  name: 'dependencies-minified',
  setup(build) {
    build.onLoad({ filter: /\/node_modules\/.*\.[cm]?js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const { code } = await esbuild.transform(source, {
        loader: 'js',
        minifyIdentifiers: true,
        sourcemap: 'inline',
        sourcefile: args.path,
      });
      return { contents: code, loader: 'js' };
    });
  },
};

/**
 * Modules that a bundled dependency requires as it loads, for a feature Vigie never uses. Bundled, each would be in
 * every service's heap, its source and what its load builds: 300 KB of source for these three and what they require
 * (bench/JOURNAL.md, "Modules no service uses"). Each is replaced, for that importer only, by a module whose
 * every property throws, naming what was left out: a future use fails loudly rather than quietly.
 */
export const LEFT_OUT = [
  // The OpenAPI document in YAML (`app.swagger({ yaml: true })`) and static specification files: the service serves
  // its document generated, as JSON. Config files are parsed by the `yaml` package loaded from node_modules when
  // needed (src/config/yaml.ts).
  { module: 'yaml', importer: '/node_modules/@fastify/swagger/', use: "@fastify/swagger's YAML output" },
  // `injectWS`, a helper for tests that inject websocket connections; its streams pull readable-stream.
  { module: 'duplexify', importer: '/node_modules/@fastify/websocket/', use: "@fastify/websocket's injectWS" },
  // The trace of an exemplar, which no metric of the service enables.
  { module: '@opentelemetry/api', importer: '/node_modules/prom-client/', use: "prom-client's exemplars" },
];

/** @type {import('esbuild').Plugin} */
const leftOut = {
  name: 'left-out',
  setup(build) {
    const byModule = new Map(LEFT_OUT.map((entry) => [entry.module, entry]));
    const filter = new RegExp(`^(${LEFT_OUT.map(({ module }) => module.replace(/[/.@]/g, '\\$&')).join('|')})$`);
    build.onResolve({ filter }, (args) => {
      const entry = byModule.get(args.path);
      return entry !== undefined && args.importer.includes(entry.importer)
        ? { path: args.path, namespace: 'left-out' }
        : undefined;
    });
    build.onLoad({ filter: /.*/, namespace: 'left-out' }, (args) => {
      const message = `${args.path} is left out of the Vigie bundle (bin/build.mjs, LEFT_OUT): ${byModule.get(args.path)?.use} is not available`;
      // Symbols and `__esModule` answer undefined: module interop and inspection read them without using the module.
      const contents = `const message = ${JSON.stringify(message)};
module.exports = new Proxy(function leftOut() { throw new Error(message); }, {
  get(target, key) { if (typeof key === 'symbol' || key === '__esModule') return undefined; throw new Error(message); },
  construct() { throw new Error(message); },
});`;
      return { contents, loader: 'js' };
    });
  },
};

/**
 * One bundle per entry, each with its own `platform` and `target`; `copy` lists files copied beside the output.
 * @type {({ name: string; copy?: string[] } & import('esbuild').BuildOptions)[]}
 */
export const ENTRIES = [
  {
    name: 'server',
    entryPoints: ['src/main.ts'],
    // One CommonJS file, dist/main.cjs. V8 runs an ES module's top-level code as a generator and keeps it once the
    // module has run, bytecode and all: the top-level code of every module bundled in it, 500 KB of a service's heap
    // for code that ran once. CommonJS wraps it in a plain function, whose bytecode V8 drops once it has gone unused
    // (bench/JOURNAL.md, "What the start leaves in the heap"). What is imported by `import()` when first used
    // (the cluster, the commands other than `serve`) is in the same file, its top-level code run at the import.
    outfile: 'dist/main.cjs',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The dependencies are bundled too, whitespace and syntax minified: 572 files of node_modules each held their
    // own source (comments and all), module record and search paths, 4.5 MB of a small service's heap, and took
    // 0.3 s of CPU to find and load at every start (bench/JOURNAL.md, "One bundle"). Vigie's names are kept, so
    // stack traces still name its functions (a dependency's local names are minified: `dependenciesMinified` above);
    // NODE_OPTIONS=--enable-source-maps maps their lines, and the names, back to src/ and node_modules/.
    // Left out: native addons, which Node must load from their files, and the optional ones their packages try;
    // and every package the service imports when first used (`import('nodemailer')`), which Node then loads from
    // node_modules as it is: a bundled CommonJS package would answer such an import with its `default` alone.
    external: ['better-sqlite3', 'raw-socket', 'msgpackr-extract', 'bufferutil', 'utf-8-validate'],
    plugins: [packagesImportedWhenUsed, leftOut, dependenciesMinified],
    minifyWhitespace: true,
    minifySyntax: true,
    // The sources are ES modules: strict mode (esbuild's own "use strict" comes after the banner, where it is no
    // directive), and their `import.meta.url` is the bundle's own URL.
    banner: { js: '"use strict";const __vigieImportMetaUrl=require("node:url").pathToFileURL(__filename).href;' },
    define: { VIGIE_VERSION: JSON.stringify(VERSION), 'import.meta.url': '__vigieImportMetaUrl' },
  },
  {
    // The dashboard (src/frontend/app/), served by the service itself under /frontend/: no CDN, no other toolchain.
    name: 'frontend',
    entryPoints: { app: 'src/frontend/app/main.tsx' },
    outdir: 'dist/frontend',
    platform: 'browser',
    format: 'esm',
    // The colours of both themes are written once with CSS `light-dark()`: browsers from 2024 on.
    target: ['chrome123', 'firefox120', 'safari17.5'],
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
 * bundle a 2 MB string (bench/JOURNAL.md, "Modules loaded when used"). esbuild already escapes every non-ASCII
 * character of strings, templates and regular expressions, so what remains past Latin-1 is in comments, where a
 * `?` does no harm; each UTF-16 unit becomes one `?`, so the source map's columns still hold.
 * @param {import('esbuild').OutputFile} file
 * @returns {{ path: string; contents: Uint8Array }}
 */
function latin1Bundle(file) {
  if (!/\.c?js$/.test(file.path)) return file;
  const text = file.text;
  // eslint-disable-next-line no-control-regex -- the range is the point: everything past Latin-1
  const latin1 = text.replace(/[^\u0000-\u00ff]/g, '?');
  return latin1 === text ? file : { path: file.path, contents: Buffer.from(latin1, 'utf8') };
}

/**
 * Builds every entry (or the named ones) and returns the paths of the files written.
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
      const copies = copy.map((file) => ({
        path: join(outDir, basename(file)),
        contents: readFileSync(join(ROOT, file)),
      }));
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
  const ordered = [...outputs].sort((a, b) => Number(!a.path.endsWith('.map')) - Number(!b.path.endsWith('.map')));
  for (const file of ordered) renameSync(file.path + suffix, file.path);
  return ordered.map((file) => file.path);
}

/**
 * Removes what builds before 2026-11-28 wrote and this one does not: the ES module bundle dist/main.js and its chunks
 * in dist/chunks/. Only the command line does it (`npm run build`, `npm install`, `npm start`): a test process
 * builds while services started from an earlier build may still import their chunks when first used.
 */
function removeEarlierLayout() {
  for (const path of ['main.js', 'main.js.map', 'chunks'])
    rmSync(join(ROOT, 'dist', path), { recursive: true, force: true });
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await build();
  removeEarlierLayout();
}
