/**
 * Where the files that ship beside the code live (migrations, .proto files). Found from the package root, so
 * the same code works from `src/` (tsx, tests) and from the `dist/` bundle that `npm start` runs.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'migrations'))) return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find the Vigie package root above ${start}`);
  }
}

export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
export const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'migrations');
export const PROTO_DIR = join(PACKAGE_ROOT, 'src/stream/ingest/protos');
