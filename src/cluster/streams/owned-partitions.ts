/**
 * The stream partitions this node runs (docs/cluster.md, "Streams"): each partition's owner is the rendezvous owner
 * of `<stream>/<partition>` among the live members (src/cluster/streams/partition-owners.ts), and each reassignment
 * starts the partitions this node gained, stops those it lost and refreshes those whose stream changed. The index reads
 * this node answers (src/cluster/streams/stream-queries.ts asks them of every owner and merges) are read from them.
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { EventMatcher, StreamHost } from '../../stream/partition/placement.ts';
import { type OwnedContext, OwnedPartition, partitionKey } from './owned-partition.ts';
import type { PartitionOwnerMap } from './partition-owners.ts';
import { mergeSearches, type SearchAnswer, type StatsAnswer } from './stream-queries.ts';

export class OwnedPartitions {
  private readonly running = new Map<string, OwnedPartition>();
  private readonly owned: Gauge<'stream'>;
  private stopping = false;

  constructor(
    private readonly service: StreamHost,
    registry: Registry,
    private readonly logger: Logger,
  ) {
    this.owned = new Gauge({
      name: 'cluster_partitions_owned',
      help: 'Stream partitions this node runs, by stream.',
      labelNames: ['stream'],
      registers: [registry],
    });
  }

  /** How many stream partitions run here now. */
  get size(): number {
    return this.running.size;
  }

  runsHere(stream: string, partition: number): boolean {
    return this.running.has(partitionKey(stream, partition));
  }

  /** Stops a partition that moved, or whose log or checkpoint says it is no longer this node's to run. */
  drop(partition: OwnedPartition): void {
    if (this.running.get(partition.key) !== partition) return;
    this.running.delete(partition.key);
    void partition.close(false);
  }

  /**
   * Starts the partitions this node now owns (`me`: its place in the member list, -1 when it is not a member), stops
   * those it lost, refreshes those whose stream changed.
   */
  reassign(context: OwnedContext, owners: PartitionOwnerMap, me: number): void {
    if (this.stopping) return;
    const wanted = new Set<string>();
    const counts = new Map<string, number>();
    for (const name of this.service.streamNames()) {
      if (this.service.streamInfo(name) === undefined) continue;
      const ownerOf = owners.of(name) ?? [];
      let mine = 0;
      for (let partition = 0; partition < ownerOf.length; partition++) {
        if (me < 0 || ownerOf[partition] !== me) continue;
        mine++;
        const key = partitionKey(name, partition);
        wanted.add(key);
        const running = this.running.get(key);
        if (running === undefined) this.start(new OwnedPartition(name, partition, context));
        else running.refresh();
      }
      counts.set(name, mine);
    }
    for (const [key, partition] of this.running) {
      if (wanted.has(key)) continue;
      this.running.delete(key);
      void partition.close(false);
      this.logger.info(
        { stream: partition.stream, partition: partition.partition },
        `stream ${partition.stream} partition ${partition.partition} moved to another node`,
      );
    }
    this.owned.reset();
    for (const [name, count] of counts) if (count > 0) this.owned.set({ stream: name }, count);
  }

  private start(partition: OwnedPartition): void {
    this.running.set(partition.key, partition);
    partition.open().catch((error: unknown) => {
      this.drop(partition);
      if (!this.stopping)
        this.logger.error(
          { err: error, stream: partition.stream, partition: partition.partition },
          `stream ${partition.stream} partition ${partition.partition} cannot start here (retried): ${(error as Error).message}`,
        );
    });
  }

  /** The events of `stream` matching `query` in the partitions run here, at most `limit`. */
  search(stream: string, query: EventMatcher, limit: number): SearchAnswer {
    const answers: SearchAnswer[] = [];
    for (const partition of this.running.values())
      if (partition.stream === stream) answers.push(partition.search(query, limit));
    return mergeSearches(answers, limit);
  }

  /** Each stream's index size and current time over the partitions run here. */
  stats(): StatsAnswer {
    const stats: StatsAnswer = {};
    for (const partition of this.running.values()) {
      const index = partition.stats;
      if (index === undefined) continue;
      const seen = stats[partition.stream];
      if (seen === undefined) stats[partition.stream] = { size: index.size, currentTime: index.currentTime };
      else {
        seen.size += index.size;
        seen.currentTime = Math.max(seen.currentTime, index.currentTime);
      }
    }
    return stats;
  }

  /** Stops every partition here, each checkpointed for its next owner; returns how many there were. */
  async stop(): Promise<number> {
    this.stopping = true;
    const partitions = [...this.running.values()];
    this.running.clear();
    await Promise.all(partitions.map((partition) => partition.close(true)));
    return partitions.length;
  }
}
