import { describe, expect, it } from 'vitest';
import { eventsProblem } from '../../../src/stream/event.ts';
import { loadProtos } from '../../../src/stream/ingest/protos.ts';
import { DEFAULT_MAX_EVENT_DEPTH } from '../../../src/stream/lang/nesting.ts';
import { decodeRiemannMsg, encodeRiemannReply, RiemannDecodeError } from '../../../src/stream/ingest/riemann.ts';

const RECEIVED = 1_700_000_000_000_000_000;

/** Encodes with protobufjs from the vendored .proto, independently of the decoder under test. */
function msg(object: Record<string, unknown>): Buffer {
  const type = loadProtos().riemannMsg;
  return Buffer.from(type.encode(type.fromObject(object)).finish());
}

function decode(buf: Buffer) {
  return decodeRiemannMsg(buf, 0, buf.length, RECEIVED);
}

function decodeError(buf: Buffer): string {
  try {
    decode(buf);
  } catch (error) {
    expect(error).toBeInstanceOf(RiemannDecodeError);
    return (error as Error).message;
  }
  throw new Error('decoding did not fail');
}

describe('decodeRiemannMsg', () => {
  it('puts every field and attribute at the top level, time_micros to ns', () => {
    const { events, hasQuery } = decode(
      msg({
        events: [
          {
            host: 'web-1',
            service: 'http latency',
            state: 'ok',
            description: 'p99',
            tags: ['prod', 'eu'],
            ttl: 60,
            timeMicros: 1_735_047_872_123_456,
            time: 1_000,
            metricD: 1.5,
            attributes: [
              { key: 'stream', value: 'web' },
              { key: 'region', value: 'eu-west' },
            ],
          },
        ],
      }),
    );
    expect(hasQuery).toBe(false);
    expect(events).toEqual([
      {
        host: 'web-1',
        service: 'http latency',
        state: 'ok',
        description: 'p99',
        tags: ['prod', 'eu'],
        ttl: 60,
        time: 1_735_047_872_123_456_000,
        metric: 1.5,
        stream: 'web',
        region: 'eu-west',
      },
    ]);
    // Events as every path after the input checks them (src/stream/event.ts): the input checked them once.
    expect(eventsProblem(events, { eventDepth: DEFAULT_MAX_EVENT_DEPTH, timed: true })).toBeNull();
  });

  it('takes the metric from sint64, else double, else float, and the time from seconds, else the receive time', () => {
    const { events } = decode(
      msg({
        events: [
          { metricSint64: -42, metricD: 2.5, metricF: 3.5, time: 1_735_047_872 },
          { metricD: 2.5, metricF: 3.5 },
          { metricF: 1.1 },
          { metricSint64: '9007199254740991' },
          { metricSint64: '-9007199254740991' },
          {},
        ],
      }),
    );
    expect(events.map((event) => event.metric)).toEqual([
      -42,
      2.5,
      Math.fround(1.1),
      9007199254740991,
      -9007199254740991,
      undefined,
    ]);
    expect(events.map((event) => event.time)).toEqual([
      1_735_047_872e9,
      RECEIVED,
      RECEIVED,
      RECEIVED,
      RECEIVED,
      RECEIVED,
    ]);
    expect('metric' in (events[5] ?? {})).toBe(false);
  });

  it('agrees with protobufjs on a mixed message, and skips deprecated states', () => {
    const object = {
      ok: true,
      states: [{ host: 'old', service: 'state', once: true }],
      events: Array.from({ length: 20 }, (_, i) => ({
        host: `h${i}`,
        service: `s${i % 3}`,
        metricSint64: i * 1000 - 7,
        ttl: i + 0.5,
        tags: i % 2 ? ['odd'] : [],
        attributes: [{ key: `k${i}`, value: `v${i}` }],
        timeMicros: 1_735_047_872_000_000 + i,
      })),
    };
    const buf = msg(object);
    const reference = loadProtos().riemannMsg.toObject(loadProtos().riemannMsg.decode(buf), { longs: Number }) as {
      events: {
        host: string;
        service: string;
        metricSint64: number;
        ttl: number;
        tags?: string[];
        attributes: { key: string; value: string }[];
        timeMicros: number;
      }[];
    };
    const expected = reference.events.map((e) => ({
      host: e.host,
      service: e.service,
      metric: e.metricSint64,
      ttl: e.ttl,
      ...(e.tags && e.tags.length > 0 ? { tags: e.tags } : {}),
      ...Object.fromEntries(e.attributes.map((a) => [a.key, a.value])),
      time: e.timeMicros * 1000,
    }));
    expect(decode(buf).events).toEqual(expected);
  });

  it('lets the Event fields win over attributes of the same name', () => {
    const { events } = decode(
      msg({
        events: [
          {
            host: 'real',
            time: 10,
            attributes: [
              { key: 'host', value: 'fake' },
              { key: 'time', value: 'x' },
            ],
          },
        ],
      }),
    );
    expect(events[0]).toEqual({ host: 'real', time: 10e9 });
  });

  it('decodes UTF-8 and long strings as well as short ASCII ones', () => {
    const long = 'a-service-name-longer-than-the-short-string-path';
    const { events } = decode(
      msg({
        events: [{ service: 'café ☕', host: long, description: '', attributes: [{ key: 'clé', value: 'vålue' }] }],
      }),
    );
    expect(events[0]).toEqual({ service: 'café ☕', host: long, description: '', clé: 'vålue', time: RECEIVED });
  });

  it('reports a query', () => {
    expect(decode(msg({ query: { string: 'service = "x"' } })).hasQuery).toBe(true);
  });

  it('decodes a frame inside a larger buffer', () => {
    const body = msg({ events: [{ service: 'inner' }] });
    const framed = Buffer.concat([Buffer.from([1, 2, 3]), body, Buffer.from([9, 9])]);
    expect(decodeRiemannMsg(framed, 3, 3 + body.length, RECEIVED).events).toEqual([
      { service: 'inner', time: RECEIVED },
    ]);
  });

  it('refuses truncated and malformed messages with a clear error', () => {
    const good = msg({ events: [{ service: 'svc', host: 'h' }] });
    expect(decodeError(good.subarray(0, good.length - 2))).toMatch(/malformed Riemann Msg: .*(past|truncated)/);
    expect(decodeError(Buffer.from([0x32, 0x01, 0x08]))).toMatch(/truncated varint/);
    expect(decodeError(Buffer.from([0x3f]))).toMatch(/unsupported wire type 7/);
    expect(decodeError(Buffer.from([0x31, 0, 0, 0, 0, 0, 0, 0, 0]))).toMatch(/field 6 has wire type 1/);
    expect(decodeError(Buffer.from([0x32, 0x04, 0x4a, 0x02, 0x12, 0x00]))).toMatch(
      /attribute without its required key/,
    );
  });
});

describe('encodeRiemannReply', () => {
  it('frames {ok: true} and {ok: false, error}', () => {
    const type = loadProtos().riemannMsg;
    const ok = encodeRiemannReply();
    expect(ok.readUInt32BE(0)).toBe(ok.length - 4);
    expect(type.toObject(type.decode(ok.subarray(4)))).toEqual({ ok: true });
    const error = encodeRiemannReply('queries are not supported');
    expect(type.toObject(type.decode(error.subarray(4)))).toEqual({ ok: false, error: 'queries are not supported' });
  });
});
