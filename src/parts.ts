/**
 * The parts the service runs, in start order, and the seams between them: the healthcheck part's stream exporter
 * pushes results through the stream part's ingest gateway (its public seam), bound here once that part exists.
 */
import type { PartFactory } from './server/lifecycle.ts';
import { createHealthcheckPart } from './healthcheck/part.ts';
import type { StreamIngest } from './healthcheck/exporters/stream.ts';
import type { ClusterNodeHandle } from './cluster/streams.ts';
import { createFrontendPart } from './frontend/part.ts';
import { createStreamPart } from './stream/part.ts';

export function createPartFactories(): PartFactory[] {
  let streamIngest: StreamIngest | null = null;
  let clusterNode: ClusterNodeHandle | null = null;
  return [
    createHealthcheckPart({
      streamIngest: () => streamIngest,
      onCluster: (node) => {
        clusterNode = node;
      },
    }),
    (context) =>
      createStreamPart(context, {
        onIngest: (gateway) => {
          streamIngest = gateway;
        },
        cluster: () => clusterNode,
      }),
    createFrontendPart,
  ];
}
