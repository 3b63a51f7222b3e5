/**
 * Real full disks for tests: a small tmpfs mounted as a data directory (root on Linux). Tests that need one are
 * skipped where this process may not mount.
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDataDir } from './server.ts';

const mounted: string[] = [];

/** Whether this process may mount a tmpfs (root on Linux). */
export function canMountTmpfs(): boolean {
  const probe = makeDataDir();
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe]);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/** A fresh data directory that is a tmpfs of `size` (mount's syntax: `5m`); unmount with unmountAll(). */
export function tmpfsDataDir(size: string): string {
  const dataDir = makeDataDir();
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dataDir]);
  mounted.push(dataDir);
  return dataDir;
}

/** Fills the file system of `dir` to its last byte with one file, `fill`. */
export function fillDisk(dir: string): void {
  const chunk = Buffer.alloc(1 << 20, 120);
  const file = join(dir, 'fill');
  try {
    for (;;) writeFileSync(file, chunk, { flag: 'a' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  }
  // The last megabyte did not fit: fill what is left byte by byte-ish, halving the chunk each time.
  for (let size = 1 << 19; size >= 1; size >>= 1) {
    try {
      writeFileSync(file, chunk.subarray(0, size), { flag: 'a' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
    }
  }
}

export function unmountAll(): void {
  for (const dir of mounted.splice(0)) execFileSync('umount', [dir]);
}
