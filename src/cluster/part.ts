/**
 * The cluster as a part of its own (docs/cluster.md, docs/architecture.md "Parts"), loaded only with `cluster:`:
 * src/parts.ts builds it before the parts it serves and the lifecycle stops it after them, so that the streams'
 * partitions are checkpointed and the last results published while this node is still a member and connected.
 * It holds this node's membership (src/cluster/membership/node.ts) and hands each part its door: the healthcheck part a
 * `CheckCluster` (src/healthcheck/cluster-port.ts), the stream part a placement of its streams on partitions
 * (src/stream/partition/placement.ts). Its route is the member list; a reload tells the others the config's new hash.
 */
import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import type { Logger } from 'pino';
import type { VigieConfig } from '../config/load.ts';
import type { CheckCluster } from '../healthcheck/cluster-port.ts';
import type { PartFactoryContext } from '../server/lifecycle.ts';
import { packageVersion } from '../server/openapi.ts';
import type { Part } from '../server/part.ts';
import type { LocalChannels, StreamHost, StreamPlacement } from '../stream/partition/placement.ts';
import { ClusterAudit } from './audit-stream.ts';
import { ClusterNode } from './membership/node.ts';
import { clusterRoutes } from './routes.ts';
import { ClusterRuntimeState } from './runtime-state.ts';
import { ClusterStreams } from './streams/streams.ts';
import { YoungGeneration } from './young-generation.ts';

export interface ClusterPart {
  readonly part: Part;
  /** The healthcheck part's door. */
  readonly checks: CheckCluster;
  /** The stream part's placement, built with the stream service it serves. */
  placeStreams(host: StreamHost, pubsub: LocalChannels): StreamPlacement;
}

/** A part's name and its own fingerprint of its share of the config (src/healthcheck/fingerprint.ts, ...). */
export type PartFingerprint = readonly [part: string, fingerprint: string];

/** What the other parts give the cluster part (src/parts.ts). */
export interface ClusterPartSeams {
  /** Each part's fingerprint of `config`: what the config hash is made of. */
  fingerprints(config: VigieConfig): readonly PartFingerprint[];
}

export function createClusterPart(
  { config, metrics, logger, localState }: PartFactoryContext,
  seams: ClusterPartSeams,
): ClusterPart {
  if (config.cluster === undefined) throw new Error('the cluster part needs the cluster: section');
  const settings = config.cluster;
  const log = logger.child({ part: 'cluster' });
  growHeapAsV8Does();
  const hashOf = (of: VigieConfig) => configHashOf(seams.fingerprints(of));
  const node = new ClusterNode(settings, hashOf(config), packageVersion(), log, metrics.registry);
  const runtimeState = new ClusterRuntimeState(
    localState,
    { maxKeys: settings.maxStateKeys, maxValueBytes: settings.maxStateValueBytes },
    () => node.notJoined(),
    logger.child({ part: 'cluster-state' }),
  );
  node.replicateState(runtimeState);
  const audit = new ClusterAudit({
    node: settings.node,
    settings: config.http.audit,
    maxClockSkewMs: settings.maxClockSkewMs,
    registry: metrics.registry,
    logger: logger.child({ part: 'cluster-audit' }),
  });
  node.onJoined((joined) => void audit.start(joined, settings.replicas));
  let streams: ClusterStreams | null = null;
  const youngGeneration = youngGenerationOf(log, () => (streams?.partitionsHere ?? 0) > 0);
  return {
    checks: node,
    placeStreams: (host, pubsub) => {
      const placed = new ClusterStreams({
        settings,
        service: host,
        node,
        pubsub,
        registry: metrics.registry,
        logger: logger.child({ part: 'cluster-streams' }),
      });
      node.addStore((detailed) => placed.unwritable(detailed));
      streams = placed;
      return placed;
    },
    part: {
      name: 'cluster',
      runtimeState,
      audit,
      notReady: () => node.notReady(),
      routes: async (app) => {
        await app.register(clusterRoutes(node));
      },
      // The node joins once the healthcheck part serves it its checks (CheckCluster.serve), in the background.
      start: async () => youngGeneration?.start(),
      reload: async (next) => node.setConfigHash(hashOf(next)),
      stop: async () => {
        youngGeneration?.stop();
        await audit.stop();
        await node.stop();
      },
    },
  };
}

/** The `--heap-growing-percent` bin/vigie.js starts every service with. */
const SERVICE_HEAP_GROWING_PERCENT = '20';

/**
 * A cluster node lets V8 size its old generation with its own heuristics (bench/JOURNAL.md, "Cluster: V8's heap
 * growth"). bin/vigie.js starts every service with `--heap-growing-percent=20`, which keeps a small single node's
 * RSS near its steady value; on a cluster node taking events it made V8's helper threads mark four to five times
 * as much per event as without it. A value the operator gave on the command line is kept.
 */
function growHeapAsV8Does(): void {
  if (nodeFlag('heap-growing-percent') === SERVICE_HEAP_GROWING_PERCENT) setFlagsFromString('--heap-growing-percent=0');
}

/** The value of `--<name>=` this process was started with (the last one given, as V8 reads them), if any. */
function nodeFlag(name: string): string | undefined {
  const prefix = `--${name}=`;
  return process.execArgv.findLast((flag) => flag.startsWith(prefix))?.slice(prefix.length);
}

/** The young generation bin/vigie-cluster.js gives a cluster node, in MB a semi-space. */
const CLUSTER_SEMI_SPACE_MB = 32;

/**
 * Started by bin/vigie-cluster.js (room for 32 MB), a node lets its young generation grow past 8 MB only while
 * stream partitions run on it (src/cluster/young-generation.ts). Started as a single node is (bin/vigie.js,
 * `--max-semi-space-size=8`), it runs, but spends about 9 % more CPU an event under event load (bench/JOURNAL.md,
 * "Cluster: a node's young generation"); V8 sizes its young generation at start only, so this is said, not changed,
 * and V8 grows it as on a single node. Without the flag (V8's own sizes), it is left alone.
 */
function youngGenerationOf(log: Logger, roomNeeded: () => boolean): YoungGeneration | null {
  const given = nodeFlag('max-semi-space-size');
  if (given === undefined) return null;
  const mb = Number(given);
  if (mb >= CLUSTER_SEMI_SPACE_MB) return new YoungGeneration(roomNeeded);
  log.info(
    { maxSemiSpaceMb: mb },
    `this cluster node started with --max-semi-space-size=${mb}: start cluster nodes with bin/vigie-cluster.js (npm run start:cluster), whose ${CLUSTER_SEMI_SPACE_MB} MB young generation costs a node under event load less CPU (docs/cluster.md)`,
  );
  return null;
}

/** The hash nodes compare: each part's fingerprint of its share of the config, by part (docs/cluster.md, "Config
 *  files"). */
export function configHashOf(fingerprints: readonly PartFingerprint[]): string {
  const parts = [...fingerprints].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);
}
