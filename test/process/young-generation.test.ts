/**
 * A cluster node's young generation (src/process/young-generation.ts), in a real V8 started with the flags of
 * bin/vigie-cluster.js: it grows past the single node's 8 MB only while stream partitions run on the node.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceNodeFlags } from '../helpers/server.ts';

const CHILD = join(import.meta.dirname, '../fixtures/young-generation-child.ts');

function capacityMb(mode: 'partitions' | 'checks-only'): number {
  const run = spawnSync(process.execPath, [...serviceNodeFlags('cluster'), '--import', 'tsx', CHILD, mode], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(run.status, run.stderr).toBe(0);
  return (JSON.parse(run.stdout.trim().split('\n').at(-1) as string) as { capacityMb: number }).capacityMb;
}

describe("a cluster node's young generation", () => {
  it('stays at 8 MB a semi-space on a node without partitions, and grows towards 32 on one with', () => {
    const held = capacityMb('checks-only');
    expect(held).toBeGreaterThan(6);
    expect(held).toBeLessThanOrEqual(8);
    expect(capacityMb('partitions')).toBeGreaterThan(16);
  });
});
