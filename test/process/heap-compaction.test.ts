/**
 * V8 compacts the old generation at every full collection while the heap is small (src/process/heap-compaction.ts),
 * in a real V8 started with bin/vigie.js's flags: the pages a collection empties are given back, instead of staying
 * committed (and in the RSS) until V8's memory reducer compacts. The child collects dozens of times a second, so its
 * quiet interval is 0, except in the test of that interval.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceNodeFlags } from '../helpers/server.ts';

const CHILD = join(import.meta.dirname, '../fixtures/heap-compaction-child.ts');
const MiB = 1024 * 1024;

interface ChildRun {
  fullCollections: number;
  mostSpareMb: number;
  compacting: boolean;
  spareAfterPauseMb: number | null;
}

function run(
  limitBytes: number,
  {
    quietIntervalMs = 0,
    reloadedBytes,
    pauseMs = 0,
  }: { quietIntervalMs?: number; reloadedBytes?: number; pauseMs?: number } = {},
): ChildRun {
  const limits = [limitBytes, quietIntervalMs, reloadedBytes ?? '-', pauseMs].map(String);
  const child = spawnSync(process.execPath, [...serviceNodeFlags(), '--import', 'tsx', CHILD, ...limits], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout.trim().split('\n').at(-1) as string) as ChildRun;
}

describe('compacting a small heap at every full collection', () => {
  it('gives back the pages a full collection empties while the heap is below the limit', () => {
    const below = run(256 * MiB);
    expect(below.fullCollections).toBeGreaterThan(4);
    expect(below.compacting).toBe(true);
    expect(below.mostSpareMb).toBeLessThan(6);
  });

  it('leaves V8 its own heuristics with a limit of 0, or once the heap is above the limit', () => {
    const never = run(0);
    expect(never.compacting).toBe(false);
    expect(never.mostSpareMb).toBeGreaterThan(12);
    const above = run(1 * MiB);
    expect(above.compacting).toBe(false);
    expect(above.mostSpareMb).toBeGreaterThan(12);
  });

  it('leaves V8 its own heuristics while full collections come closer than the quiet interval', () => {
    const busy = run(256 * MiB, { quietIntervalMs: 60_000 });
    expect(busy.fullCollections).toBeGreaterThan(4);
    expect(busy.compacting).toBe(false);
    expect(busy.mostSpareMb).toBeGreaterThan(12);
  });

  it('compacts the first full collection that comes the quiet interval after the one before, not only the next', () => {
    // Collections seconds apart, then a pause longer than the quiet interval: a small deployment's first quiet
    // collection after its start, or after a burst.
    const paused = run(256 * MiB, { quietIntervalMs: 1_000, pauseMs: 1_500 });
    expect(paused.spareAfterPauseMb).not.toBeNull();
    expect(paused.spareAfterPauseMb).toBeLessThan(6);
    // Without the pause that collection keeps its pages, as the ones before it did.
    const busy = run(256 * MiB, { quietIntervalMs: 1_000 });
    expect(busy.mostSpareMb).toBeGreaterThan(12);
  });

  it('follows a reloaded limit from the next full collection on', () => {
    const stopped = run(256 * MiB, { reloadedBytes: 0 });
    expect(stopped.compacting).toBe(false);
    expect(stopped.mostSpareMb).toBeGreaterThan(12);
    const started = run(0, { reloadedBytes: 256 * MiB });
    expect(started.compacting).toBe(true);
    expect(started.mostSpareMb).toBeLessThan(6);
  });
});
