/**
 * The server bundle (bin/build.mjs, bench/JOURNAL.md "One bundle"): what a service loads at its start is in
 * dist/main.cjs, dependencies included, so that it holds no node_modules file of its own
 * (each held its whole source, comments and all); packages imported when first used stay packages, loaded by
 * Node from node_modules (a bundled CommonJS package answers `import()` with its `default` alone). HTTP checks
 * use Node's client, so a service of checks loads no undici (bench/JOURNAL.md, "HTTP checks on Node's client").
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { BuildOptions, Metafile } from 'esbuild';
import * as esbuild from 'esbuild';
import { expect, it } from 'vitest';
import { ENTRIES, LEFT_OUT, ROOT } from '../../../bin/build.mjs';
import { ensureBundle, startServer } from '../../helpers/server.ts';
import { startHttpTarget } from '../../helpers/targets.ts';

/** The native addons and their optional helpers, which Node loads from their files. */
const NATIVE = new Set(['better-sqlite3', 'raw-socket', 'msgpackr-extract', 'bufferutil', 'utf-8-validate']);

async function serverMetafile(): Promise<Metafile> {
  const {
    name: _name,
    copy: _copy,
    ...entry
  } = ENTRIES.find((candidate) => candidate.name === 'server') as BuildOptions & { name: string; copy?: string[] };
  const result = await esbuild.build({
    ...entry,
    bundle: true,
    absWorkingDir: ROOT,
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  return result.metafile;
}

it('loads no dependency from node_modules at its start but native addons, and imports lazily used packages from node_modules', async () => {
  const { outputs } = await serverMetafile();
  // One file: what a service imports when first used is in it too, its packages left to Node.
  const bundles = Object.keys(outputs).filter((path) => !path.endsWith('.map'));
  expect(bundles).toEqual([expect.stringMatching(/dist\/main\.cjs$/)]);
  const main = bundles[0] as string;
  const externalAtStart = new Set<string>();
  const externalWhenUsed = new Set<string>();
  for (const { path, kind, external } of (outputs[main] as Metafile['outputs'][string]).imports) {
    if (external === true && !path.startsWith('node:'))
      (kind === 'dynamic-import' ? externalWhenUsed : externalAtStart).add(path);
  }

  // Node's own modules by their bare names (`require('fs')` in a dependency) are builtins too.
  const { builtinModules } = await import('node:module');
  const packagesAtStart = [...externalAtStart].filter((path) => !builtinModules.includes(path) && !NATIVE.has(path));
  expect(packagesAtStart).toEqual([]);
  // The bundle at start holds fastify and the rest: its sources came from node_modules.
  const inputs = Object.keys((outputs[main] as Metafile['outputs'][string]).inputs);
  expect(inputs.some((input) => input.includes('node_modules/fastify/'))).toBe(true);
  // Imported when first used: the e-mail output, the badges, the cluster's NATS clients and codec, the watcher of
  // stream directories.
  expect([...externalWhenUsed]).toEqual(
    expect.arrayContaining([
      'nodemailer',
      'badge-maker',
      '@nats-io/transport-node',
      '@nats-io/jetstream',
      'msgpackr',
      'chokidar',
    ]),
  );
  // Modules that dependencies require for features the service never uses are left out, with what they require.
  expect(LEFT_OUT.map(({ module }) => module)).toEqual(['yaml', 'duplexify', '@opentelemetry/api']);
  const leftOut = ['yaml', 'duplexify', 'readable-stream', '@opentelemetry/api'];
  expect(inputs.filter((input) => leftOut.some((name) => input.includes(`node_modules/${name}/`)))).toEqual([]);
}, 60_000);

it("keeps Vigie's own names and minifies those local to a dependency's functions, its source map leading back to both", async () => {
  // The bundle as built from the sources now, not one left by an earlier build.
  await ensureBundle();
  const text = readFileSync(join(ROOT, 'dist/main.cjs'), 'latin1');
  // Ours, parameters included, as written: a stack frame or a logged error's type names what the code calls it.
  // (Each a boolean, so that a failure does not print the 2 MB bundle.)
  expect(text.includes('function installRootErrorHandlers(app){'), 'installRootErrorHandlers(app)').toBe(true);
  expect(text.includes('KnownPaths=class{'), 'class KnownPaths').toBe(true);
  // fastify's `function compileSchemasForSerialization (context, compile)`: its module-level name stays, its
  // parameters do not.
  expect(
    /function compileSchemasForSerialization\((?!context,compile\))[\w$]+,[\w$]+\)/.test(text),
    'compileSchemasForSerialization',
  ).toBe(true);
  const map = JSON.parse(readFileSync(join(ROOT, 'dist/main.cjs.map'), 'utf8')) as {
    sources: string[];
    sourcesContent: string[];
  };
  const original =
    map.sourcesContent[map.sources.findIndex((source) => source.endsWith('node_modules/fastify/lib/validation.js'))];
  expect(original).toContain('function compileSchemasForSerialization (context, compile)');
}, 60_000);

it('answers a use of a module left out of the bundle with an error that names it', async () => {
  const {
    name: _name,
    copy: _copy,
    ...entry
  } = ENTRIES.find((candidate) => candidate.name === 'server') as BuildOptions & { name: string; copy?: string[] };
  // Built with the server entry's plugins: a file in a directory named as each importer requires its left-out module.
  const dir = mkdtempSync(join(tmpdir(), 'vigie-left-out-'));
  const files = LEFT_OUT.map(({ module, importer }) => {
    const file = join(dir, importer, 'uses-it.js');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `const used = require(${JSON.stringify(module)}); module.exports = () => used.anything;`);
    return file;
  });
  const stdin = {
    contents: files.map((file, i) => `exports.use${i} = require(${JSON.stringify(file)});`).join('\n'),
    resolveDir: dir,
    loader: 'js' as const,
  };
  const result = await esbuild.build({
    ...entry,
    entryPoints: undefined,
    stdin,
    outfile: join(dir, 'left-out.cjs'),
    bundle: true,
    absWorkingDir: ROOT,
    write: false,
    logLevel: 'silent',
  });
  const bundle = join(dir, 'left-out.cjs');
  writeFileSync(bundle, result.outputFiles.find((file) => file.path.endsWith('.cjs'))?.text ?? '');
  const loaded = createRequire(import.meta.url)(bundle) as Record<string, () => unknown>;
  LEFT_OUT.forEach(({ module }, i) => {
    expect(() => loaded[`use${i}`]?.(), module).toThrow(`${module} is left out of the Vigie bundle`);
  });
}, 60_000);

