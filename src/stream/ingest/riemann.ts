/**
 * The Riemann protocol's `Msg` (protos/riemann/proto.proto) decoded as Mirabelle v0.13 did (README, Streams,
 * Riemann TCP input): `host`, `service`, `state`, `description`, `tags`, `ttl` and every attribute become top-level
 * keys; `metric` comes from `metric_sint64`, else `metric_d`, else `metric_f`; `time` from `time_micros`, else
 * `time` (seconds), converted to ns, else the receive time. The fields of the Event message win over an attribute
 * of the same name, so `time` is always a number.
 *
 * A hand-written reader, checked against protobufjs decoding the vendored .proto in the tests: it builds the
 * events directly instead of a protobufjs message per event and attribute plus a Long per time. Deprecated
 * `states` and unknown fields are skipped by wire type.
 */
import type { Event } from '../event.ts';
import { loadProtos } from './protos.ts';

export class RiemannDecodeError extends Error {
  constructor(message: string) {
    super(`malformed Riemann Msg: ${message}`);
    this.name = 'RiemannDecodeError';
  }
}

export interface RiemannMsg {
  events: Event[];
  /** The Msg holds a query (Vigie answers queries with an error, like Mirabelle). */
  hasQuery: boolean;
}

const SHORT_STRING = 24;
const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;
const FIXED32 = 5;

class Reader {
  pos: number;
  /** The low and high 32 bits of the last 64-bit varint read (kept here to avoid an object per read). */
  lo = 0;
  hi = 0;

  constructor(
    readonly buf: Buffer,
    start: number,
    public end: number,
  ) {
    this.pos = start;
  }

  byte(): number {
    if (this.pos >= this.end) throw new RiemannDecodeError('truncated varint');
    return this.buf[this.pos++] as number;
  }

  /** A varint that fits 32 bits (tags, lengths); longer ones are read whole and truncated, as protobuf does. */
  uint32(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = this.byte();
      value = (value | ((b & 0x7f) << shift)) >>> 0;
      if (b < 0x80) return value;
    }
    for (let i = 0; i < 5; i++) if (this.byte() < 0x80) return value;
    throw new RiemannDecodeError('varint longer than 10 bytes');
  }

  /** A 64-bit varint into `lo`/`hi`. */
  varint64(): void {
    let lo = 0;
    let hi = 0;
    let b = 0;
    for (let i = 0; i < 4; i++) {
      b = this.byte();
      lo = (lo | ((b & 0x7f) << (i * 7))) >>> 0;
      if (b < 0x80) {
        this.lo = lo;
        this.hi = 0;
        return;
      }
    }
    b = this.byte();
    lo = (lo | ((b & 0x7f) << 28)) >>> 0;
    hi = (b & 0x7f) >> 4;
    if (b >= 0x80) {
      for (let i = 0; ; i++) {
        if (i === 5) throw new RiemannDecodeError('varint longer than 10 bytes');
        b = this.byte();
        hi = (hi | ((b & 0x7f) << (i * 7 + 3))) >>> 0;
        if (b < 0x80) break;
      }
    }
    this.lo = lo;
    this.hi = hi;
  }

  /** int64 as a number (past 2^53 the low bits go, as stream times do by design). */
  int64(): number {
    this.varint64();
    return (this.hi | 0) * 4294967296 + this.lo;
  }

  /** sint64 (zigzag) as a number. */
  sint64(): number {
    this.varint64();
    const negative = this.lo & 1;
    let lo = ((this.lo >>> 1) | (this.hi << 31)) >>> 0;
    let hi = this.hi >>> 1;
    if (negative) {
      lo = ~lo >>> 0;
      hi = ~hi >>> 0;
    }
    return (hi | 0) * 4294967296 + lo;
  }

  /** The end of a length-delimited field starting here. */
  delimited(): number {
    const length = this.uint32();
    const end = this.pos + length;
    if (end > this.end) throw new RiemannDecodeError(`field of ${length} bytes runs past the end of its message`);
    return end;
  }

  /** Short ASCII strings (hosts, services, states, attribute keys) are built from their bytes: cheaper than a
   *  call into the UTF-8 decoder, which every other string goes through. */
  string(): string {
    const end = this.delimited();
    const buf = this.buf;
    const start = this.pos;
    this.pos = end;
    if (end - start > SHORT_STRING) return buf.toString('utf8', start, end);
    let text = '';
    for (let i = start; i < end; i++) {
      const byte = buf[i] as number;
      if (byte >= 0x80) return buf.toString('utf8', start, end);
      text += String.fromCharCode(byte);
    }
    return text;
  }

  float(): number {
    if (this.pos + 4 > this.end) throw new RiemannDecodeError('truncated float');
    const value = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return value;
  }

  double(): number {
    if (this.pos + 8 > this.end) throw new RiemannDecodeError('truncated double');
    const value = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return value;
  }

  skip(wireType: number): void {
    switch (wireType) {
      case VARINT:
        this.varint64();
        return;
      case FIXED64:
        this.pos += 8;
        break;
      case BYTES:
        this.pos = this.delimited();
        return;
      case FIXED32:
        this.pos += 4;
        break;
      default:
        throw new RiemannDecodeError(`unsupported wire type ${wireType}`);
    }
    if (this.pos > this.end) throw new RiemannDecodeError('truncated field');
  }
}

