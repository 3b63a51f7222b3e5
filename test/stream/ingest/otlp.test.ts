import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { context, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsProblem } from '../../../src/stream/event.ts';
import { IngestError } from '../../../src/stream/ingest/errors.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../../src/stream/lang/nesting.ts';
import { streamErrors } from '../../../src/stream/http/routes.ts';
import { decodeOtlpTraces, encodeOtlpResponse, MAX_ANY_VALUE_DEPTH } from '../../../src/stream/ingest/otlp.ts';
import { loadProtos } from '../../../src/stream/ingest/protos.ts';

/** The HTTP status the stream routes answer for a decoder's error. */
const statusOf = (error: unknown): number | undefined => streamErrors.fromDomainError(error)?.statusCode;

interface Captured {
  body: Buffer;
  contentType: string | undefined;
  contentEncoding: string | undefined;
}

const limits = { maxDecompressedBytes: 1024 * 1024, eventDepth: MAX_ANY_VALUE_DEPTH };
let server: Server;
let url: string;
const captured: Captured[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      captured.push({
        body: Buffer.concat(chunks),
        contentType: request.headers['content-type'],
        contentEncoding: request.headers['content-encoding'],
      });
      const reply = encodeOtlpResponse(request.headers['content-type']);
      response.writeHead(200, { 'content-type': reply.contentType }).end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Exports spans through the real SDK; SimpleSpanProcessor sends one request per ended span. */
async function exportSpans(exporter: ProtoExporter | JsonExporter): Promise<{ requests: Captured[]; ids: SpanIds }> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'checkout', 'deployment.environment': 'test' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('vigie-test', '1.2.3');
  const before = captured.length;
  const ids = recordSpans(tracer);
  await provider.forceFlush();
  await provider.shutdown();
  expect(captured.length - before).toBe(3);
  return { requests: captured.slice(before), ids };
}

interface SpanIds {
  traceId: string;
  parentId: string;
  childId: string;
  linkedTraceId: string;
  linkedSpanId: string;
  start: number;
}

function recordSpans(tracer: Tracer): SpanIds {
  const start = Date.UTC(2025, 0, 2, 3, 4, 5, 678);
  const parent = tracer.startSpan('GET /cart', { kind: SpanKind.SERVER, startTime: start });
  const linked = tracer.startSpan('enqueue', { kind: SpanKind.PRODUCER, startTime: start });
  linked.end(start + 1);
  const parentContext = parent.spanContext();
  // Children of `parent` through an explicit context keep the test free of a context manager.
  const child = tracer.startSpan(
    'SELECT cart',
    {
      kind: SpanKind.CLIENT,
      startTime: start + 10,
      attributes: {
        'db.system': 'postgresql',
        'db.rows': 42,
        'db.ratio': 0.75,
        'db.cached': false,
        'db.tables': ['cart', 'item'],
      },
      links: [{ context: linked.spanContext(), attributes: { 'link.reason': 'batch' } }],
    },
    trace.setSpanContext(context.active(), parentContext),
  );
  child.addEvent('retry', { attempt: 2, backoff: 1.5 }, start + 20);
  child.setStatus({ code: SpanStatusCode.ERROR, message: 'deadlock detected' });
  child.end(start + 45);
  parent.setStatus({ code: SpanStatusCode.OK });
  parent.end(start + 100);
  return {
    traceId: parentContext.traceId,
    parentId: parentContext.spanId,
    childId: child.spanContext().spanId,
    linkedTraceId: linked.spanContext().traceId,
    linkedSpanId: linked.spanContext().spanId,
    start,
  };
}

function decodeAll(requests: Captured[]): ReturnType<typeof decodeOtlpTraces> {
  return requests.flatMap((request) =>
    decodeOtlpTraces(request.body, request.contentType, request.contentEncoding, limits),
  );
}

