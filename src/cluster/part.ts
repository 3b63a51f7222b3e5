/**
 * The cluster as a part of its own (docs/cluster.md, docs/architecture.md "Parts"), loaded only with `cluster:`:
 * src/process/parts.ts builds it before the parts it serves and the lifecycle stops it after them, so that the streams'
 * partitions are checkpointed and the last results published while this node is still a member and connected.
 * It holds this node's membership (src/cluster/membership/node.ts) and hands each part its door: the healthcheck part a
 * `CheckCluster` (src/healthcheck/cluster-port.ts), the stream part a placement of its streams on partitions
 * (src/stream/partition/placement.ts). Its route is the member list; a reload tells the others the config's new hash.
 */
import { createHash } from 'node:crypto';
import type { AuditSettings } from '../server/settings.ts';
import type { ClusterSettings } from './settings.ts';
import type { CheckCluster } from '../healthcheck/cluster-port.ts';
import { packageVersion } from '../server/openapi.ts';
import type { Part, PartContext } from '../server/part.ts';
import type { LocalChannels, StreamHost, StreamPlacement } from '../stream/partition/placement.ts';
import { ClusterAudit } from './audit-stream.ts';
import { ClusterNode } from './membership/node.ts';
import { clusterRoutes } from './routes.ts';
import { ClusterRuntimeState } from './runtime-state.ts';
import { ClusterStreams } from './streams/streams.ts';

export interface ClusterPart {
  readonly part: Part<ClusterPartSettings>;
  /** The healthcheck part's door. */
  readonly checks: CheckCluster;
  /** The stream part's placement, built with the stream service it serves. */
  placeStreams(host: StreamHost, pubsub: LocalChannels): StreamPlacement;
}

/** A part's name and its own fingerprint of its share of the config (src/healthcheck/fingerprint.ts, ...). */
export type PartFingerprint = readonly [part: string, fingerprint: string];

/** The cluster part's share of the config (src/process/parts.ts). */
export interface ClusterPartSettings {
  /** `cluster:` (fixed at start). */
  readonly cluster: ClusterSettings;
  /** `http.audit`, the bounds of the audit log, which the cluster's audit stream keeps too (fixed at start). */
  readonly audit: AuditSettings;
  /** Each part's fingerprint of its share of the config: what the config hash the nodes compare is made of. */
  readonly fingerprints: readonly PartFingerprint[];
}

/** What the process gives the cluster part (src/process/parts.ts). */
export interface ClusterPartSeams {
  /**
   * The process's tuning of a cluster node's V8 (src/process/node-tuning.ts), told whether stream partitions run
   * on this node; started and stopped with the part.
   */
  tuning(runsPartitions: () => boolean): { start(): void; stop(): void };
}

export function createClusterPart(
  {
    settings: { cluster: settings, audit: auditSettings, fingerprints },
    metrics,
    logger,
    localState,
  }: PartContext<ClusterPartSettings>,
  seams: ClusterPartSeams,
): ClusterPart {
  const log = logger.child({ part: 'cluster' });
  const node = new ClusterNode(settings, configHashOf(fingerprints), packageVersion(), log, metrics.registry);
  const runtimeState = new ClusterRuntimeState(
    localState,
    { maxKeys: settings.maxStateKeys, maxValueBytes: settings.maxStateValueBytes },
    () => node.notJoined(),
    logger.child({ part: 'cluster-state' }),
  );
  node.replicateState(runtimeState);
  const audit = new ClusterAudit({
    node: settings.node,
    settings: auditSettings,
    maxClockSkewMs: settings.maxClockSkewMs,
    registry: metrics.registry,
    logger: logger.child({ part: 'cluster-audit' }),
  });
  node.onJoined((joined) => void audit.start(joined, settings.replicas));
  let streams: ClusterStreams | null = null;
  const tuning = seams.tuning(() => (streams?.partitionsHere ?? 0) > 0);
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
      start: async () => tuning.start(),
      reload: async (next) => node.setConfigHash(configHashOf(next.fingerprints)),
      stop: async () => {
        tuning.stop();
        await audit.stop();
        await node.stop();
      },
    },
  };
}

/** The hash nodes compare: each part's fingerprint of its share of the config, by part (docs/cluster.md, "Config
 *  files"). */
export function configHashOf(fingerprints: readonly PartFingerprint[]): string {
  const parts = [...fingerprints].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);
}