function expect(field: number, wireType: number, expected: number): void {
  if (wireType !== expected)
    throw new RiemannDecodeError(`field ${field} has wire type ${wireType}, expected ${expected}`);
}

/** Decodes `buf[start, end)` as a Msg; events without a time get `receivedNs`. */
export function decodeRiemannMsg(buf: Buffer, start: number, end: number, receivedNs: number): RiemannMsg {
  const reader = new Reader(buf, start, end);
  const events: Event[] = [];
  let hasQuery = false;
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 6) {
      expect(field, wireType, BYTES);
      const eventEnd = reader.delimited();
      events.push(decodeEvent(reader, eventEnd, receivedNs));
    } else if (field === 5) {
      expect(field, wireType, BYTES);
      reader.pos = reader.delimited();
      hasQuery = true;
    } else if (field === 0) {
      throw new RiemannDecodeError('field number 0');
    } else {
      reader.skip(wireType);
    }
  }
  return { events, hasQuery };
}

function decodeEvent(reader: Reader, end: number, receivedNs: number): Event {
  const outerEnd = reader.end;
  reader.end = end;
  const event: Event = {};
  let host: string | undefined;
  let service: string | undefined;
  let state: string | undefined;
  let description: string | undefined;
  let tags: string[] | undefined;
  let ttl: number | undefined;
  let seconds: number | undefined;
  let micros: number | undefined;
  let sint64: number | undefined;
  let double: number | undefined;
  let float: number | undefined;
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    switch (field) {
      case 1:
        expect(field, wireType, VARINT);
        seconds = reader.int64();
        break;
      case 2:
        expect(field, wireType, BYTES);
        state = reader.string();
        break;
      case 3:
        expect(field, wireType, BYTES);
        service = reader.string();
        break;
      case 4:
        expect(field, wireType, BYTES);
        host = reader.string();
        break;
      case 5:
        expect(field, wireType, BYTES);
        description = reader.string();
        break;
      case 7:
        expect(field, wireType, BYTES);
        (tags ??= []).push(reader.string());
        break;
      case 8:
        expect(field, wireType, FIXED32);
        ttl = reader.float();
        break;
      case 9:
        expect(field, wireType, BYTES);
        decodeAttribute(reader, event);
        break;
      case 10:
        expect(field, wireType, VARINT);
        micros = reader.int64();
        break;
      case 13:
        expect(field, wireType, VARINT);
        sint64 = reader.sint64();
        break;
      case 14:
        expect(field, wireType, FIXED64);
        double = reader.double();
        break;
      case 15:
        expect(field, wireType, FIXED32);
        float = reader.float();
        break;
      case 0:
        throw new RiemannDecodeError('field number 0');
      default:
        reader.skip(wireType);
    }
  }
  if (reader.pos !== end) throw new RiemannDecodeError('event runs past its declared length');
  reader.end = outerEnd;
  if (host !== undefined) event.host = host;
  if (service !== undefined) event.service = service;
  if (state !== undefined) event.state = state;
  if (description !== undefined) event.description = description;
  if (tags !== undefined) event.tags = tags;
  if (ttl !== undefined) event.ttl = ttl;
  const metric = sint64 ?? double ?? float;
  if (metric !== undefined) event.metric = metric;
  event.time = micros !== undefined ? micros * 1000 : seconds !== undefined ? seconds * 1e9 : receivedNs;
  return event;
}

function decodeAttribute(reader: Reader, event: Event): void {
  const end = reader.delimited();
  const outerEnd = reader.end;
  reader.end = end;
  let key: string | undefined;
  let value = '';
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1) {
      expect(field, wireType, BYTES);
      key = reader.string();
    } else if (field === 2) {
      expect(field, wireType, BYTES);
      value = reader.string();
    } else if (field === 0) {
      throw new RiemannDecodeError('field number 0');
    } else {
      reader.skip(wireType);
    }
  }
  if (reader.pos !== end) throw new RiemannDecodeError('attribute runs past its declared length');
  reader.end = outerEnd;
  if (key === undefined) throw new RiemannDecodeError('attribute without its required key');
  event[key] = value;
}

let okReply: Buffer | null = null;

/** A length-prefixed reply Msg: `{ok: true}`, or `{ok: false, error}` when an error is given. */
export function encodeRiemannReply(error?: string): Buffer {
  if (error === undefined && okReply !== null) return okReply;
  const type = loadProtos().riemannMsg;
  const body = type.encode(type.create(error === undefined ? { ok: true } : { ok: false, error })).finish();
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  frame.set(body, 4);
  if (error === undefined) okReply = frame;
  return frame;
}
