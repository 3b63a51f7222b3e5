/**
 * An engine as the one partition of a single node (src/stream/partition/partition.ts), for the tests of what feeds it
 * (the ingest gateway, submitOrRefuse): no log to follow and no store to checkpoint to.
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import { CheckpointMetrics } from '../../src/stream/durability/checkpoint-metrics.ts';
import type { CheckpointStore } from '../../src/stream/durability/checkpoint-store.ts';
import type { StreamEngine } from '../../src/stream/engine/engine.ts';
import { StreamPartition } from '../../src/stream/partition/partition.ts';

const unused = (): never => {
  throw new Error('this partition has no checkpoint store');
};

export function partitionOf(engine: StreamEngine): StreamPartition {
  const logger = pino({ level: 'silent' });
  return new StreamPartition({
    engine,
    log: { follow: () => undefined, stop: () => undefined, covered: () => undefined },
    store: {
      whole: false,
      load: unused,
      begin: unused,
      indexStreams: unused,
      dropIndex: unused,
      slice: unused,
      committed: unused,
      pace: unused,
      close: async () => undefined,
    } satisfies CheckpointStore,
    metrics: new CheckpointMetrics(new Registry(), logger),
    logger,
  });
}
