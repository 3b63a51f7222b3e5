/**
 * A cluster node's young generation (src/process/young-generation.ts, src/process/node-tuning.ts), in a real V8
 * started with bin/vigie.js's flags: with the room docs/cluster.md advises, it grows past the single node's 8 MB only
 * while stream partitions run on the node; without it, V8 holds it to the launcher's 8 MB whatever the node does
 * (its bounds are fixed at start: the service cannot widen them).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLUSTER_YOUNG_GENERATION, serviceNodeFlags } from '../helpers/server.ts';

const CHILD = join(import.meta.dirname, '../fixtures/young-generation-child.ts');

function capacityMb(mode: 'partitions' | 'checks-only', room: readonly string[] = CLUSTER_YOUNG_GENERATION): number {
  const run = spawnSync(process.execPath, [...serviceNodeFlags(), ...room, '--import', 'tsx', CHILD, mode], {
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

  it("keeps to bin/vigie.js's 8 MB on a node started without the room", () => {
    expect(capacityMb('partitions', [])).toBeLessThanOrEqual(8);
  });
});
