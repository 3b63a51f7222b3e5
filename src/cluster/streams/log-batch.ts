/**
 * A batch of events as the cluster's event log carries it (docs/cluster.md, "The event log"): split by partition
 * (`partitionOf`, the same on every node) and each partition's events packed (src/cluster/streams/event-codec.ts), in
 * packs a message can hold. src/cluster/streams/stream-log.ts gathers the packs of a turn into messages.
 */
import type { Event } from '../../stream/event.ts';
import type { StreamHost } from '../../stream/partition/placement.ts';
import type { EventCodec } from './event-codec.ts';

/** Under NATS' default max_payload (1 MiB), with room for the message's head. */
export const MAX_MESSAGE_BYTES = 900 * 1024;

/**
 * The partition of an event: FNV-1a of the `:partition-by` fields' values, modulo the partition count. Every node
 * computes the same one, so the events of one host (say) always meet in the same partition.
 */
export function partitionOf(event: Event, fields: readonly string[], partitions: number): number {
  let hash = 0x811c9dc5;
  for (let f = 0; f < fields.length; f++) {
    const value = event[fields[f] as string];
    const text = value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
    for (let i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    // A separator, so that ("ab", "c") and ("a", "bc") differ.
    hash ^= 0x1e;
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % partitions;
}

/** A stream as the log needs it: where its events go. */
export interface LogTarget {
  readonly name: string;
  readonly partitionBy: readonly string[] | null;
}

/** The streams a push to `target` reaches: the stream, or for `default` every `:default true` stream. */
export function logTargets(service: StreamHost, target: string): LogTarget[] | null {
  if (target !== 'default') {
    const info = service.streamInfo(target);
    return info === undefined ? null : [{ name: target, partitionBy: info.partitionBy }];
  }
  const targets: LogTarget[] = [];
  for (const name of service.streamNames()) {
    const info = service.streamInfo(name);
    if (info?.isDefault) targets.push({ name, partitionBy: info.partitionBy });
  }
  return targets;
}

/** Events of one batch, packed: `layout` says whose, `[partition, count, ...]` in the order they are packed. */
export interface EncodedPack {
  readonly stream: string;
  readonly pack: Buffer;
  readonly layout: readonly number[];
  readonly count: number;
  /** The events packed, per partition, of the partitions that run here. */
  readonly kept: readonly (readonly [number, readonly Event[]])[] | null;
}

/** An event that no message can hold (it alone encodes to more than MAX_MESSAGE_BYTES). */
export class EventTooLarge extends Error {
  constructor(
    readonly event: Event,
    readonly bytes: number,
  ) {
    super('an event larger than a message of the event log');
  }
}

/** Which partitions' events a batch keeps beside their packs: those of a stream that run here. */
export type KeepEvents = ((stream: string, partition: number) => boolean) | null;

/** For a stream, which node runs each partition, as a small number per partition (the same number, the same node),
 *  as this node sees the members; null when it cannot tell. */
export type PartitionOwners = (stream: string) => readonly number[] | null;

/** One partition's events of one batch in packs a message can hold: halved until each is at most MAX_MESSAGE_BYTES. */
function encodePartition(
  codec: EventCodec,
  stream: string,
  partition: number,
  events: readonly Event[],
  keep: boolean,
  into: EncodedPack[],
): void {
  const pack = codec.pack(events);
  if (pack.length <= MAX_MESSAGE_BYTES) {
    into.push({
      stream,
      pack,
      layout: [partition, events.length],
      count: events.length,
      kept: keep ? [[partition, events]] : null,
    });
    return;
  }
  if (events.length === 1) throw new EventTooLarge(events[0] as Event, pack.length);
  const half = Math.ceil(events.length / 2);
  encodePartition(codec, stream, partition, events.slice(0, half), keep, into);
  encodePartition(codec, stream, partition, events.slice(half), keep, into);
}

/** The events of several partitions of one owner in one pack, or, if it would not fit a message, a pack (or more)
 *  each. */
function encodeOwner(
  codec: EventCodec,
  stream: string,
  partitions: readonly number[],
  groups: readonly (Event[] | undefined)[],
  keep: KeepEvents,
  into: EncodedPack[],
): void {
  if (partitions.length > 1) {
    const events: Event[] = [];
    const layout: number[] = [];
    let kept: [number, Event[]][] | null = null;
    for (const partition of partitions) {
      const group = groups[partition] as Event[];
      for (let i = 0; i < group.length; i++) events.push(group[i] as Event);
      layout.push(partition, group.length);
      if (keep?.(stream, partition)) (kept ??= []).push([partition, group]);
    }
    const pack = codec.pack(events);
    if (pack.length <= MAX_MESSAGE_BYTES) {
      into.push({ stream, pack, layout, count: events.length, kept });
      return;
    }
  }
  for (const partition of partitions)
    encodePartition(codec, stream, partition, groups[partition] as Event[], keep?.(stream, partition) ?? false, into);
}

/** A stream's share of a batch, split by partition, and the partitions of each owner packed together (bench/
 *  cluster-codec.ts measures it). Throws EventTooLarge for an event no message can hold. */
export function encodeBatch(
  codec: EventCodec,
  stream: LogTarget,
  events: readonly Event[],
  partitions: number,
  into: EncodedPack[],
  keep: KeepEvents = null,
  owners: PartitionOwners | null = null,
): void {
  const fields = stream.partitionBy;
  if (fields === null) {
    encodePartition(codec, stream.name, 0, events, keep !== null && keep(stream.name, 0), into);
    return;
  }
  // Indexed by partition (at most cluster.partitions), in the order partitions first appear.
  const groups: (Event[] | undefined)[] = [];
  const order: number[] = [];
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as Event;
    const partition = partitionOf(event, fields, partitions);
    const group = groups[partition];
    if (group === undefined) {
      groups[partition] = [event];
      order.push(partition);
    } else group.push(event);
  }
  const owner = owners?.(stream.name) ?? null;
  if (owner === null || owner.length !== partitions) {
    for (const partition of order)
      encodePartition(
        codec,
        stream.name,
        partition,
        groups[partition] as Event[],
        keep !== null && keep(stream.name, partition),
        into,
      );
    return;
  }
  // Per owner, its partitions in the order they first appear.
  const byOwner = new Map<number, number[]>();
  for (const partition of order) {
    const key = owner[partition] as number;
    const mine = byOwner.get(key);
    if (mine === undefined) byOwner.set(key, [partition]);
    else mine.push(partition);
  }
  for (const mine of byOwner.values()) encodeOwner(codec, stream.name, mine, groups, keep, into);
}
