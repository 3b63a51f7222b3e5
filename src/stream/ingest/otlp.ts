/**
 * OTLP/HTTP traces: an `ExportTraceServiceRequest` as protobuf (`application/x-protobuf`) or OTLP/JSON
 * (`application/json`), optionally gzip. One event per span, mapped as Mirabelle maps them (docs/stream-language.md,
 * OTLP spans), with two fixes: double attributes are kept, and a status code outside 0..2 gives `state` "unset" (the
 * code itself is kept in `status`) instead of failing the request.
 *
 * protobufjs messages and OTLP/JSON objects share their field names (lowerCamelCase), so one mapper reads
 * both; only the value types differ: ids are bytes or hex strings, 64-bit integers are Longs or decimal strings
 * (or numbers), enums are numbers or their names, `bytesValue` is bytes or base64.
 */
import { gunzipSync } from 'node:zlib';
import type { Event } from '../event.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../lang/nesting.ts';
import { IngestError } from './errors.ts';
import { type Int64, int64ToNumber, loadProtos } from './protos.ts';

export interface OtlpLimits {
  /** The largest body accepted after gzip decompression. */
  readonly maxDecompressedBytes: number;
  /** `streams.max-event-depth` of the service that decodes (src/stream/lang/nesting.ts): how deep arrays and kvlists
   *  may nest inside an attribute value. */
  readonly eventDepth: number;
}

type OtlpEncoding = 'protobuf' | 'json';

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;
const KIND_NAMES: Record<string, number> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
const STATES = ['unset', 'ok', 'error'] as const;
const STATUS_NAMES: Record<string, number> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };

/** The encoding a Content-Type names (parameters such as charset ignored); throws a 415 for anything else. */
function otlpEncodingOf(contentType: string | undefined): OtlpEncoding {
  const mediaType = (contentType ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
  if (mediaType === 'application/x-protobuf' || mediaType === 'application/protobuf') return 'protobuf';
  if (mediaType === 'application/json') return 'json';
  throw new IngestError(
    `Unsupported Content-Type ${JSON.stringify(contentType ?? '')}: expected application/x-protobuf or application/json`,
    'unsupported',
  );
}

export function decodeOtlpTraces(
  body: Uint8Array,
  contentType: string | undefined,
  contentEncoding: string | undefined,
  limits: OtlpLimits,
): Event[] {
  const encoding = otlpEncodingOf(contentType);
  const data = decodeContentEncoding(body, contentEncoding, limits.maxDecompressedBytes);
  const request = encoding === 'protobuf' ? parseProtobuf(data, limits.eventDepth) : parseJson(data);
  return spansToEvents(request, limits.eventDepth);
}

/** An empty ExportTraceServiceResponse in the request's encoding. */
export function encodeOtlpResponse(contentType: string | undefined): { contentType: string; body: Buffer } {
  if (otlpEncodingOf(contentType) === 'json') return { contentType: 'application/json', body: Buffer.from('{}') };
  const type = loadProtos().exportTraceServiceResponse;
  return { contentType: 'application/x-protobuf', body: Buffer.from(type.encode(type.create({})).finish()) };
}

function decodeContentEncoding(body: Uint8Array, contentEncoding: string | undefined, maxBytes: number): Uint8Array {
  const coding = (contentEncoding ?? '').trim().toLowerCase();
  if (coding === '' || coding === 'identity') {
    if (body.length > maxBytes)
      throw new IngestError(`OTLP body of ${body.length} bytes is over the limit of ${maxBytes} bytes`, 'too-large');
    return body;
  }
  if (coding !== 'gzip')
    throw new IngestError(
      `Unsupported Content-Encoding ${JSON.stringify(contentEncoding)}: expected gzip or none`,
      'unsupported',
    );
  try {
    return gunzipSync(body, { maxOutputLength: maxBytes });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new IngestError(`OTLP body inflates to more than the limit of ${maxBytes} bytes`, 'too-large');
    }
    throw new IngestError(`invalid gzip body: ${(error as Error).message}`);
  }
}

function parseProtobuf(data: Uint8Array, eventDepth: number): OtlpRequest {
  try {
    return loadProtos().exportTraceServiceRequest.decode(data) as unknown as OtlpRequest;
  } catch (error) {
    // protobufjs decodes nested messages by recursion: a body nested past the stack is refused like any bad body.
    if (error instanceof RangeError)
      throw new IngestError(
        `invalid ExportTraceServiceRequest protobuf: nested deeper than the decoder allows (attribute values are limited to ${eventDepth} levels, streams.max-event-depth)`,
      );
    throw new IngestError(`invalid ExportTraceServiceRequest protobuf: ${(error as Error).message}`);
  }
}

