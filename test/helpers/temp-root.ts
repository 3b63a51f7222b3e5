/**
 * Vitest global setup: every temporary directory a test run makes goes under one directory of its own, removed when
 * the run ends. The suites make hundreds (a data directory per server, certificates, NATS stores) and most do not
 * remove theirs; on a developer's machine they piled up by the gigabyte. Setting TMPDIR before the workers fork moves
 * `os.tmpdir()` for them and for every service, nats-server and openssl they spawn.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'vigie-run-'));
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true });
}
