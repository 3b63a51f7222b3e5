/**
 * A message of the cluster's event log (docs/cluster.md, "The event log"): the events of one stream that one node
 * took during one turn of its event loop, every partition's in the same message. Each partition's events are a JSON
 * array of their own, so that a partition's owner parses its partitions' events and skips the others' bytes:
 *
 *   {"stream":"<name>","parts":[[<partition>,<bytes>],...]}\n[<events of the first part>][<events of the next>]...
 *
 * The head lists the parts in the order of the bytes after it. One message per stream and turn rather than one
 * per partition: a message costs nats-server and the nodes far more than one of the 16 or so events a push of
 * 1,000 put in each of 64 partitions (docs/performance.md, "Cluster: one message per push").
 *
 * Untrusted (docs/cluster.md, "What a node does with what it reads"): a head that does not decode refuses the whole
 * message; a part whose bytes are not a JSON array of events the HTTP ingest would take refuses that part only.
 */
import type { Event } from '../stream/event.ts';
import { eventsFromJsonBody } from '../stream/ingest/json.ts';

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

export interface LogHead {
  readonly stream: string;
  readonly parts: readonly LogPart[];
}

/** Why a message or a part of it was refused: see `RefusalReason` (src/cluster/refusals.ts). */
export type LogDamage = { readonly reason: 'shape' | 'not_json' | 'invalid'; readonly problem: string };

/**
 * A message's bytes from the parts gathered for it, each the inside of a JSON array (events joined by commas).
 * Each part is encoded on its own and the buffers joined: building one string of the whole message and measuring
 * its parts' UTF-8 lengths took 1 ms for a message of 1,700 events, against 0.18 ms.
 */
export function encodeLogMessage(stream: string, parts: ReadonlyMap<number, readonly string[]>): Buffer {
  const head: [number, number][] = [];
  const buffers: Buffer[] = [EMPTY];
  for (const [partition, pieces] of parts) {
    const bytes = Buffer.from(pieces.length === 1 ? `[${pieces[0] as string}]` : `[${pieces.join(',')}]`);
    head.push([partition, bytes.length]);
    buffers.push(bytes);
  }
  buffers[0] = Buffer.from(`${JSON.stringify({ stream, parts: head })}\n`);
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
  const { stream, parts } = (typeof head === 'object' && head !== null ? head : {}) as { stream?: unknown; parts?: unknown };
  if (typeof stream !== 'string' || !Array.isArray(parts)) return { reason: 'shape', problem: 'its head is not {"stream": <name>, "parts": [...]}' };
  const seen = new Set<number>();
  const decoded: LogPart[] = [];
  let start = newline + 1;
  for (const part of parts as unknown[]) {
    const [partition, bytes] = Array.isArray(part) && part.length === 2 ? (part as unknown[]) : [];
    if (!Number.isInteger(partition) || (partition as number) < 0 || (partition as number) >= partitions) {
      return { reason: 'shape', problem: `a part names partition ${JSON.stringify(partition)}: the stream has ${partitions}` };
    }
    if (!Number.isInteger(bytes) || (bytes as number) < 2) return { reason: 'shape', problem: `partition ${partition as number}'s part has ${JSON.stringify(bytes)} bytes` };
    if (seen.has(partition as number)) return { reason: 'shape', problem: `partition ${partition as number} has two parts` };
    seen.add(partition as number);
    decoded.push({ partition: partition as number, start, end: start + (bytes as number) });
    start += bytes as number;
  }
  if (start !== data.length) return { reason: 'shape', problem: `its parts add up to ${start - newline - 1} bytes, the message holds ${data.length - newline - 1} after its head` };
  return { stream, parts: decoded };
}

/** The events of one part, checked as the HTTP ingest checks events, or why they are refused. */
export function eventsOfPart(data: Buffer, part: LogPart, eventDepth: number): Event[] | LogDamage {
  let events: unknown;
  try {
    events = JSON.parse(data.toString('utf8', part.start, part.end));
  } catch (error) {
    return { reason: 'not_json', problem: (error as Error).message };
  }
  try {
    return eventsFromJsonBody({ events }, eventDepth);
  } catch (error) {
    return { reason: 'invalid', problem: (error as Error).message };
  }
}

export function isDamage(value: object): value is LogDamage {
  return 'reason' in value;
}