function assertMapping(events: ReturnType<typeof decodeOtlpTraces>, ids: SpanIds): void {
  expect(events).toHaveLength(3);
  // Events as every path after the input checks them (src/stream/event.ts): the input checked them once.
  expect(eventsProblem(events, { eventDepth: DEFAULT_MAX_EVENT_DEPTH, timed: true })).toBeNull();
  const ms = 1e6;
  const child = events.find((event) => event.name === 'SELECT cart');
  const parent = events.find((event) => event.name === 'GET /cart');
  expect(child).toBeDefined();
  expect(parent).toBeDefined();
  expect(child).toMatchObject({
    service: 'checkout',
    resource: { attributes: { 'service.name': 'checkout', 'deployment.environment': 'test' } },
    scope: { name: 'vigie-test', version: '1.2.3', attributes: {}, 'dropped-attributes-count': 0 },
    'trace-id': ids.traceId,
    'span-id': ids.childId,
    'parent-span-id': ids.parentId,
    state: 'error',
    status: 2,
    description: 'deadlock detected',
    kind: 'client',
    'span-kind': 3,
    'start-time': (ids.start + 10) * ms,
    'end-time': (ids.start + 45) * ms,
    time: (ids.start + 45) * ms,
    metric: 35 * ms,
    attributes: {
      'db.system': 'postgresql',
      'db.rows': 42,
      'db.ratio': 0.75,
      'db.cached': false,
      'db.tables': ['cart', 'item'],
    },
    'dropped-attributes-count': 0,
    events: [
      {
        time: (ids.start + 20) * ms,
        name: 'retry',
        attributes: { attempt: 2, backoff: 1.5 },
        'dropped-attributes-count': 0,
      },
    ],
    'dropped-events-count': 0,
    links: [
      { 'trace-id': ids.linkedTraceId, 'span-id': ids.linkedSpanId, state: '', attributes: { 'link.reason': 'batch' } },
    ],
    'dropped-links-count': 0,
  });
  expect(parent).toMatchObject({
    'parent-span-id': '',
    state: 'ok',
    status: 1,
    kind: 'server',
    'span-kind': 2,
    metric: 100 * ms,
  });
  expect(child?.['trace-id']).toMatch(/^[0-9a-f]{32}$/);
}

describe('decodeOtlpTraces with the OpenTelemetry JS SDK', () => {
  it('decodes protobuf exports (application/x-protobuf)', async () => {
    const { requests, ids } = await exportSpans(new ProtoExporter({ url }));
    expect(requests.map((request) => request.contentType)).toEqual(Array(3).fill('application/x-protobuf'));
    assertMapping(decodeAll(requests), ids);
  });

  it('decodes OTLP/JSON exports (application/json, hex ids)', async () => {
    const { requests, ids } = await exportSpans(new JsonExporter({ url }));
    expect(requests[0]?.contentType).toMatch(/^application\/json/);
    assertMapping(decodeAll(requests), ids);
  });

  it('decodes gzip-compressed exports in both encodings', async () => {
    for (const exporter of [
      new ProtoExporter({ url, compression: 'gzip' as never }),
      new JsonExporter({ url, compression: 'gzip' as never }),
    ]) {
      const { requests, ids } = await exportSpans(exporter);
      expect(requests.map((request) => request.contentEncoding)).toEqual(['gzip', 'gzip', 'gzip']);
      assertMapping(decodeAll(requests), ids);
    }
  });

  it('answers the SDK with an empty ExportTraceServiceResponse it accepts', async () => {
    const proto = encodeOtlpResponse('application/x-protobuf');
    expect(proto.contentType).toBe('application/x-protobuf');
    expect(
      loadProtos().exportTraceServiceResponse.toObject(loadProtos().exportTraceServiceResponse.decode(proto.body)),
    ).toEqual({});
    expect(encodeOtlpResponse('application/json; charset=utf-8').body.toString()).toBe('{}');
  });
});

