/**
 * The partitions of single streams that a cluster node runs (docs/cluster.md, "Streams"): each is a partition
 * (src/stream/partition/partition.ts) whose engine holds that stream alone (its own state and index) with the service's
 * outputs, queues, caps and metrics, fed by the cluster's event log and checkpointed to the cluster's store, the
 * ports its owner hands it (src/stream/partition/placement.ts `PartitionPorts`). The service opens them for its
 * placement (`StreamHost.openPartition`) and keeps them, so that a reload reaches each one.
 */
import type { Logger } from 'pino';
import type { CheckpointMetrics } from '../durability/checkpoint-metrics.ts';
import type { EdnMap } from '../lang/edn.ts';
import { StreamEngine, type StreamInfo } from '../engine/engine.ts';
import type { Emission, Event } from '../event.ts';
import type { LogPosition } from '../durability/event-log.ts';
import { indexFeed } from '../pubsub/channels.ts';
import { StreamPartition } from './partition.ts';
import type { EventMatcher, IndexStats, PartitionHandle, PartitionPorts, SearchAnswer } from './placement.ts';

export interface StreamPartitionsOptions {
  /** The service's engine options: its outputs, queues, caps, metrics and nesting limits. */
  engineOptions: ConstructorParameters<typeof StreamEngine>[0] & object;
  /** A running stream's definition, as the service's catalog holds it now. */
  streamInfo: (name: string) => StreamInfo | undefined;
  metrics: CheckpointMetrics;
  logger: Logger;
  /** `streams.snapshot-interval`, read when a partition starts. */
  intervalMs: () => number;
}

export class StreamPartitions {
  private readonly open = new Set<OneStream>();

  constructor(private readonly options: StreamPartitionsOptions) {}

  /** A partition of `stream`, not started yet (`open()`). */
  partition(stream: string, ports: PartitionPorts): PartitionHandle {
    const { engineOptions, metrics, logger, intervalMs, streamInfo } = this.options;
    const publish = (channel: string, emission: Emission) => ports.channels.publish(channel, emission);
    const engine = new StreamEngine({
      ...engineOptions,
      forward: (destination, event) => ports.forward(destination, event),
      pubsub: {
        publish,
        indexListener: (name, isDefault) => indexFeed(publish, name, isDefault),
      },
    });
    const partition = new StreamPartition({
      engine,
      log: ports.log,
      store: ports.store,
      metrics,
      logger,
      name: ports.name,
    });
    const handle: OneStream = new OneStream(stream, engine, partition, {
      streamInfo,
      intervalMs,
      closed: () => this.open.delete(handle),
    });
    this.open.add(handle);
    return handle;
  }

  /** `streams.snapshot-interval` changed: every partition's rounds start again on the new one. */
  restartRounds(intervalMs: number): void {
    for (const handle of this.open) handle.restartRounds(intervalMs);
  }
}

class OneStream implements PartitionHandle {
  private config: EdnMap | null = null;
  private opened = false;

  constructor(
    private readonly stream: string,
    private readonly engine: StreamEngine,
    private readonly partition: StreamPartition,
    private readonly context: {
      readonly streamInfo: (name: string) => StreamInfo | undefined;
      readonly intervalMs: () => number;
      closed(): void;
    },
  ) {}

  get applied(): LogPosition {
    return this.partition.applied;
  }

  async open(): Promise<void> {
    const info = this.context.streamInfo(this.stream);
    if (info === undefined) throw new Error(`stream ${this.stream} is not defined here`);
    this.config = info.config;
    this.engine.add(this.stream, info.config);
    await this.partition.open();
    this.partition.start(this.context.intervalMs());
    this.opened = true;
  }

  apply(position: LogPosition | null, target: string, events: readonly Event[] | null) {
    return this.partition.apply(position, target, events);
  }

  refresh(): void {
    const info = this.context.streamInfo(this.stream);
    if (info === undefined || this.config === null || info.config === this.config) return;
    this.config = info.config;
    this.engine.add(this.stream, info.config, { keepStateIfUnchanged: true });
  }

  search(query: EventMatcher, limit: number): SearchAnswer {
    return this.engine.index(this.stream)?.search(query, limit) ?? { events: [], truncated: false };
  }

  get stats(): IndexStats | undefined {
    const index = this.engine.index(this.stream);
    return index === undefined ? undefined : { size: index.size, currentTime: index.currentTime };
  }

  restartRounds(intervalMs: number): void {
    // Before its checkpoint is restored, a round would write an empty one over it.
    if (this.opened) this.partition.start(intervalMs);
  }

  async close(checkpoint: boolean): Promise<void> {
    this.context.closed();
    await this.partition.close(checkpoint);
  }
}
