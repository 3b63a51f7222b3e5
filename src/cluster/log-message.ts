/**
 * A message of the cluster's event log (docs/cluster.md, "The event log"): the events of one stream that one node
 * took during one turn of its event loop, every partition's in the same message. Each partition's events are a part
 * of their own, so that a partition's owner decodes its partitions' events and skips the others' bytes:
 *
 *   {"stream":"<name>","encoding":"msgpack","parts":[[<partition>,<bytes>],...]}\n<first part><next part>...
 *
 * The head lists the parts in the order of the bytes after it. A part is one or more MessagePack arrays of events
 * back to back (src/cluster/event-codec.ts). Messages of versions before 2026-11-27 have no `encoding`: each part is
 * a JSON array, still read, since the log may hold them when a cluster is upgraded. One message per stream and turn
 * rather than one per partition: a message costs nats-server and the nodes far more than one of the 16 or so events
 * a push of 1,000 put in each of 64 partitions (docs/performance.md, "Cluster: one message per push").
 *
 * Untrusted (docs/cluster.md, "What a node does with what it reads"): a head that does not decode refuses the whole
 * message; a part whose bytes are not events the HTTP ingest would take (JSON values only, whatever else
 * MessagePack can say) refuses that part only.
 */
import type { Event } from '../stream/event.ts';
import { eventsFromJsonBody } from '../stream/ingest/json.ts';
import type { EventCodec } from './event-codec.ts';

const NEWLINE = 0x0a;
/** A head lists at most `cluster.partitions` (1,024) parts of a few characters each: no lie makes it read further. */
const MAX_HEAD_BYTES = 64 * 1024;
const EMPTY = Buffer.alloc(0);

/** One partition's events in a message: bytes `start` to `end` of it. */
export interface LogPart {
  readonly partition: number;
  readonly start: number;
  readonly end: number;
}

/** How a message's parts are written: MessagePack, or JSON in messages of earlier versions. */
export type LogEncoding = 'msgpack' | 'json';

export interface LogHead {
  readonly stream: string;
  readonly encoding: LogEncoding;
  readonly parts: readonly LogPart[];
}

/** Why a message or a part of it was refused: see `RefusalReason` (src/cluster/refusals.ts). */
export type LogDamage = { readonly reason: 'shape' | 'not_json' | 'not_msgpack' | 'invalid'; readonly problem: string };

/** A message's bytes from the parts gathered for it: per partition, one or more packs of its events. */
export function encodeLogMessage(stream: string, parts: ReadonlyMap<number, readonly Buffer[]>): Buffer {
  const head: [number, number][] = [];
  const buffers: Buffer[] = [EMPTY];
  for (const [partition, packs] of parts) {
    let bytes = 0;
    for (const pack of packs) {
      buffers.push(pack);
      bytes += pack.length;
    }
    head.push([partition, bytes]);
  }
  buffers[0] = Buffer.from(`${JSON.stringify({ stream, encoding: 'msgpack', parts: head })}\n`);
  return Buffer.concat(buffers);
}

/** The head of a message whose stream has `partitions` partitions, or why it is refused. */
export function decodeLogHead(data: Buffer, partitions: number): LogHead | LogDamage {
  const newline = data.subarray(0, MAX_HEAD_BYTES).indexOf(NEWLINE);
  if (newline < 0) return { reason: 'shape', problem: `no head: no newline in its first ${Math.min(data.length, MAX_HEAD_BYTES)} bytes` };
  let head: unknown;
  try {
    head = JSON.parse(data.toString('utf8', 0, newline));
  } catch (error) {
    return { reason: 'not_json', problem: `its head: ${(error as Error).message}` };
  }
  const { stream, encoding = 'json', parts } = (typeof head === 'object' && head !== null ? head : {}) as { stream?: unknown; encoding?: unknown; parts?: unknown };
  if (typeof stream !== 'string' || !Array.isArray(parts)) return { reason: 'shape', problem: 'its head is not {"stream": <name>, "parts": [...]}' };
  if (encoding !== 'msgpack' && encoding !== 'json') return { reason: 'shape', problem: `its head names the encoding ${JSON.stringify(encoding)}: this node reads "msgpack" and "json"` };
  // The least a part holds: an empty array, `[]` in JSON, one byte in MessagePack.
  const least = encoding === 'json' ? 2 : 1;
  const seen = new Set<number>();
  const decoded: LogPart[] = [];
  let start = newline + 1;
  for (const part of parts as unknown[]) {
    const [partition, bytes] = Array.isArray(part) && part.length === 2 ? (part as unknown[]) : [];
    if (!Number.isInteger(partition) || (partition as number) < 0 || (partition as number) >= partitions) {
      return { reason: 'shape', problem: `a part names partition ${JSON.stringify(partition)}: the stream has ${partitions}` };
    }
    if (!Number.isInteger(bytes) || (bytes as number) < least) return { reason: 'shape', problem: `partition ${partition as number}'s part has ${JSON.stringify(bytes)} bytes` };
    if (seen.has(partition as number)) return { reason: 'shape', problem: `partition ${partition as number} has two parts` };
    seen.add(partition as number);
    decoded.push({ partition: partition as number, start, end: start + (bytes as number) });
    start += bytes as number;
  }
  if (start !== data.length) return { reason: 'shape', problem: `its parts add up to ${start - newline - 1} bytes, the message holds ${data.length - newline - 1} after its head` };
  return { stream, encoding, parts: decoded };
}

/** The events of one part, checked as the HTTP ingest checks events, or why they are refused. */
export function eventsOfPart(data: Buffer, encoding: LogEncoding, part: LogPart, eventDepth: number, codec: EventCodec): Event[] | LogDamage {
  let events: unknown;
  if (encoding === 'json') {
    try {
      events = JSON.parse(data.toString('utf8', part.start, part.end));
    } catch (error) {
      return { reason: 'not_json', problem: (error as Error).message };
    }
  } else {
    let packs: unknown[];
    try {
      packs = codec.unpack(data.subarray(part.start, part.end));
    } catch (error) {
      // Bytes cut short, or nested past the stack (a RangeError): either way not what a node writes.
      return { reason: 'not_msgpack', problem: (error as Error).message };
    }
    if (!packs.every(Array.isArray)) return { reason: 'invalid', problem: 'events must be an array of objects' };
    events = packs.length === 1 ? packs[0] : concatPacks(packs as unknown[][]);
  }
  try {
    return eventsFromJsonBody({ events }, eventDepth, undefined, -1, encoding === 'msgpack');
  } catch (error) {
    return { reason: 'invalid', problem: (error as Error).message };
  }
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
  return 'reason' in value;
}
