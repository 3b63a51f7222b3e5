import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { eventsProblem } from '../../../src/stream/event.ts';
import { IngestError } from '../../../src/stream/ingest/errors.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../../src/stream/lang/nesting.ts';
import { streamErrors } from '../../../src/stream/http/routes.ts';
import { loadProtos } from '../../../src/stream/ingest/protos.ts';
import { decodeRemoteWrite, encodeRemoteWrite } from '../../../src/stream/ingest/remote-write.ts';
import { snappyCompress, snappyUncompress } from '../../../src/stream/ingest/snappy.ts';

/** The HTTP status the stream routes answer for a decoder's error. */
const statusOf = (error: unknown): number | undefined => streamErrors.fromDomainError(error)?.statusCode;

const limits = { maxDecompressedBytes: 1024 * 1024 };

/** Encodes with protobufjs from the vendored .proto, independently of the decoder under test. */
function writeRequest(object: Record<string, unknown>): Buffer {
  const type = loadProtos().writeRequest;
  return snappyCompress(type.encode(type.fromObject(object)).finish());
}

function decodeError(body: Uint8Array): IngestError {
  try {
    decodeRemoteWrite(body, limits);
  } catch (error) {
    expect(error).toBeInstanceOf(IngestError);
    return error as IngestError;
  }
  throw new Error('decoding did not fail');
}