function ingestError(run: () => unknown): IngestError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(IngestError);
    return error as IngestError;
  }
  throw new Error('decoding did not fail');
}

describe('decodeOtlpTraces edge cases', () => {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const span = (extra: Record<string, unknown>) =>
    json({
      resourceSpans: [
        {
          scopeSpans: [
            { spans: [{ traceId: 'AB01', spanId: 'cd02', startTimeUnixNano: '10', endTimeUnixNano: 25, ...extra }] },
          ],
        },
      ],
    });

  it('maps an unknown status code to state unset and keeps the code', () => {
    const [event] = decodeOtlpTraces(span({ status: { code: 7 } }), 'application/json', undefined, limits);
    expect(event).toMatchObject({ state: 'unset', status: 7, 'trace-id': 'ab01', metric: 15, time: 25 });
    expect(event?.service).toBeUndefined();
  });

  it('accepts enum names, string int64 and the non-finite double spellings of OTLP/JSON', () => {
    const body = span({
      kind: 'SPAN_KIND_CONSUMER',
      status: { code: 'STATUS_CODE_ERROR' },
      attributes: [
        { key: 'big', value: { intValue: '9007199254740993' } },
        { key: 'nan', value: { doubleValue: 'NaN' } },
        { key: 'bytes', value: { bytesValue: 'AQID' } },
        { key: 'nested', value: { kvlistValue: { values: [{ key: 'a', value: { stringValue: 'b' } }] } } },
        { key: 'empty', value: {} },
        { key: '__proto__', value: { stringValue: 'plain key' } },
      ],
    });
    const [event] = decodeOtlpTraces(body, 'application/json', 'identity', limits);
    expect(event).toMatchObject({ kind: 'consumer', 'span-kind': 5, state: 'error', status: 2 });
    const attributes = event?.attributes as Record<string, unknown>;
    expect(attributes.big).toBe(9007199254740992);
    expect(attributes.nan).toBeNaN();
    expect(attributes.bytes).toBe('AQID');
    expect(attributes.nested).toEqual({ a: 'b' });
    expect(attributes.empty).toBeNull();
    expect(Object.keys(attributes)).toContain('__proto__');
    expect(Object.getPrototypeOf(attributes)).toBe(Object.prototype);
  });

  it('rejects unsupported content types and encodings (415), bad bodies (400) and gzip bombs (413)', () => {
    expect(statusOf(ingestError(() => decodeOtlpTraces(span({}), 'text/plain', undefined, limits)))).toBe(415);
    expect(statusOf(ingestError(() => decodeOtlpTraces(span({}), 'application/json', 'br', limits)))).toBe(415);
    const badJson = ingestError(() =>
      decodeOtlpTraces(Buffer.from('{"resourceSpans":'), 'application/json', undefined, limits),
    );
    expect([statusOf(badJson), badJson.message]).toEqual([400, expect.stringMatching(/^Invalid JSON: /)]);
    const badProto = ingestError(() =>
      decodeOtlpTraces(Buffer.from([0x0a, 0x50, 0x01]), 'application/x-protobuf', undefined, limits),
    );
    expect([statusOf(badProto), badProto.message]).toEqual([
      400,
      expect.stringMatching(/^invalid ExportTraceServiceRequest protobuf: /),
    ]);
    const badGzip = ingestError(() => decodeOtlpTraces(Buffer.from('not gzip'), 'application/json', 'gzip', limits));
    expect([statusOf(badGzip), badGzip.message]).toEqual([400, expect.stringMatching(/^invalid gzip body: /)]);
    const bomb = gzipSync(Buffer.alloc(5 * 1024 * 1024, 0x20));
    expect(statusOf(ingestError(() => decodeOtlpTraces(bomb, 'application/json', 'gzip', limits)))).toBe(413);
    const wrongShape = ingestError(() =>
      decodeOtlpTraces(json({ resourceSpans: 'x' }), 'application/json', undefined, limits),
    );
    expect(wrongShape.message).toMatch(/not a list/);
  });
});

