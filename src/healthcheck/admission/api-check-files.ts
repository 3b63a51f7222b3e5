/**
 * Where the files named by API checks may be (docs/hardening.md, "Files named by checks"). A check's `cacert`,
 * `cert` and `key` are read by the service, as its user: through the API, whoever may create checks would read any
 * file the service can (its database, its keys) into a TLS handshake's error, or name a FIFO or a device. So a
 * check from the API or the cluster's store names files only under `healthchecks.api-files-dir` (unset: none),
 * symbolic links resolved, each a regular file of at most 1 MiB; the run reads it again under the same rules
 * (src/healthcheck/kinds/check-files.ts). The checks of the config file and of discovery sources are the
 * operator's, and may name any file.
 */
import { realpathSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { checkFiles, fileRefusal } from '../kinds/check-files.ts';
import { type CheckDefinition, CheckValidationError } from '../kinds/index.ts';

/** Where a source's checks may name files: anywhere (the operator's sources), or under a directory (null: none). */
export type FilePolicy = 'anywhere' | { under: string | null };

/** Throws a CheckValidationError naming the first field whose file `policy` refuses. */
export function checkFilePolicy(def: CheckDefinition, policy: FilePolicy): void {
  if (policy === 'anywhere') return;
  for (const { field, path } of checkFiles(def)) {
    const problem = apiFileRefusal(path, policy.under, 'an API check');
    if (problem !== null) throw new CheckValidationError(field, problem);
  }
}

const SETTING = 'healthchecks.api-files-dir';

/** Why the API may not name `path` (a check's file, a status page's logo); null when it may. */
export function apiFileRefusal(path: string, dir: string | null, reader: string): string | null {
  if (dir === null) return `${path} cannot be read by ${reader}: ${SETTING} is not set`;
  let root: string;
  try {
    root = realpathSync(dir);
  } catch (error) {
    return `${SETTING} (${dir}) cannot be read: ${(error as Error).message}`;
  }
  const absolute = resolve(path);
  if (!inside(resolve(dir), absolute) && !inside(root, absolute)) return `${path} is outside ${SETTING} (${dir})`;
  let real: string;
  try {
    real = realpathSync(absolute);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT'
      ? `${path}: no such file`
      : `${path}: ${(error as Error).message}`;
  }
  if (!inside(root, real)) return `${path} resolves to ${real}, outside ${SETTING} (${dir})`;
  // stat, not open: a FIFO's open would wait for a writer.
  return fileRefusal(path, statSync(real));
}

/** Whether `path` is strictly below `root` (both absolute and normalised). */
function inside(root: string, path: string): boolean {
  const rest = relative(root, path);
  return rest !== '' && rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest);
}
