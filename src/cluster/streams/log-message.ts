/**
 * A message of the cluster's event log (docs/cluster.md, "The event log"): the events of one stream that one node
 * took during one turn of its event loop, every partition's in the same message, in packs:
 *
 *   {"stream":"<name>","encoding":"msgpack","packs":[[<bytes>,<partition>,<count>,<partition>,<count>...],...]}
 *   \n<pack><pack>...
 *
 * The head lists the packs in the order of the bytes after it. A pack is one MessagePack array of events
 * (src/cluster/streams/event-codec.ts): the events of each partition it names, that many, in the order named. The taker
 * packs together the partitions one node runs, as it sees the members (src/cluster/streams/log-batch.ts), so that each
 * owner decodes one pack of its events a batch, not one per partition: msgpackr compiles a reader for each pack's
 * record, which cost 2.6 µs a pack, more than decoding its 16 events (bench/JOURNAL.md, "Cluster: packs by
 * owner"). A partition whose owner changes meanwhile is still read by its new owner, from its slice of a pack.
 *
 * Earlier heads say `"parts": [[<partition>, <bytes>], ...]` instead: a part is one partition's events, as
 * MessagePack arrays back to back, or as a JSON array in messages of versions before 2026-11-27 (no `encoding`).
 * They are still read, since the log may hold them while a cluster is upgraded. One message per stream and turn
 * rather than one per partition: a message costs nats-server and the nodes far more than one of the 16 or so events
 * a push of 1,000 put in each of 64 partitions (bench/JOURNAL.md, "Cluster: one message per push").
 *
 * Untrusted (docs/cluster.md, "What a node does with what it reads"): a head that does not decode refuses the whole
 * message; a pack whose bytes are not events (src/stream/event.ts: JSON values only, whatever else MessagePack can
 * say, a time stamped), or not as many as its head says, refuses its partitions' events only.
 */
import { type Event, eventsProblem } from '../../stream/event.ts';
import type { EventCodec } from './event-codec.ts';

const NEWLINE = 0x0a;
/** A head lists a few characters per pack and partition; the writer keeps it under MAX_HEAD_WRITTEN (src/cluster/
 *  stream-log.ts), and no lie makes a reader look further than this for its end. */
const MAX_HEAD_BYTES = 64 * 1024;
/** What a writer's head stays under, with room to spare. */
export const MAX_HEAD_WRITTEN = 60 * 1024;
const EMPTY = Buffer.alloc(0);

/** Events of some partitions in a message: bytes `start` to `end` of it, `counts[i]` events of `partitions[i]` in
 *  turn. A part of an earlier head holds one partition's events, however many: its count is -1. */
export interface LogPack {
  readonly start: number;
  readonly end: number;
  readonly partitions: readonly number[];
  readonly counts: readonly number[];
}

/** How a message's packs are written: MessagePack, or JSON in messages of earlier versions. */
export type LogEncoding = 'msgpack' | 'json';

export interface LogHead {
  readonly stream: string;
  readonly encoding: LogEncoding;
  readonly packs: readonly LogPack[];
}

/** A pack as a writer gathers it: its bytes, and `[partition, count, partition, count, ...]` of what it holds. */
export interface WrittenPack {
  readonly pack: Buffer;
  readonly layout: readonly number[];
}

/** Why a message or a part of it was refused: see `RefusalReason` (src/cluster/refusals.ts). */
export type LogDamage = { readonly reason: 'shape' | 'not_json' | 'not_msgpack' | 'invalid'; readonly problem: string };

/** A message's bytes from the packs gathered for it. */
export function encodeLogMessage(stream: string, packs: readonly WrittenPack[]): Buffer {
  const head: number[][] = [];
  const buffers: Buffer[] = [EMPTY];
  for (const { pack, layout } of packs) {
    buffers.push(pack);
    head.push([pack.length, ...layout]);
  }
  buffers[0] = Buffer.from(`${JSON.stringify({ stream, encoding: 'msgpack', packs: head })}\n`);
  return Buffer.concat(buffers);
}

/** The bytes a pack adds to a head, at most: its length, and each partition's number and count, with commas. */
export function headBytesOf(layout: readonly number[]): number {
  return 12 + 8 * layout.length;
}