describe('attribute nesting limit', () => {
  const request = (depth: number) => {
    let value: Record<string, unknown> = { stringValue: 'leaf' };
    for (let i = 0; i < depth; i++)
      value = i % 2 === 0 ? { arrayValue: { values: [value] } } : { kvlistValue: { values: [{ key: 'k', value }] } };
    return {
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'deep', value }] },
          scopeSpans: [{ spans: [{ traceId: '00', spanId: '00', name: 's' }] }],
        },
      ],
    };
  };
  const protobuf = (depth: number) => {
    const type = loadProtos().exportTraceServiceRequest;
    return type.encode(type.fromObject(request(depth))).finish();
  };

  it('accepts attribute values nested up to MAX_ANY_VALUE_DEPTH arrays and kvlists', () => {
    expect(
      decodeOtlpTraces(protobuf(MAX_ANY_VALUE_DEPTH), 'application/x-protobuf', undefined, {
        maxDecompressedBytes: 1e6,
        eventDepth: MAX_ANY_VALUE_DEPTH,
      }),
    ).toHaveLength(1);
  });

  it('refuses deeper ones, in protobuf and JSON, naming the limit', () => {
    const message = `an attribute value nests arrays and kvlists deeper than the limit of ${MAX_ANY_VALUE_DEPTH} levels`;
    expect(() =>
      decodeOtlpTraces(protobuf(MAX_ANY_VALUE_DEPTH + 1), 'application/x-protobuf', undefined, {
        maxDecompressedBytes: 1e6,
        eventDepth: MAX_ANY_VALUE_DEPTH,
      }),
    ).toThrow(message);
    const json = Buffer.from(JSON.stringify(request(MAX_ANY_VALUE_DEPTH + 1)));
    expect(() =>
      decodeOtlpTraces(json, 'application/json', undefined, {
        maxDecompressedBytes: 1e6,
        eventDepth: MAX_ANY_VALUE_DEPTH,
      }),
    ).toThrow(message);
  });

  it('refuses a protobuf nested past what the decoder can follow with a 400, not a crash', () => {
    // 100,000 levels of AnyValue{array_value: ArrayValue{values: [...]}}: the headers are computed from the
    // inside out (each length is the size of what it wraps), then written outside in.
    const leaf = Buffer.from([0x0a, 0x01, 0x78]); // AnyValue{string_value: "x"}
    const headers: Buffer[] = [];
    let size = leaf.length;
    for (let i = 0; i < 100_000; i++) {
      const values = Buffer.concat([Buffer.from([0x0a]), varint(size)]); // ArrayValue.values = 1
      size += values.length;
      const arrayValue = Buffer.concat([Buffer.from([0x2a]), varint(size)]); // AnyValue.array_value = 5
      size += arrayValue.length;
      headers.push(values, arrayValue);
    }
    const inner = Buffer.concat([...headers.reverse(), leaf]);
    // KeyValue{key, value}
    const attribute = Buffer.concat([Buffer.from([0x0a, 0x01, 0x64, 0x12]), varint(inner.length), inner]);
    // Resource.attributes = 1
    const resource = Buffer.concat([Buffer.from([0x0a]), varint(attribute.length), attribute]);
    // ResourceSpans.resource = 1
    const resourceSpans = Buffer.concat([Buffer.from([0x0a]), varint(resource.length), resource]);
    // request.resource_spans = 1
    const body = Buffer.concat([Buffer.from([0x0a]), varint(resourceSpans.length), resourceSpans]);
    expect(() =>
      decodeOtlpTraces(body, 'application/x-protobuf', undefined, {
        maxDecompressedBytes: 1e8,
        eventDepth: MAX_ANY_VALUE_DEPTH,
      }),
    ).toThrow(IngestError);
  });
});

function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest > 0x7f) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}