it('runs HTTP and TCP checks without loading undici, and keeps no YAML parser', async () => {
  // A preload writes, as the process exits, the builtins and the node_modules files the process loaded.
  const dir = mkdtempSync(join(tmpdir(), 'vigie-loaded-'));
  const preload = join(dir, 'loaded.cjs');
  const report = join(dir, 'loaded.json');
  writeFileSync(
    preload,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(report)}, JSON.stringify({ builtins: process.moduleLoadList, files: Object.keys(require.cache) })));`,
  );
  const target = await startHttpTarget();
  const server = await startServer({
    asService: true,
    nodeArgs: ['--require', preload],
    config: {
      'http-checks': [
        {
          name: 'web',
          target: '127.0.0.1',
          port: target.port,
          protocol: 'http',
          path: '/',
          'valid-status': [200],
          timeout: '1s',
          interval: '1s',
        },
      ],
      'tcp-checks': [{ name: 'tcp', target: '127.0.0.1', port: target.port, timeout: '1s', interval: '1s' }],
    },
  });
  try {
    await expect
      .poll(async () => (await (await server.request('/result/web')).json()) as { success?: boolean }, {
        timeout: 10_000,
      })
      .toMatchObject({ success: true });
    expect(await server.stop()).toBe(0);
  } finally {
    await target.close();
  }
  const loaded = JSON.parse(readFileSync(report, 'utf8')) as { builtins: string[]; files: string[] };
  expect(loaded.builtins).toContain('NativeModule http');
  expect(loaded.files.filter((file) => file.includes('/node_modules/undici/'))).toEqual([]);
  // Nor the YAML parser, which a config load drops (src/config/yaml.ts).
  expect(loaded.files.filter((file) => file.includes('/node_modules/yaml/'))).toEqual([]);
}, 60_000);
