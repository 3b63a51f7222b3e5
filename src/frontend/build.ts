/**
 * Builds the dashboard (src/frontend/app/) into dist/frontend/ with esbuild: one minified script, one
 * stylesheet (uPlot's included), and index.html. Each file is written aside and renamed over the old one, so
 * a server starting meanwhile (parallel test workers build too) never reads half a file.
 * `npm run build` runs this file; the e2e helper calls `buildFrontend()`.
 */
import { copyFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { FRONTEND_DIST, FRONTEND_SOURCE } from './paths.ts';

export function buildFrontend(outDir: string = FRONTEND_DIST): string {
  mkdirSync(outDir, { recursive: true });
  const result = buildSync({
    entryPoints: { app: join(FRONTEND_SOURCE, 'main.tsx') },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: outDir,
    write: false,
    logLevel: 'warning',
    legalComments: 'none',
  });
  const suffix = `.${process.pid}.tmp`;
  for (const file of result.outputFiles) {
    writeFileSync(file.path + suffix, file.contents);
    renameSync(file.path + suffix, file.path);
  }
  const index = join(outDir, 'index.html');
  copyFileSync(join(FRONTEND_SOURCE, 'index.html'), index + suffix);
  renameSync(index + suffix, index);
  return outDir;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(`dashboard built in ${basename(buildFrontend())}/`);
}
