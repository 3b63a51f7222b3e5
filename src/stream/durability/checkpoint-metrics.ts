/**
 * The metrics of the checkpoint rounds and restores (docs/durability.md, "Checkpoints"), one set per stream service,
 * shared by its partitions: the one of a single node, or each partition a cluster node runs.
 */
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import { RestoreFailures } from './restore-failures.ts';

export class CheckpointMetrics {
  readonly duration: Histogram;
  readonly sliceDuration: Histogram;
  readonly entries: Counter<'operation'>;
  readonly failures: Counter;
  readonly stateRows: Counter;
  readonly restoreFailures: RestoreFailures;

  constructor(registry: Registry, logger: Logger) {
    const registers = [registry];
    this.restoreFailures = new RestoreFailures(registry, logger);
    this.duration = new Histogram({
      name: 'stream_snapshot_duration_seconds',
      help: 'Wall time of a checkpoint round (index snapshots and action states), from its first slice to its commit.',
      buckets: [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60],
      registers,
    });
    this.sliceDuration = new Histogram({
      name: 'stream_snapshot_slice_seconds',
      help: 'Time one slice of a checkpoint round holds the event loop.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers,
    });
    this.entries = new Counter({
      name: 'stream_snapshot_entries_total',
      help: 'Index entries written to (upsert) or removed from (delete) the snapshots.',
      labelNames: ['operation'],
      registers,
    });
    this.failures = new Counter({
      name: 'stream_snapshot_failures_total',
      help: 'Checkpoint rounds that failed: a slice rolled back, or the store did not take the round (logged; the next round writes it again).',
      registers,
    });
    this.stateRows = new Counter({
      name: 'stream_checkpoint_state_rows_total',
      help: 'Rows of action state (one per stateful action, one per changed :by fork) written by checkpoint rounds.',
      registers,
    });
  }
}