function parseJson(data: Uint8Array): OtlpRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  } catch (error) {
    throw new IngestError(`Invalid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new IngestError('invalid ExportTraceServiceRequest JSON: the body must be an object');
  }
  return parsed as OtlpRequest;
}

/* The shapes common to protobufjs messages and OTLP/JSON; every field may be absent in JSON. */
/** Bytes fields: a Buffer when on the wire, protobufjs' empty-array default when absent, a string in JSON. */
type Bytes = Uint8Array | number[] | string | null | undefined;
type EnumValue = number | string | null | undefined;

interface OtlpAnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: Int64;
  doubleValue?: number | string | null;
  arrayValue?: { values?: OtlpAnyValue[] | null } | null;
  kvlistValue?: { values?: OtlpKeyValue[] | null } | null;
  bytesValue?: Bytes;
}
interface OtlpKeyValue {
  key?: string | null;
  value?: OtlpAnyValue | null;
}
interface OtlpSpanEvent {
  timeUnixNano?: Int64;
  name?: string | null;
  attributes?: OtlpKeyValue[] | null;
  droppedAttributesCount?: number | null;
}
interface OtlpLink {
  traceId?: Bytes;
  spanId?: Bytes;
  traceState?: string | null;
  attributes?: OtlpKeyValue[] | null;
  droppedAttributesCount?: number | null;
}
interface OtlpSpan {
  traceId?: Bytes;
  spanId?: Bytes;
  parentSpanId?: Bytes;
  name?: string | null;
  kind?: EnumValue;
  startTimeUnixNano?: Int64;
  endTimeUnixNano?: Int64;
  attributes?: OtlpKeyValue[] | null;
  droppedAttributesCount?: number | null;
  events?: OtlpSpanEvent[] | null;
  droppedEventsCount?: number | null;
  links?: OtlpLink[] | null;
  droppedLinksCount?: number | null;
  status?: { code?: EnumValue; message?: string | null } | null;
}
interface OtlpScopeSpans {
  scope?: {
    name?: string | null;
    version?: string | null;
    attributes?: OtlpKeyValue[] | null;
    droppedAttributesCount?: number | null;
  } | null;
  spans?: OtlpSpan[] | null;
  schemaUrl?: string | null;
}
interface OtlpResourceSpans {
  resource?: { attributes?: OtlpKeyValue[] | null } | null;
  scopeSpans?: OtlpScopeSpans[] | null;
  schemaUrl?: string | null;
}
interface OtlpRequest {
  resourceSpans?: OtlpResourceSpans[] | null;
}

function spansToEvents(request: OtlpRequest, limit: number): Event[] {
  const events: Event[] = [];
  try {
    for (const resourceSpans of list(request.resourceSpans)) {
      const resourceAttributes = attributeMap(resourceSpans.resource?.attributes, limit);
      const resource = { attributes: resourceAttributes, 'schema-url': resourceSpans.schemaUrl ?? '' };
      const serviceName = resourceAttributes['service.name'];
      const service = typeof serviceName === 'string' ? serviceName : undefined;
      for (const scopeSpans of list(resourceSpans.scopeSpans)) {
        const scope = {
          name: scopeSpans.scope?.name ?? '',
          version: scopeSpans.scope?.version ?? '',
          attributes: attributeMap(scopeSpans.scope?.attributes, limit),
          'dropped-attributes-count': scopeSpans.scope?.droppedAttributesCount ?? 0,
        };
        const schemaUrl = scopeSpans.schemaUrl ?? '';
        for (const span of list(scopeSpans.spans))
          events.push(spanEvent(span, resource, service, scope, schemaUrl, limit));
      }
    }
  } catch (error) {
    if (error instanceof IngestError) throw error;
    throw new IngestError(`invalid ExportTraceServiceRequest: ${(error as Error).message}`);
  }
  return events;
}

function spanEvent(
  span: OtlpSpan,
  resource: object,
  service: string | undefined,
  scope: object,
  schemaUrl: string,
  limit: number,
): Event {
  const statusCode = enumNumber(span.status?.code, STATUS_NAMES, 'status.code');
  const kind = enumNumber(span.kind, KIND_NAMES, 'kind');
  const start = int64ToNumber(span.startTimeUnixNano);
  const end = int64ToNumber(span.endTimeUnixNano);
  return {
    resource,
    service,
    scope,
    'schema-url': schemaUrl,
    'trace-id': hex(span.traceId),
    'span-id': hex(span.spanId),
    'parent-span-id': hex(span.parentSpanId),
    state: STATES[statusCode] ?? 'unset',
    status: statusCode,
    description: span.status?.message ?? '',
    name: span.name ?? '',
    kind: KINDS[kind] ?? 'unrecognized',
    'span-kind': kind,
    time: end,
    'start-time': start,
    'end-time': end,
    metric: durationNs(span.startTimeUnixNano, span.endTimeUnixNano, start, end),
    attributes: attributeMap(span.attributes, limit),
    'dropped-attributes-count': span.droppedAttributesCount ?? 0,
    events: list(span.events).map((event) => ({
      time: int64ToNumber(event.timeUnixNano),
      name: event.name ?? '',
      attributes: attributeMap(event.attributes, limit),
      'dropped-attributes-count': event.droppedAttributesCount ?? 0,
    })),
    'dropped-events-count': span.droppedEventsCount ?? 0,
    links: list(span.links).map((link) => ({
      'trace-id': hex(link.traceId),
      'span-id': hex(link.spanId),
      state: link.traceState ?? '',
      attributes: attributeMap(link.attributes, limit),
      'dropped-attributes-count': link.droppedAttributesCount ?? 0,
    })),
    'dropped-links-count': span.droppedLinksCount ?? 0,
  };
}

/** end − start, computed before the ns epochs are rounded to numbers, so short spans keep an exact duration. */
function durationNs(startRaw: Int64, endRaw: Int64, start: number, end: number): number {
  if (isLong(startRaw) && isLong(endRaw))
    return (endRaw.high - startRaw.high) * 2 ** 32 + ((endRaw.low >>> 0) - (startRaw.low >>> 0));
  if (typeof startRaw === 'string' && typeof endRaw === 'string' && /^\d+$/.test(startRaw) && /^\d+$/.test(endRaw)) {
    return Number(BigInt(endRaw) - BigInt(startRaw));
  }
  return end - start;
}

function isLong(value: Int64): value is { high: number; low: number; toNumber(): number } {
  return typeof value === 'object' && value !== null && typeof (value as { high?: unknown }).high === 'number';
}

function list<T>(value: T[] | null | undefined): T[] {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new IngestError('invalid ExportTraceServiceRequest: a repeated field is not a list');
  return value;
}

function enumNumber(value: EnumValue, names: Record<string, number>, field: string): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === 'number') return value;
  const byName = names[value];
  if (byName !== undefined) return byName;
  if (/^\d+$/.test(value)) return Number(value);
  throw new IngestError(`invalid ExportTraceServiceRequest: unknown ${field} ${JSON.stringify(value)}`);
}

/** Lower-case hex of an id: bytes in protobuf, already hex in OTLP/JSON. */
function hex(id: Bytes): string {
  if (id === null || id === undefined) return '';
  if (typeof id === 'string') return id.toLowerCase();
  return toBuffer(id).toString('hex');
}

/** The default of `streams.max-event-depth`, which also bounds arrays and kvlists inside attribute values: past
 *  it the request is refused (400) instead of recursing without bound (src/stream/lang/nesting.ts). */
export const MAX_ANY_VALUE_DEPTH = DEFAULT_MAX_EVENT_DEPTH;

function checkDepth(depth: number, limit: number): void {
  if (depth > limit) {
    throw new IngestError(
      `an attribute value nests arrays and kvlists deeper than the limit of ${limit} levels (streams.max-event-depth)`,
    );
  }
}

function attributeMap(
  attributes: OtlpKeyValue[] | null | undefined,
  limit: number,
  depth = 0,
): Record<string, unknown> {
  checkDepth(depth, limit);
  const map: Record<string, unknown> = {};
  for (const attribute of list(attributes)) {
    // defineProperty, so that a key such as "__proto__" is stored as data like any other key.
    Object.defineProperty(map, attribute.key ?? '', {
      value: anyValue(attribute.value, limit, depth),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return map;
}

const hasOwn = Object.prototype.hasOwnProperty;

/** protobufjs puts defaults on the prototype and the value actually sent as an own property (it is a oneof),
 *  so own properties tell which member is set, for messages and JSON alike. */
function anyValue(value: OtlpAnyValue | null | undefined, limit: number, depth: number): unknown {
  if (value === null || value === undefined) return null;
  if (hasOwn.call(value, 'stringValue')) return value.stringValue ?? '';
  if (hasOwn.call(value, 'boolValue')) return value.boolValue === true;
  if (hasOwn.call(value, 'intValue')) return int64ToNumber(value.intValue);
  if (hasOwn.call(value, 'doubleValue')) return doubleValue(value.doubleValue);
  if (hasOwn.call(value, 'arrayValue')) {
    checkDepth(depth + 1, limit);
    return list(value.arrayValue?.values).map((item) => anyValue(item, limit, depth + 1));
  }
  if (hasOwn.call(value, 'kvlistValue')) return attributeMap(value.kvlistValue?.values, limit, depth + 1);
  if (hasOwn.call(value, 'bytesValue')) return bytesBase64(value.bytesValue);
  return null;
}

/** OTLP/JSON writes non-finite doubles as the strings "NaN", "Infinity" and "-Infinity". */
function doubleValue(value: number | string | null | undefined): number {
  if (typeof value === 'number') return value;
  if (value === null || value === undefined) return 0;
  return Number(value);
}

/** Bytes attribute values become base64 text, which is what a JSON client would see of them anyway. */
function bytesBase64(value: Bytes): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return toBuffer(value).toString('base64');
}

function toBuffer(bytes: Uint8Array | number[]): Buffer {
  return Array.isArray(bytes) ? Buffer.from(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
