/**
 * A stream partition this node owns (docs/cluster.md, "Streams"): the stream part's partition
 * (src/stream/partition/partition.ts, opened through `StreamHost.openPartition`) on the cluster's ports: its log is
 * this node's reader of the stream's event log (src/cluster/streams/log-reader.ts), its store the partition's
 * checkpoint in JetStream (src/cluster/streams/partition-checkpoints.ts). Every message of the stream moves the
 * partition's position on, whether it held events of this partition or not, so that a checkpoint covers every message
 * up to its sequence.
 *
 * A partition lost to another node (a member joined) stops at once without a checkpoint: the new owner restores the
 * last one and replays from it (outputs at-least-once); a node that stops cleanly checkpoints first, then leaves.
 */
import type { Event } from '../../stream/event.ts';
import type { LogPosition, LogReader, PartitionLog } from '../../stream/durability/event-log.ts';
import type {
  ChannelPublisher,
  EventMatcher,
  IndexStats,
  PartitionHandle,
  SearchAnswer,
  StreamHost,
} from '../../stream/partition/placement.ts';
import type { FedPartition, StreamLogReaders } from './log-reader.ts';
import { PartitionCheckpoints } from './partition-checkpoints.ts';
import type { MessageRefusals } from '../refusals.ts';
import type { CheckpointBucket } from './stream-checkpoints.ts';
import { streamId } from './stream-log.ts';

/** A partition's key, made once: it is asked for each partition of each batch a node takes
 *  (src/cluster/streams/streams.ts). */
export function partitionKey(stream: string, partition: number): string {
  let keys = partitionKeys.get(stream);
  if (keys === undefined) {
    if (partitionKeys.size >= 1_000) partitionKeys.clear();
    partitionKeys.set(stream, (keys = []));
  }
  return (keys[partition] ??= `${streamId(stream)}.${partition}`);
}
/** Per stream, the keys of its partitions made so far (at most `cluster.partitions` each). */
const partitionKeys = new Map<string, string[]>();

/** What the partitions this node owns share. */
export interface OwnedContext {
  readonly host: StreamHost;
  readonly bucket: CheckpointBucket;
  readonly node: string;
  readonly refusals: MessageRefusals;
  /** This node's readers of the event log: a partition is attached once its checkpoint is restored, detached when
   *  it stops, and tells them what its checkpoints cover. */
  readonly readers: Pick<StreamLogReaders<OwnedPartition>, 'attach' | 'detach' | 'checkpointed'>;
  /** Where the partitions' engines reinject (`reinject!` into a stream another node may run). */
  forward(destination: string, event: Event): void;
  /** Where they publish (`publish!`, index feeds): this node's channels and the cluster's. */
  readonly channels: ChannelPublisher;
  /** A partition another node checkpointed since this one loaded it, or whose log cannot be read: dropped here (and
   *  started again from its checkpoint if this node still owns it). */
  superseded(partition: OwnedPartition): void;
}

export class OwnedPartition implements PartitionLog, FedPartition {
  readonly key: string;
  private readonly handle: PartitionHandle;
  private reader: LogReader | null = null;

  constructor(
    readonly stream: string,
    readonly partition: number,
    private readonly context: OwnedContext,
  ) {
    this.key = partitionKey(stream, partition);
    this.handle = context.host.openPartition(stream, {
      name: `stream ${stream} partition ${partition}`,
      log: this,
      store: new PartitionCheckpoints({
        bucket: context.bucket,
        key: this.key,
        stream,
        partition,
        node: context.node,
        superseded: () => context.superseded(this),
      }),
      forward: (destination, event) => context.forward(destination, event),
      channels: context.channels,
    });
  }

  /** The sequence of the last message of the stream's log this partition applied. */
  get appliedSeq(): number {
    return this.handle.applied.seq;
  }

  /** Restores the partition's checkpoint and takes the log's messages after it. */
  open(): Promise<void> {
    return this.handle.open();
  }

  /** The stream's definition may have changed (recompiled if it did). */
  refresh(): void {
    this.handle.refresh();
  }

  get stats(): IndexStats | undefined {
    return this.handle.stats;
  }

  search(query: EventMatcher, limit: number): SearchAnswer {
    return this.handle.search(query, limit);
  }

  /**
   * Message `seq` of the stream's log: `events` are this partition's in it (none, or refused: the message still
   * counts as applied). An exception of the engine is counted and the partition goes on.
   */
  apply(seq: number, events: Event[] | null): void {
    const reader = this.reader;
    if (reader === null) return;
    const position: LogPosition = { seq, offset: 0 };
    if (events === null) reader.apply(position, this.stream, null);
    else this.context.refusals.guard('events', () => reader.apply(position, this.stream, events));
  }

  follow(_from: LogPosition, reader: LogReader): void {
    this.reader = reader;
    this.context.readers.attach(this);
  }

  stop(): void {
    this.reader = null;
    this.context.readers.detach(this);
  }

  covered(position: LogPosition): void {
    this.context.readers.checkpointed(this, position.seq);
  }

  /**
   * Stops taking messages. `checkpoint`: the node is leaving while it still owns the partition, so the next owner
   * starts from here; otherwise the partition moved and the new owner starts from the last checkpoint.
   */
  close(checkpoint: boolean): Promise<void> {
    return this.handle.close(checkpoint);
  }
}
