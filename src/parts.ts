/**
 * The parts the service runs, in build and start order, and the doors between them (docs/architecture.md):
 * - the cluster part, only with `cluster:`, first: it hands the healthcheck part its `CheckCluster` and the stream
 *   part the placement of its streams on partitions, and is stopped last (the lifecycle stops parts in reverse);
 * - the stream part, before the healthcheck part, whose stream exporter pushes results through its ingest (and is
 *   flushed into it at stop);
 * - the healthcheck part, then the dashboard.
 * A single node never loads the cluster's modules (nor the NATS clients).
 */
import { createFrontendPart } from './frontend/part.ts';
import type { ClusterPart } from './cluster/part.ts';
import { createHealthcheckPart } from './healthcheck/part.ts';
import type { StreamIngest } from './healthcheck/exporters/stream.ts';
import type { PartFactory } from './server/lifecycle.ts';
import { healthcheckFingerprint } from './healthcheck/fingerprint.ts';
import { streamFingerprint } from './stream/fingerprint.ts';
import { createStreamPart } from './stream/part.ts';

export function createPartFactories(): PartFactory[] {
  let cluster = null as ClusterPart | null;
  let streamIngest: StreamIngest | null = null;
  return [
    async (context) => {
      if (context.config.cluster === undefined) return null;
      cluster = (await import('./cluster/part.ts')).createClusterPart(context, {
        fingerprints: (config) => [
          ['healthchecks', healthcheckFingerprint(config.healthchecks)],
          ['streams', streamFingerprint(config.streams)],
        ],
      });
      return cluster.part;
    },
    (context) =>
      createStreamPart(context, {
        onIngest: (gateway) => {
          streamIngest = gateway;
        },
        ...(cluster ? { placement: cluster.placeStreams } : {}),
      }),
    (context) => createHealthcheckPart({ streamIngest: () => streamIngest, cluster: cluster?.checks ?? null })(context),
    createFrontendPart,
  ];
}
