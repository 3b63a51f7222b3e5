/**
 * Prometheus remote-write 1.0: a snappy block holding a protobuf `WriteRequest`. Decoding gives one event per
 * sample with the seed's mapping: `__name__` → `service`, every other label → a top-level key, the value →
 * `metric` (NaN stale markers and ±Inf kept), the timestamp (ms) → `time` (ns). `__name__` wins over a label
 * that is itself called `service`; `metric` and `time` always come from the sample. Encoding (for the
 * `prometheus` output) does the reverse on events already turned into label sets.
 */
import type { Event } from '../event.ts';
import { IngestError } from './errors.ts';
import { loadProtos } from './protos.ts';
import { snappyCompress, SnappyTooLargeError, snappyUncompress } from './snappy.ts';

export interface RemoteWriteLimits {
  /** The largest uncompressed WriteRequest accepted, checked against the snappy header before inflating. */
  readonly maxDecompressedBytes: number;
}

const NAME_LABEL = '__name__';

export function decodeRemoteWrite(body: Uint8Array, limits: RemoteWriteLimits): Event[] {
  const data = uncompressBody(body, limits.maxDecompressedBytes);
  try {
    return decodeWriteRequest(data);
  } catch (error) {
    if (error instanceof IngestError) throw error;
    throw new IngestError(`invalid WriteRequest protobuf: ${(error as Error).message}`);
  }
}

function uncompressBody(body: Uint8Array, maxBytes: number): Buffer {
  try {
    return snappyUncompress(body, maxBytes);
  } catch (error) {
    if (error instanceof SnappyTooLargeError) {
      throw new IngestError(
        `remote-write body inflates to ${error.declaredLength} bytes, over the limit of ${maxBytes} bytes`,
        'too-large',
      );
    }
    throw new IngestError(`invalid snappy block: ${(error as Error).message}`);
  }
}

/*
 * A hand-written reader for the three messages the mapping needs, checked against protobufjs decoding the
 * vendored .proto in the tests. protobufjs' generic decoder allocates a message object per label and sample and a
 * Long per timestamp, which made decoding alone slower than the 500,000 samples/s ingest floor; this reader
 * builds the events directly. Unknown fields (metadata, exemplars, native histograms) are skipped by wire type.
 */
class WireReader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  varint(): number {
    const buf = this.buf;
    let result = 0;
    let shift = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= buf.length) throw new IngestError('invalid WriteRequest protobuf: truncated varint');
      const byte = buf[this.pos++] as number;
      result += (byte & 0x7f) * shift;
      if (byte < 0x80) return result;
      shift *= 128;
    }
    throw new IngestError('invalid WriteRequest protobuf: varint longer than 10 bytes');
  }

  /** int64 as a number. Negative values are ten-byte two's complement varints, so the high bits are summed
   *  apart from the low 28 to keep the subtraction of 2^64 exact. */
  int64(): number {
    const buf = this.buf;
    let low = 0;
    let high = 0;
    let shift = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= buf.length) throw new IngestError('invalid WriteRequest protobuf: truncated varint');
      const byte = buf[this.pos++] as number;
      if (i < 4) low += (byte & 0x7f) * shift;
      else high += (byte & 0x7f) * shift;
      if (byte < 0x80) return (high >= 2 ** 35 ? high - 2 ** 36 : high) * 2 ** 28 + low;
      shift = i === 3 ? 1 : shift * 128;
    }
    throw new IngestError('invalid WriteRequest protobuf: varint longer than 10 bytes');
  }

  /** End offset of a length-delimited field starting here. */
  end(): number {
    const length = this.varint();
    const end = this.pos + length;
    if (end > this.buf.length)
      throw new IngestError('invalid WriteRequest protobuf: a field runs past the end of the body');
    return end;
  }

  string(): string {
    const end = this.end();
    const text = this.buf.toString('utf8', this.pos, end);
    this.pos = end;
    return text;
  }

  double(): number {
    if (this.pos + 8 > this.buf.length) throw new IngestError('invalid WriteRequest protobuf: truncated double');
    const value = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return value;
  }

  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.varint();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.end();
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        throw new IngestError(`invalid WriteRequest protobuf: unsupported wire type ${wireType}`);
    }
    if (this.pos > this.buf.length) throw new IngestError('invalid WriteRequest protobuf: truncated field');
  }
}

function decodeWriteRequest(data: Buffer): Event[] {
  const reader = new WireReader(data);
  const events: Event[] = [];
  while (reader.pos < data.length) {
    const tag = reader.varint();
    if (tag === 0x0a) decodeSeries(reader, reader.end(), events);
    else reader.skip(tag & 7);
  }
  return events;
}

/*
 * Label sets by their encoded bytes. Prometheus sends the same series on every scrape, so decoding the labels
 * (two strings each) once per distinct series instead of once per request is most of the decoding cost saved.
 * The templates are never mutated (events are spread copies). Bounded: cleared when full.
 */