/** The head of a message whose stream has `partitions` partitions, or why it is refused. */
export function decodeLogHead(data: Buffer, partitions: number): LogHead | LogDamage {
  const newline = data.subarray(0, MAX_HEAD_BYTES).indexOf(NEWLINE);
  if (newline < 0)
    return {
      reason: 'shape',
      problem: `no head: no newline in its first ${Math.min(data.length, MAX_HEAD_BYTES)} bytes`,
    };
  let head: unknown;
  try {
    head = JSON.parse(data.toString('utf8', 0, newline));
  } catch (error) {
    return { reason: 'not_json', problem: `its head: ${(error as Error).message}` };
  }
  const {
    stream,
    encoding = 'json',
    parts,
    packs,
  } = (typeof head === 'object' && head !== null ? head : {}) as {
    stream?: unknown;
    encoding?: unknown;
    parts?: unknown;
    packs?: unknown;
  };
  if (typeof stream !== 'string' || !(Array.isArray(packs) || Array.isArray(parts)))
    return { reason: 'shape', problem: 'its head is not {"stream": <name>, "packs": [...]}' };
  if (encoding !== 'msgpack' && encoding !== 'json')
    return {
      reason: 'shape',
      problem: `its head names the encoding ${JSON.stringify(encoding)}: this node reads "msgpack" and "json"`,
    };
  const decoded = Array.isArray(packs)
    ? packsOf(packs, encoding, partitions, newline + 1)
    : partsOf(parts as unknown[], encoding, partitions, newline + 1);
  if (!Array.isArray(decoded)) return decoded;
  const end = decoded.length === 0 ? newline + 1 : (decoded.at(-1) as LogPack).end;
  if (end !== data.length)
    return {
      reason: 'shape',
      problem: `its packs add up to ${end - newline - 1} bytes, the message holds ${data.length - newline - 1} after its head`,
    };
  return { stream, encoding, packs: decoded };
}

function badPartition(partition: unknown, partitions: number): LogDamage | null {
  return Number.isInteger(partition) && (partition as number) >= 0 && (partition as number) < partitions
    ? null
    : {
        reason: 'shape',
        problem: `its head names partition ${JSON.stringify(partition)}: the stream has ${partitions}`,
      };
}

/** `"packs": [[<bytes>, <partition>, <count>, ...], ...]`. */
function packsOf(packs: unknown[], encoding: LogEncoding, partitions: number, start: number): LogPack[] | LogDamage {
  if (encoding !== 'msgpack')
    return { reason: 'shape', problem: 'its head lists packs of JSON: packs are MessagePack' };
  const decoded: LogPack[] = [];
  for (const entry of packs) {
    if (!Array.isArray(entry) || entry.length < 3 || entry.length % 2 === 0)
      return {
        reason: 'shape',
        problem: `a pack is ${JSON.stringify(entry)?.slice(0, 80)}: not [<bytes>, <partition>, <count>, ...]`,
      };
    const bytes: unknown = entry[0];
    if (!Number.isInteger(bytes) || (bytes as number) < 1)
      return { reason: 'shape', problem: `a pack has ${JSON.stringify(bytes)} bytes` };
    const named: number[] = [];
    const counts: number[] = [];
    for (let i = 1; i < entry.length; i += 2) {
      const [partition, count]: unknown[] = [entry[i], entry[i + 1]];
      const bad = badPartition(partition, partitions);
      if (bad !== null) return bad;
      if (!Number.isInteger(count) || (count as number) < 1)
        return {
          reason: 'shape',
          problem: `partition ${partition as number} has ${JSON.stringify(count)} events in a pack`,
        };
      if (named.includes(partition as number))
        return { reason: 'shape', problem: `partition ${partition as number} is named twice in a pack` };
      named.push(partition as number);
      counts.push(count as number);
    }
    decoded.push({ start, end: start + (bytes as number), partitions: named, counts });
    start += bytes as number;
  }
  return decoded;
}

/** An earlier head's `"parts": [[<partition>, <bytes>], ...]`: each a pack of one partition's events. */
function partsOf(parts: unknown[], encoding: LogEncoding, partitions: number, start: number): LogPack[] | LogDamage {
  // The least a part holds: an empty array, `[]` in JSON, one byte in MessagePack.
  const least = encoding === 'json' ? 2 : 1;
  const seen = new Set<number>();
  const decoded: LogPack[] = [];
  for (const part of parts) {
    const [partition, bytes] = Array.isArray(part) && part.length === 2 ? (part as unknown[]) : [];
    const bad = badPartition(partition, partitions);
    if (bad !== null) return bad;
    if (!Number.isInteger(bytes) || (bytes as number) < least)
      return { reason: 'shape', problem: `partition ${partition as number}'s part has ${JSON.stringify(bytes)} bytes` };
    if (seen.has(partition as number))
      return { reason: 'shape', problem: `partition ${partition as number} has two parts` };
    seen.add(partition as number);
    decoded.push({ start, end: start + (bytes as number), partitions: [partition as number], counts: [-1] });
    start += bytes as number;
  }
  return decoded;
}

