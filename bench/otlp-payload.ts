/**
 * The OTLP trace export both OTLP benchmarks send (decode-only and through the server): `spans` spans per
 * request, each with four attributes (one double), one span event with an attribute, a link on every tenth
 * span and an error status on every fiftieth, as an instrumented HTTP service exports them. Span ids and times
 * are distinct across requests so that an index keyed by span id keeps growing.
 */
import { loadProtos } from '../src/stream/ingest/protos.ts';

function id(length: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length }, (_, i) => (seed * 31 + i * 7) & 0xff));
}

export function otlpExportRequest(offset: number, spanCount: number): Buffer {
  const start = 1_735_000_000_000_000_000;
  const spans = Array.from({ length: spanCount }, (_, i) => {
    const n = offset * spanCount + i;
    return {
      traceId: id(16, offset + i),
      spanId: id(8, n),
      parentSpanId: i % 4 === 0 ? Buffer.alloc(0) : id(8, offset + i + 2),
      name: `GET /api/items/${i % 20}`,
      kind: 2,
      startTimeUnixNano: start + n * 1000,
      endTimeUnixNano: start + n * 1000 + 250_000,
      attributes: [
        { key: 'http.method', value: { stringValue: 'GET' } },
        { key: 'http.status_code', value: { intValue: 200 } },
        { key: 'http.route', value: { stringValue: '/api/items/:id' } },
        { key: 'sampling.ratio', value: { doubleValue: 0.25 } },
      ],
      events: [
        {
          timeUnixNano: start + n * 1000 + 100,
          name: 'cache.miss',
          attributes: [{ key: 'key', value: { stringValue: `k${i}` } }],
        },
      ],
      links: i % 10 === 0 ? [{ traceId: id(16, i), spanId: id(8, i) }] : [],
      status: { code: i % 50 === 0 ? 2 : 1 },
    };
  });
  const type = loadProtos().exportTraceServiceRequest;
  const message = type.fromObject({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'checkout' } }] },
        scopeSpans: [{ scope: { name: '@opentelemetry/instrumentation-http', version: '0.57.0' }, spans }],
      },
    ],
  });
  return Buffer.from(type.encode(message).finish());
}