const templates = new Map<string, Event>();
const MAX_TEMPLATES = 100_000;

/** Node's own Buffer method behind `toString('latin1', ...)`, called directly to skip argument checks. */
interface LatinSlicer {
  latin1Slice(start: number, end: number): string;
}

function decodeSeries(reader: WireReader, end: number, events: Event[]): void {
  const buf = reader.buf;
  const seriesStart = reader.pos;
  // Labels (field 1) come first in what every known sender writes; skip over them to find their bytes.
  while (reader.pos < end && buf[reader.pos] === 0x0a) {
    reader.pos++;
    reader.pos = reader.end();
  }
  const labelsEnd = reader.pos;
  if (labelsEnd > end) throw new IngestError('invalid WriteRequest protobuf: a label runs past its series');
  let template = cachedTemplate(buf, seriesStart, labelsEnd);
  let lateLabels = false;
  const first = events.length;
  while (reader.pos < end) {
    const tag = reader.varint();
    if (tag === 0x12) events.push(sampleEvent(reader, reader.end(), template));
    else if (tag === 0x0a) {
      lateLabels = true;
      reader.pos = reader.end();
    } else reader.skip(tag & 7);
    if (reader.pos > end) throw new IngestError('invalid WriteRequest protobuf: a field runs past its series');
  }
  if (lateLabels) {
    // Labels after samples: legal protobuf, so rebuild the label set from every label field of the series.
    template = templateFromLabels(reader, seriesStart, end, true);
    for (let i = first; i < events.length; i++) {
      const sample = events[i] as Event;
      const event: Event = { ...template };
      event.metric = sample.metric;
      event.time = sample.time;
      events[i] = event;
    }
  }
}

function sampleEvent(reader: WireReader, end: number, template: Event): Event {
  let metric = 0;
  let timestamp = 0;
  while (reader.pos < end) {
    const tag = reader.varint();
    if (tag === 0x09) metric = reader.double();
    else if (tag === 0x10) timestamp = reader.int64();
    else reader.skip(tag & 7);
  }
  if (reader.pos !== end) throw new IngestError('invalid WriteRequest protobuf: a field runs past its sample');
  // A spread of the template is a fast copy in V8, and every event of a series shares its hidden class.
  const event: Event = { ...template };
  event.metric = metric;
  event.time = timestamp * 1e6;
  return event;
}

function cachedTemplate(buf: Buffer, start: number, end: number): Event {
  const key = (buf as unknown as LatinSlicer).latin1Slice(start, end);
  let template = templates.get(key);
  if (template === undefined) {
    const reader = new WireReader(buf);
    reader.pos = start;
    template = templateFromLabels(reader, start, end, false);
    if (templates.size >= MAX_TEMPLATES) templates.clear();
    templates.set(key, template);
  }
  return template;
}

/** Reads the Label fields in [start, end) into a template event; `skipOthers` skips non-label fields. */
function templateFromLabels(reader: WireReader, start: number, end: number, skipOthers: boolean): Event {
  reader.pos = start;
  const template: Event = {};
  let metricName: string | undefined;
  while (reader.pos < end) {
    const tag = reader.varint();
    if (tag !== 0x0a) {
      if (!skipOthers) throw new IngestError('invalid WriteRequest protobuf: unexpected field in labels');
      reader.skip(tag & 7);
      continue;
    }
    const labelEnd = reader.end();
    let name = '';
    let value = '';
    while (reader.pos < labelEnd) {
      const labelTag = reader.varint();
      if (labelTag === 0x0a) name = reader.string();
      else if (labelTag === 0x12) value = reader.string();
      else reader.skip(labelTag & 7);
    }
    if (reader.pos !== labelEnd) throw new IngestError('invalid WriteRequest protobuf: a field runs past its label');
    if (name === NAME_LABEL) metricName = value;
    else template[name] = value;
  }
  if (metricName !== undefined) template.service = metricName;
  // Placeholders, so that setting them on each copy keeps the template's shape.
  template.metric = 0;
  template.time = 0;
  return template;
}

/** One series to write: its label set (any order; sorted here) and its samples in time order. */
export interface RemoteWriteSeries {
  labels: Record<string, string>;
  samples: { value: number; timestampMs: number }[];
}

/** Encodes series as a snappy-compressed WriteRequest, labels sorted by name in byte order as remote-write
 *  requires (`__name__` first unless a label name starts with an upper-case letter). */
export function encodeRemoteWrite(series: readonly RemoteWriteSeries[]): Buffer {
  const timeseries = series.map((one) => ({
    labels: Object.keys(one.labels)
      .sort()
      .map((name) => ({ name, value: one.labels[name] })),
    samples: one.samples.map((sample) => ({ value: sample.value, timestamp: sample.timestampMs })),
  }));
  const type = loadProtos().writeRequest;
  return snappyCompress(type.encode(type.fromObject({ timeseries })).finish());
}