/** Every value of a pack, unchecked, in order; as many as its head says (if it says). */
function valuesOfPack(data: Buffer, encoding: LogEncoding, pack: LogPack, codec: EventCodec): unknown[] | LogDamage {
  let values: unknown;
  if (encoding === 'json') {
    try {
      values = JSON.parse(data.toString('utf8', pack.start, pack.end));
    } catch (error) {
      return { reason: 'not_json', problem: (error as Error).message };
    }
    if (!Array.isArray(values)) return { reason: 'invalid', problem: 'events must be an array of objects' };
  } else {
    let arrays: unknown[];
    try {
      arrays = codec.unpack(data.subarray(pack.start, pack.end));
    } catch (error) {
      // Bytes cut short, or nested past the stack (a RangeError): either way not what a node writes.
      return { reason: 'not_msgpack', problem: (error as Error).message };
    }
    if (!arrays.every(Array.isArray)) return { reason: 'invalid', problem: 'events must be an array of objects' };
    values = arrays.length === 1 ? arrays[0] : concatPacks(arrays as unknown[][]);
  }
  const held = (values as unknown[]).length;
  if (pack.counts[0] !== -1) {
    let said = 0;
    for (const count of pack.counts) said += count;
    if (said !== held) return { reason: 'invalid', problem: `its pack holds ${held} events, its head says ${said}` };
  }
  return values as unknown[];
}

/**
 * `values`, checked as events already taken (src/stream/event.ts `eventsProblem`): their time stamped by the
 * input that took them, nothing but JSON values whatever MessagePack can say. The one check of what the log
 * hands a partition; the events are never decoded as an input's body again. Or why they are refused.
 */
function checkedEvents(values: unknown[], encoding: LogEncoding, eventDepth: number): Event[] | LogDamage {
  const problem = eventsProblem(values, { eventDepth, timed: true, fromJson: encoding === 'json' });
  return problem === null ? (values as Event[]) : { reason: 'invalid', problem };
}

/** The events of `partition` in `pack` (of `values`, its values), or null if it names no such partition. */
function sliceOf(pack: LogPack, values: unknown[], partition: number): unknown[] | null {
  let from = 0;
  for (let i = 0; i < pack.partitions.length; i++) {
    const count = pack.counts[i] as number;
    if (pack.partitions[i] === partition) return count === -1 ? values : values.slice(from, from + count);
    from += count;
  }
  return null;
}

/** A partition's events in a message, from each of `packs` that holds some, checked; or why they are refused.
 *  `decoded` keeps each pack's values for the message's other partitions: a pack holds the partitions of one node. */
export function eventsOfPartition(
  data: Buffer,
  encoding: LogEncoding,
  packs: readonly LogPack[],
  partition: number,
  eventDepth: number,
  codec: EventCodec,
  decoded = new Map<LogPack, unknown[] | LogDamage>(),
): Event[] | LogDamage {
  const slices: unknown[][] = [];
  for (const pack of packs) {
    let values = decoded.get(pack);
    if (values === undefined) decoded.set(pack, (values = valuesOfPack(data, encoding, pack, codec)));
    if (isDamage(values)) return values;
    const slice = sliceOf(pack, values, partition);
    if (slice !== null) slices.push(slice);
  }
  return checkedEvents(slices.length === 1 ? (slices[0] as unknown[]) : concatPacks(slices), encoding, eventDepth);
}

/** The values of several packs in one array: `flat()` took several times as long, on every part of a busy turn. */
export function concatPacks<T>(packs: readonly (readonly T[])[]): T[] {
  let length = 0;
  for (let i = 0; i < packs.length; i++) length += (packs[i] as readonly T[]).length;
  const values = new Array<T>(length);
  let at = 0;
  for (let i = 0; i < packs.length; i++) {
    const pack = packs[i] as readonly T[];
    for (let j = 0; j < pack.length; j++) values[at++] = pack[j] as T;
  }
  return values;
}

export function isDamage(value: object): value is LogDamage {
  return !Array.isArray(value) && 'reason' in value;
}
