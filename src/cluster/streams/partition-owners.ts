/**
 * Which node runs each partition of a stream, as this node sees the members: which partitions this node starts
 * (src/cluster/streams/streams.ts), and what the taker of a batch packs together (src/cluster/streams/log-batch.ts), so
 * that each owner decodes one pack of the batch. Computed once per stream and member list (a rendezvous hash per
 * partition), and again after each reassignment round, which sees the streams' changes (a partition count that
 * changed).
 */
import { ownerOf, type RankedMember } from '../membership/rendezvous.ts';

export class PartitionOwnerMap {
  private readonly byStream = new Map<string, number[]>();
  private ranking: readonly RankedMember[] | null = null;

  constructor(
    private readonly members: () => readonly RankedMember[] | undefined,
    private readonly partitionCount: (stream: string) => number,
  ) {}

  /** Per partition, the index of its owner in the member list (-1: none); null without members. */
  of(stream: string): readonly number[] | null {
    const ranking = this.members();
    if (ranking === undefined || ranking.length === 0) return null;
    if (ranking !== this.ranking) this.reset(ranking);
    let owners = this.byStream.get(stream);
    if (owners === undefined) {
      const count = this.partitionCount(stream);
      owners = new Array<number>(count);
      for (let partition = 0; partition < count; partition++) {
        const owner = ownerOf(`${stream}/${partition}`, ranking);
        owners[partition] = ranking.findIndex((member) => member.name === owner);
      }
      this.byStream.set(stream, owners);
    }
    return owners;
  }

  /** Forgets every stream's owners: the members or the streams changed. */
  reset(ranking: readonly RankedMember[] | null = null): void {
    this.byStream.clear();
    this.ranking = ranking;
  }
}