describe('decodeRemoteWrite', () => {
  it('maps every sample to an event: __name__ to service, labels to top-level keys, ms to ns', () => {
    const body = writeRequest({
      timeseries: [
        {
          labels: [
            { name: '__name__', value: 'http_requests_total' },
            { name: 'instance', value: 'web-1:9100' },
            { name: 'job', value: 'web' },
          ],
          samples: [
            { value: 12, timestamp: 1_735_047_872_000 },
            { value: 13.5, timestamp: 1_735_047_887_000 },
          ],
        },
        { labels: [{ name: '__name__', value: 'up' }], samples: [{ value: 1, timestamp: 1_735_047_872_123 }] },
      ],
    });
    expect(decodeRemoteWrite(body, limits)).toEqual([
      {
        service: 'http_requests_total',
        instance: 'web-1:9100',
        job: 'web',
        metric: 12,
        time: 1_735_047_872_000_000_000,
      },
      {
        service: 'http_requests_total',
        instance: 'web-1:9100',
        job: 'web',
        metric: 13.5,
        time: 1_735_047_887_000_000_000,
      },
      { service: 'up', metric: 1, time: 1_735_047_872_123_000_000 },
    ]);
  });

  it('keeps NaN (stale markers) and infinities, and negative timestamps', () => {
    const body = writeRequest({
      timeseries: [
        {
          labels: [{ name: '__name__', value: 'g' }],
          samples: [
            { value: Number.NaN, timestamp: 1000 },
            { value: Number.POSITIVE_INFINITY, timestamp: 2000 },
            { value: Number.NEGATIVE_INFINITY, timestamp: -3000 },
          ],
        },
      ],
    });
    const events = decodeRemoteWrite(body, limits);
    expect(events.map((event) => event.metric)).toEqual([
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
    ]);
    expect(events.map((event) => event.time)).toEqual([1e9, 2e9, -3e9]);
    // Events as every path after the input checks them (src/stream/event.ts): the input checked them once.
    expect(eventsProblem(events, { eventDepth: DEFAULT_MAX_EVENT_DEPTH, timed: true })).toBeNull();
  });

  it('lets __name__ win over a label called service, and leaves service out when there is no __name__', () => {
    const body = writeRequest({
      timeseries: [
        {
          labels: [
            { name: 'service', value: 'api' },
            { name: '__name__', value: 'm' },
          ],
          samples: [{ value: 1, timestamp: 1 }],
        },
        { labels: [{ name: 'service', value: 'api' }], samples: [{ value: 2, timestamp: 1 }] },
        { labels: [{ name: 'host', value: 'h' }], samples: [{ value: 3, timestamp: 1 }] },
      ],
    });
    expect(decodeRemoteWrite(body, limits)).toEqual([
      { service: 'm', metric: 1, time: 1e6 },
      { service: 'api', metric: 2, time: 1e6 },
      { host: 'h', metric: 3, time: 1e6 },
    ]);
  });

  it('reads labels written after the samples, skips metadata and exemplars, and ignores series without samples', () => {
    const root = protobuf.parse(`
      syntax = "proto3";
      message Label { string name = 1; string value = 2; }
      message Sample { double value = 1; int64 timestamp = 2; }
      message Exemplar { repeated Label labels = 1; double value = 2; int64 timestamp = 3; }
      message SamplesFirst { repeated Sample samples = 2; repeated Exemplar exemplars = 3; repeated Label labels = 1; }
      message Req { repeated SamplesFirst timeseries = 1; repeated Meta metadata = 3; }
      message Meta { int32 type = 1; string metric_family_name = 2; string help = 4; }
    `).root;
    const type = root.lookupType('Req');
    const raw = type
      .encode(
        type.fromObject({
          metadata: [{ type: 1, metricFamilyName: 'x', help: 'help text' }],
          timeseries: [
            {
              samples: [{ value: 4, timestamp: 5 }],
              exemplars: [{ labels: [{ name: 'trace_id', value: 'abc' }], value: 1, timestamp: 5 }],
              labels: [
                { name: '__name__', value: 'late' },
                { name: 'a', value: 'b' },
              ],
            },
            { labels: [{ name: '__name__', value: 'empty' }] },
          ],
        }),
      )
      .finish();
    expect(decodeRemoteWrite(snappyCompress(raw), limits)).toEqual([{ service: 'late', a: 'b', metric: 4, time: 5e6 }]);
  });

  it('agrees with protobufjs decoding the vendored proto on many series', () => {
    const timeseries = Array.from({ length: 300 }, (_, i) => ({
      labels: [
        { name: '__name__', value: `metric_${i % 7}` },
        { name: 'instance', value: `host-${i % 13}` },
        { name: 'ünïcode', value: `välue ${i}` },
      ],
      samples: Array.from({ length: (i % 3) + 1 }, (_, j) => ({
        value: i * 1.25 - j,
        timestamp: 1_700_000_000_000 + i * 1000 + j,
      })),
    }));
    const body = writeRequest({ timeseries });
    const reference = loadProtos().writeRequest.toObject(loadProtos().writeRequest.decode(snappyUncompress(body)), {
      longs: Number,
    }) as {
      timeseries: { labels: { name: string; value: string }[]; samples: { value: number; timestamp: number }[] }[];
    };
    const expected = reference.timeseries.flatMap((series) =>
      series.samples.map((sample) => {
        const event: Record<string, unknown> = {};
        for (const label of series.labels) event[label.name === '__name__' ? 'service' : label.name] = label.value;
        return { ...event, metric: sample.value, time: sample.timestamp * 1e6 };
      }),
    );
    const events = decodeRemoteWrite(body, limits);
    expect(events).toHaveLength(600);
    expect(events).toEqual(expected);
    // Twice: the second decoding goes through the label-set cache and must give equal, distinct objects.
    const again = decodeRemoteWrite(body, limits);
    expect(again).toEqual(expected);
    expect(again[0]).not.toBe(events[0]);
  });

  it('rejects a body that declares more than the decompressed limit before inflating it (413)', () => {
    const big = writeRequest({
      timeseries: [{ labels: [{ name: '__name__', value: 'x'.repeat(4096) }], samples: [{ value: 1, timestamp: 1 }] }],
    });
    let error: unknown;
    try {
      decodeRemoteWrite(big, { maxDecompressedBytes: 1000 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(IngestError);
    expect(statusOf(error)).toBe(413);
    expect((error as IngestError).message).toMatch(/over the limit of 1000 bytes/);
    // A forged header claiming 4 GB is refused without allocating: snappyjs reads lengths past 2^31 as a
    // broken header, so it is a malformed block (400) rather than an oversized one.
    const forged = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]);
    expect(() => decodeRemoteWrite(forged, limits)).toThrow(/^invalid snappy block: /);
  });

  it('answers 400 "invalid snappy block" on a body that is not snappy', () => {
    const error = decodeError(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x01, 0x02]));
    expect(statusOf(error)).toBe(400);
    expect(error.message).toMatch(/^invalid snappy block: /);
    expect(decodeError(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80])).message).toMatch(/^invalid snappy block: /);
  });

  it('answers 400 "invalid WriteRequest protobuf" on valid snappy around a broken protobuf', () => {
    // Field 1, length-delimited, claiming 100 bytes with only 3 present.
    const truncated = decodeError(snappyCompress(Buffer.from([0x0a, 100, 1, 2, 3])));
    expect(statusOf(truncated)).toBe(400);
    expect(truncated.message).toMatch(/^invalid WriteRequest protobuf: /);
    // Wire type 7 does not exist.
    expect(decodeError(snappyCompress(Buffer.from([0x0f, 0x01]))).message).toMatch(/^invalid WriteRequest protobuf: /);
    // A sample whose double is cut short.
    const sample = Buffer.from([0x0a, 0x04, 0x12, 0x02, 0x09, 0x01]);
    expect(decodeError(snappyCompress(sample)).message).toMatch(/^invalid WriteRequest protobuf: /);
  });

  it('gives no events for an empty request', () => {
    expect(decodeRemoteWrite(snappyCompress(Buffer.alloc(0)), limits)).toEqual([]);
  });
});

describe('encodeRemoteWrite', () => {
  it('writes a snappy WriteRequest with labels sorted by name, __name__ first', () => {
    const body = encodeRemoteWrite([
      { labels: { zone: 'b', __name__: 'cpu', host: 'h1' }, samples: [{ value: 0.5, timestampMs: 1_700_000_000_000 }] },
    ]);
    const decoded = loadProtos().writeRequest.toObject(loadProtos().writeRequest.decode(snappyUncompress(body)), {
      longs: Number,
    });
    expect(decoded).toEqual({
      timeseries: [
        {
          labels: [
            { name: '__name__', value: 'cpu' },
            { name: 'host', value: 'h1' },
            { name: 'zone', value: 'b' },
          ],
          samples: [{ value: 0.5, timestamp: 1_700_000_000_000 }],
        },
      ],
    });
  });
});
