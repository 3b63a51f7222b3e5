/**
 * The parts the service runs, in build and start order, and the doors between them (docs/architecture.md); the one
 * place that knows which share of the config each part reads (`withSettings`, src/process/lifecycle.ts):
 * - the cluster part, only with `cluster:`, first: it hands the healthcheck part its `CheckCluster` and the stream
 *   part the placement of its streams on partitions, and is stopped last (the lifecycle stops parts in reverse);
 *   this process is tuned as a cluster node with it (src/process/node-tuning.ts);
 * - the stream part, before the healthcheck part, whose stream exporter pushes results through its ingest (and is
 *   flushed into it at stop);
 * - the healthcheck part, then the dashboard.
 * A single node never loads the cluster's modules (nor the NATS clients).
 */
import type { VigieConfig } from '../config/load.ts';
import { createFrontendPart } from '../frontend/part.ts';
import type { ClusterPart } from '../cluster/part.ts';
import { createHealthcheckPart } from '../healthcheck/part.ts';
import type { StreamIngest } from '../healthcheck/exporters/stream.ts';
import { healthcheckFingerprint } from '../healthcheck/fingerprint.ts';
import { streamFingerprint } from '../stream/fingerprint.ts';
import { createStreamPart } from '../stream/part.ts';
import { type PartFactory, withSettings } from './lifecycle.ts';
import { tuneClusterNode } from './node-tuning.ts';

export function createPartFactories(): PartFactory[] {
  let cluster = null as ClusterPart | null;
  let streamIngest: StreamIngest | null = null;
  return [
    async (context) => {
      const settings = context.settings.cluster;
      if (settings === undefined) return null;
      const { createClusterPart } = await import('../cluster/part.ts');
      return withSettings(
        (config) => ({ cluster: settings, audit: config.http.audit, fingerprints: fingerprintsOf(config) }),
        (partContext) => {
          cluster = createClusterPart(partContext, {
            tuning: (runsPartitions) => tuneClusterNode(partContext.logger, runsPartitions),
          });
          return cluster.part;
        },
      )(context);
    },
    withSettings(
      ({ streams, dataDir, http }) => ({ streams, dataDir, bodyLimit: http.bodyLimit }),
      (context) =>
        createStreamPart(context, {
          onIngest: (gateway) => {
            streamIngest = gateway;
          },
          ...(cluster ? { placement: cluster.placeStreams } : {}),
        }),
    ),
    withSettings(
      ({ file, http, healthchecks, discovery, exporters, notifiers }) => ({
        file,
        http,
        healthchecks,
        discovery,
        exporters,
        notifiers,
      }),
      (context) =>
        createHealthcheckPart({ streamIngest: () => streamIngest, cluster: cluster?.checks ?? null })(context),
    ),
    withSettings(
      ({ http, cluster: clusterSettings }) => ({
        enabled: !http.disableResultApi,
        cluster: clusterSettings !== undefined,
      }),
      createFrontendPart,
    ),
  ];
}

/** What the config hash the cluster's nodes compare is made of (docs/cluster.md, "Config files"). */
function fingerprintsOf(config: VigieConfig) {
  return [
    ['healthchecks', healthcheckFingerprint(config.healthchecks)],
    ['streams', streamFingerprint(config.streams)],
  ] as const;
}
