/**
 * A cluster node's V8 tuning, applied from the config at startup: every node starts with bin/vigie.js, whose first
 * line's flags are a single node's (docs/performance.md, "The launcher's flags"), and a node with `cluster:` changes
 * at run time what V8 lets it change (docs/cluster.md, "Running a node").
 *
 * - `--heap-growing-percent`: V8 sizes a cluster node's old generation with its own heuristics (bench/JOURNAL.md,
 *   "Cluster: V8's heap growth"). The launcher's 20 keeps a small single node's RSS near its steady value; on a
 *   cluster node taking events it made V8's helper threads mark four to five times as much per event. A value the
 *   operator gave on the command line is kept.
 * - `--no-sparkplug`, which the cluster's own launcher (bin/vigie-cluster.js, gone) gave its nodes. V8 reads it each
 *   time a function would tier up to the baseline compiler.
 * - The young generation: V8 fixes its smallest and largest sizes when the process starts (set at run time they do
 *   nothing, measured on Node 20), so a node keeps the launcher's 8 MB a semi-space at most. A node started with room
 *   to grow (`node --min-semi-space-size=8 --max-semi-space-size=32 bin/vigie.js serve`, 9 % less CPU an event under
 *   event load, bench/JOURNAL.md "Cluster: a node's young generation") grows past 8 MB only while stream partitions
 *   run on it (src/process/young-generation.ts).
 */
import { setFlagsFromString } from 'node:v8';
import type { Logger } from 'pino';
import { YoungGeneration } from './young-generation.ts';

/** The `--heap-growing-percent` bin/vigie.js starts every service with. */
const SERVICE_HEAP_GROWING_PERCENT = '20';

/** The young generation a node needs room for to grow it while partitions run, in MB a semi-space. */
const CLUSTER_SEMI_SPACE_MB = 32;

export interface NodeTuning {
  start(): void;
  stop(): void;
}

/** Tunes this process as a cluster node; `runsPartitions` says whether stream partitions run on it now. */
export function tuneClusterNode(log: Logger, runsPartitions: () => boolean): NodeTuning {
  if (nodeFlag('heap-growing-percent') === SERVICE_HEAP_GROWING_PERCENT) setFlagsFromString('--heap-growing-percent=0');
  setFlagsFromString('--no-sparkplug');
  const youngGeneration = youngGenerationOf(log, runsPartitions);
  return {
    start: () => youngGeneration?.start(),
    stop: () => youngGeneration?.stop(),
  };
}

/** The value of `--<name>=` this process was started with (the last one given, as V8 reads them), if any. */
function nodeFlag(name: string): string | undefined {
  const prefix = `--${name}=`;
  return process.execArgv.findLast((flag) => flag.startsWith(prefix))?.slice(prefix.length);
}

/**
 * With room for 32 MB a semi-space, the young generation is held where it is (`--semi-space-growth-factor=1`) and
 * let grow only while partitions run. With the launcher's 8 MB, V8 grows it up to 8 as on a single node, and the
 * node says how to give it room. Without the flag (V8's own sizes), it is left alone.
 */
function youngGenerationOf(log: Logger, roomNeeded: () => boolean): YoungGeneration | null {
  const given = nodeFlag('max-semi-space-size');
  if (given === undefined) return null;
  const mb = Number(given);
  if (mb >= CLUSTER_SEMI_SPACE_MB) {
    setFlagsFromString('--semi-space-growth-factor=1');
    return new YoungGeneration(roomNeeded);
  }
  const room = `--min-semi-space-size=8 --max-semi-space-size=${CLUSTER_SEMI_SPACE_MB}`;
  log.info(
    { maxSemiSpaceMb: mb },
    `this cluster node's young generation grows up to ${mb} MB a semi-space (--max-semi-space-size=${mb}): ` +
      `under event load a node started with room for ${CLUSTER_SEMI_SPACE_MB} spends less CPU an event: ` +
      `node ${room} bin/vigie.js serve (docs/cluster.md, "Running a node")`,
  );
  return null;
}
