/**
 * How a journal record is framed on disk (docs/durability.md, "The journal"), and how a reader finds the records
 * of a segment again when part of it is damaged. The cluster's event log frames its messages the same way.
 *
 * A record: `VJ01`, the length of what follows the prefix, the CRC-32 of it, the length of the JSON header, then
 * the header and the payload. The CRC covers header and payload, not the prefix: a damaged length is found by the
 * CRC of the bytes it then points at.
 */
import { crc32 } from 'node:zlib';
import type { LogEntry, LogRecord } from './event-log.ts';

/** `VJ01`: the start of every record, so that a reader knows it is reading a record. */
const MAGIC = 0x56_4a_30_31;
const MAGIC_BYTES = Buffer.from([0x31, 0x30, 0x4a, 0x56]);
/** magic, length of what follows the prefix, CRC-32 of it, length of the JSON header. */
const PREFIX_BYTES = 16;
const FORMATS: ReadonlySet<unknown> = new Set<LogRecord['format']>(['events', 'json-body']);

interface RecordHeader {
  seq: number;
  target: string;
  input: string;
  format: LogRecord['format'];
  receivedAtNs: number;
  count: number;
}

/** A record: the prefix, a JSON header, then the payload; the CRC covers header and payload. */
export function encodeRecord(seq: number, record: LogRecord): Buffer[] {
  const header = Buffer.from(
    JSON.stringify({
      seq,
      target: record.target,
      input: record.input,
      format: record.format,
      receivedAtNs: record.receivedAtNs,
      count: record.count,
    } satisfies RecordHeader),
  );
  const prefix = Buffer.allocUnsafe(PREFIX_BYTES);
  prefix.writeUInt32LE(MAGIC, 0);
  prefix.writeUInt32LE(header.length + record.payload.length, 4);
  prefix.writeUInt32LE(crc32(record.payload, crc32(header)), 8);
  prefix.writeUInt32LE(header.length, 12);
  return [prefix, header, record.payload];
}

/** Bytes from `start` to `resumesAt` (the next record that checks, or null: the end of the data) were skipped.
 *  `cutShort`: they are a record that runs past the end, with nothing after it (a write that was cut). */
export interface ScanDamage {
  readonly kind: 'damage';
  readonly start: number;
  readonly resumesAt: number | null;
  readonly problem: string;
  readonly cutShort: boolean;
}

/** What a scan of a segment meets, in order: a record that checks, or a stretch that does not. */
type ScanItem =
  { readonly kind: 'record'; readonly entry: LogEntry; readonly start: number; readonly end: number } | ScanDamage;

/**
 * The records of a segment, in order. A record that does not check is skipped up to the next position where a
 * prefix, a CRC and a header all check: one damaged record costs that record only. A CRC-32 that matches by
 * chance at a wrong position is one in 4 billion, and the header must then parse too. A JSON body (kept as
 * received) cannot plant a record to resync to: the lengths of a record under 150 MB hold a byte below 0x09,
 * which JSON text cannot contain.
 */
export function* scanRecords(data: Buffer): Generator<ScanItem> {
  let offset = 0;
  while (offset < data.length) {
    const read = readRecord(data, offset);
    if (typeof read !== 'string') {
      yield { kind: 'record', entry: read.entry, start: offset, end: read.end };
      offset = read.end;
      continue;
    }
    const resumesAt = nextRecord(data, offset + 1);
    yield {
      kind: 'damage',
      start: offset,
      resumesAt,
      problem: read,
      cutShort: resumesAt === null && (read === CUT_SHORT || read === PAST_END),
    };
    if (resumesAt === null) return;
    offset = resumesAt;
  }
}

/** The records of a segment, in order, past any damaged one (each damaged stretch is reported). */
export function* decodeRecords(data: Buffer, onDamage: (offset: number, problem: string) => void): Generator<LogEntry> {
  for (const item of scanRecords(data)) {
    if (item.kind === 'record') yield item.entry;
    else onDamage(item.start, item.problem);
  }
}

const CUT_SHORT = 'a record cut short';
const PAST_END = 'a record whose length runs past the end of the segment';

/** The record at `offset` and where it ends, or what is wrong with it. */
function readRecord(data: Buffer, offset: number): { entry: LogEntry; end: number } | string {
  if (data.length - offset < PREFIX_BYTES) return CUT_SHORT;
  if (data.readUInt32LE(offset) !== MAGIC) return 'no record starts here';
  const length = data.readUInt32LE(offset + 4);
  const headerLength = data.readUInt32LE(offset + 12);
  const start = offset + PREFIX_BYTES;
  if (headerLength > length) return 'a record whose header is longer than the record';
  if (start + length > data.length) return PAST_END;
  const body = data.subarray(start, start + length);
  if (crc32(body) !== data.readUInt32LE(offset + 8)) return 'a record whose checksum does not match';
  const header = parseHeader(body.subarray(0, headerLength));
  if (header === null) return 'a record whose header does not parse';
  return { entry: { ...header, payload: body.subarray(headerLength) }, end: start + length };
}

function parseHeader(bytes: Buffer): RecordHeader | null {
  let header: unknown;
  try {
    header = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof header !== 'object' || header === null) return null;
  const { seq, target, input, format, receivedAtNs, count } = header as Record<string, unknown>;
  const valid =
    Number.isSafeInteger(seq) &&
    typeof target === 'string' &&
    typeof input === 'string' &&
    FORMATS.has(format) &&
    typeof receivedAtNs === 'number' &&
    Number.isSafeInteger(count);
  return valid ? (header as RecordHeader) : null;
}

/** The first position from `from` on where a record checks, or null. */
function nextRecord(data: Buffer, from: number): number | null {
  for (let at = data.indexOf(MAGIC_BYTES, from); at !== -1; at = data.indexOf(MAGIC_BYTES, at + 1)) {
    if (typeof readRecord(data, at) !== 'string') return at;
  }
  return null;
}
