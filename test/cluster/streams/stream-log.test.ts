import { Packr } from 'msgpackr';
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { type EventCodec, loadEventCodec } from '../../../src/cluster/streams/event-codec.ts';
import {
  decodeLogHead,
  encodeLogMessage,
  eventsOfPartition,
  type LogDamage,
  type LogHead,
} from '../../../src/cluster/streams/log-message.ts';
import { type Event, eventsProblem } from '../../../src/stream/event.ts';
import { OwnMessages, type OwnParts } from '../../../src/cluster/streams/own-messages.ts';
import { type EncodedPack, encodeBatch, type LogTarget, partitionOf } from '../../../src/cluster/streams/log-batch.ts';
import { ClusterEventLog, EventLogMetrics, streamId, streamSubject } from '../../../src/cluster/streams/stream-log.ts';
import { mergeSearches, mergeStats } from '../../../src/cluster/streams/stream-queries.ts';

describe('partitionOf', () => {
  it('puts the events of one key in one partition, and spreads keys over every partition', () => {
    const seen = new Map<number, number>();
    for (let i = 0; i < 6_400; i++) {
      const partition = partitionOf({ host: `host-${i}`, service: 'cpu', metric: i }, ['host'], 64);
      expect(partition).toBe(partitionOf({ host: `host-${i}`, service: 'disk' }, ['host'], 64));
      seen.set(partition, (seen.get(partition) ?? 0) + 1);
    }
    expect(seen.size).toBe(64);
    // 100 per partition on average; none starved or flooded.
    for (const count of seen.values()) expect(count).toBeGreaterThan(50);
    for (const count of seen.values()) expect(count).toBeLessThan(160);
  });

  it('tells field boundaries apart, and treats a missing field as empty', () => {
    const fields = ['host', 'service'];
    const spread = new Set<number>();
    for (let i = 0; i < 50; i++)
      spread.add(
        partitionOf({ host: `a${i}`, service: 'bc' }, fields, 1024) -
          partitionOf({ host: `a${i}b`, service: 'c' }, fields, 1024),
      );
    expect(spread.has(0) && spread.size === 1).toBe(false);
    expect(partitionOf({ service: 'x' }, fields, 64)).toBe(partitionOf({ host: '', service: 'x' }, fields, 64));
  });

  it('names subjects with a token NATS accepts whatever the stream name', () => {
    expect(streamSubject('my.stream-1')).toMatch(/^vigie\.events\.[0-9a-f]{16}$/);
    expect(streamId('a.b')).not.toBe(streamId('a_b'));
  });
});

describe('merging reads of several nodes', () => {
  it('cuts a merged search at the limit and says so', () => {
    const merged = mergeSearches(
      [
        { events: [{ host: 'a' }, { host: 'b' }], truncated: false },
        { events: [{ host: 'c' }], truncated: false },
      ],
      2,
    );
    expect(merged).toEqual({ events: [{ host: 'a' }, { host: 'b' }], truncated: true });
    expect(mergeSearches([{ events: [{ host: 'a' }], truncated: true }], 10).truncated).toBe(true);
    expect(
      mergeSearches(
        [
          { events: [{ host: 'a' }], truncated: false },
          { events: [], truncated: false },
        ],
        10,
      ),
    ).toEqual({ events: [{ host: 'a' }], truncated: false });
  });

  it('adds index sizes and keeps the newest current time', () => {
    const merged = mergeStats([
      { s: { size: 2, currentTime: 10 } },
      { s: { size: 3, currentTime: 7 }, t: { size: 1, currentTime: 1 } },
    ]);
    expect(merged.get('s')).toEqual({ size: 5, currentTime: 10 });
    expect(merged.get('t')).toEqual({ size: 1, currentTime: 1 });
  });
});

describe('messages of the event log', () => {
  let codec: EventCodec;
  beforeAll(async () => {
    codec = await loadEventCodec();
  });
  const head = (data: Buffer, partitions = 64) => decodeLogHead(data, partitions) as LogHead;
  const damage = (data: Buffer, partitions = 64) => decodeLogHead(data, partitions) as LogDamage;
  const raw = (text: string) => Buffer.from(text);
  /** A partition's events in a message, as a reader gets them. */
  const read = (data: Buffer, partition: number, depth = 8) => {
    const { encoding, packs } = head(data);
    return eventsOfPartition(data, encoding, packs, partition, depth, codec);
  };
  /** A message of an earlier head: one part per partition, each MessagePack arrays back to back (or JSON). */
  const parts = (list: [number, Buffer][], encoding?: string) =>
    Buffer.concat([
      raw(
        `${JSON.stringify({ stream: 's', encoding, parts: list.map(([partition, bytes]) => [partition, bytes.length]) })}\n`,
      ),
      ...list.map(([, bytes]) => bytes),
    ]);

  it('packs the partitions of one node together, each read by its slice, non-ASCII included', () => {
    const data = encodeLogMessage('s', [
      {
        pack: codec.pack([
          { host: 'a', time: 1 },
          { host: 'b', time: 1.7e18, metric: 2 ** 40, ratio: 0.5 },
          { host: 'é€𝄞', time: 2, tags: ['x'], attributes: { k: 'v' } },
        ]),
        layout: [3, 1, 0, 2],
      },
      { pack: codec.pack([{ host: 'c', time: 3 }]), layout: [9, 1] },
      // A later batch of the turn: partition 3 again.
      { pack: codec.pack([{ host: 'd', time: 4 }]), layout: [3, 1] },
    ]);
    const decoded = head(data);
    expect(decoded.stream).toBe('s');
    expect(decoded.encoding).toBe('msgpack');
    expect(decoded.packs.map((pack) => pack.partitions)).toEqual([[3, 0], [9], [3]]);
    expect(read(data, 0)).toEqual([
      { host: 'b', time: 1.7e18, metric: 2 ** 40, ratio: 0.5 },
      { host: 'é€𝄞', time: 2, tags: ['x'], attributes: { k: 'v' } },
    ]);
    expect(read(data, 3)).toEqual([
      { host: 'a', time: 1 },
      { host: 'd', time: 4 },
    ]);
    expect(read(data, 9)).toEqual([{ host: 'c', time: 3 }]);
  });

  it("packs each owner's partitions of a batch together, in the order they first appear; a pack each when owners are unknown", () => {
    const events = Array.from({ length: 200 }, (_, i) => ({ host: `h${i}`, time: i }));
    const target = { name: 's', partitionBy: ['host'] };
    const byOwner: EncodedPack[] = [];
    encodeBatch(codec, target, events, 8, byOwner, null, () => [0, 1, 2, 0, 1, 2, 0, 1]);
    expect(byOwner).toHaveLength(3);
    for (const { layout } of byOwner) {
      const named = layout.filter((_, i) => i % 2 === 0);
      expect(new Set(named.map((partition) => partition % 3)).size).toBe(1);
    }
    const data = encodeLogMessage('s', byOwner);
    for (let partition = 0; partition < 8; partition++) {
      expect(read(data, partition)).toEqual(events.filter((event) => partitionOf(event, ['host'], 8) === partition));
    }
    const unknown: EncodedPack[] = [];
    encodeBatch(codec, target, events, 8, unknown, null, () => null);
    expect(unknown).toHaveLength(8);
    // Owners of another partition count (a stream that just gained :partition-by): a pack each, never a wrong slice.
    const stale: EncodedPack[] = [];
    encodeBatch(codec, target, events, 8, stale, null, () => [0, 1]);
    expect(stale).toHaveLength(8);
  });

  it('reads the parts of earlier heads: JSON before MessagePack, and MessagePack arrays back to back', () => {
    const body = '[{"host":"a","time":1},{"host":"é","time":2}]';
    const data = raw(`${JSON.stringify({ stream: 's', parts: [[4, Buffer.byteLength(body)]] })}\n${body}`);
    expect(head(data).encoding).toBe('json');
    expect(head(data).packs).toEqual([{ start: 32, end: 32 + Buffer.byteLength(body), partitions: [4], counts: [-1] }]);
    expect(read(data, 4)).toEqual([
      { host: 'a', time: 1 },
      { host: 'é', time: 2 },
    ]);
    const packed = parts(
      [
        [3, Buffer.concat([codec.pack([{ host: 'a', time: 1 }]), codec.pack([{ host: 'b', time: 2 }])])],
        [0, codec.pack([])],
      ],
      'msgpack',
    );
    expect(read(packed, 3)).toEqual([
      { host: 'a', time: 1 },
      { host: 'b', time: 2 },
    ]);
    expect(read(packed, 0)).toEqual([]);
  });

  it('refuses a head that lies, naming the problem', () => {
    const body = '[{"host":"a"}]';
    const lie = (list: unknown, text = body, stream: unknown = 's') =>
      raw(`${JSON.stringify({ stream, parts: list })}\n${text}`);
    expect(damage(raw('no head at all'))).toEqual({
      reason: 'shape',
      problem: 'no head: no newline in its first 14 bytes',
    });
    expect(damage(raw(`${' '.repeat(70_000)}\n[]`)).problem).toBe('no head: no newline in its first 65536 bytes');
    expect(damage(raw('{"stream":\n[]')).reason).toBe('not_json');
    expect(damage(raw('[1,2]\n')).problem).toBe('its head is not {"stream": <name>, "packs": [...]}');
    expect(damage(raw('{"stream":"s","encoding":"gzip","packs":[]}\n')).problem).toBe(
      'its head names the encoding "gzip": this node reads "msgpack" and "json"',
    );
    expect(damage(lie([[1, 14]], body, 7)).reason).toBe('shape');
    expect(damage(lie([[64, 14]])).problem).toBe('its head names partition 64: the stream has 64');
    expect(damage(lie([[-1, 14]])).problem).toBe('its head names partition -1: the stream has 64');
    expect(damage(lie([['1', 14]])).problem).toBe('its head names partition "1": the stream has 64');
    expect(damage(lie([[1]])).problem).toBe('its head names partition undefined: the stream has 64');
    expect(damage(lie([[1, 0.5]])).problem).toBe("partition 1's part has 0.5 bytes");
    expect(
      damage(
        lie([
          [1, 7],
          [1, 7],
        ]),
      ).problem,
    ).toBe('partition 1 has two parts');
    expect(damage(lie([[1, 1e9]])).problem).toBe(
      'its packs add up to 1000000000 bytes, the message holds 14 after its head',
    );
    expect(damage(lie([[1, 10]])).problem).toBe('its packs add up to 10 bytes, the message holds 14 after its head');
    expect(head(lie([[1, 14]]), 2).packs).toEqual([{ start: 32, end: 46, partitions: [1], counts: [-1] }]);
    expect(damage(lie([[1, 14]]), 1).problem).toBe('its head names partition 1: the stream has 1');

    const pack = codec.pack([
      { host: 'a', time: 1 },
      { host: 'b', time: 2 },
    ]);
    const packs = (list: unknown, encoding = 'msgpack') =>
      Buffer.concat([raw(`${JSON.stringify({ stream: 's', encoding, packs: list })}\n`), pack]);
    expect(damage(packs([[pack.length, 1, 2]], 'json')).problem).toBe(
      'its head lists packs of JSON: packs are MessagePack',
    );
    expect(damage(packs([[pack.length]])).problem).toBe(
      `a pack is [${pack.length}]: not [<bytes>, <partition>, <count>, ...]`,
    );
    expect(damage(packs([[pack.length, 1]])).problem).toMatch(/^a pack is .*: not \[<bytes>/);
    expect(damage(packs(['x'])).problem).toBe('a pack is "x": not [<bytes>, <partition>, <count>, ...]');
    expect(damage(packs([[0, 1, 2]])).problem).toBe('a pack has 0 bytes');
    expect(damage(packs([[pack.length, 1, 0]])).problem).toBe('partition 1 has 0 events in a pack');
    expect(damage(packs([[pack.length, 1, 1.5]])).problem).toBe('partition 1 has 1.5 events in a pack');
    expect(damage(packs([[pack.length, 1, 1, 1, 1]])).problem).toBe('partition 1 is named twice in a pack');
    expect(damage(packs([[pack.length, 99, 2]])).problem).toBe('its head names partition 99: the stream has 64');
    expect(damage(packs([[pack.length + 1, 1, 2]])).problem).toBe(
      `its packs add up to ${pack.length + 1} bytes, the message holds ${pack.length} after its head`,
    );
    // A pack holding other than its head says refuses its partitions' events, each of them.
    expect(read(packs([[pack.length, 1, 1, 2, 2]]), 1)).toEqual({
      reason: 'invalid',
      problem: 'its pack holds 2 events, its head says 3',
    });
    expect(read(packs([[pack.length, 1, 1, 2, 2]]), 2)).toEqual({
      reason: 'invalid',
      problem: 'its pack holds 2 events, its head says 3',
    });
    expect(read(packs([[pack.length, 1, 1, 2, 1]]), 2)).toEqual([{ host: 'b', time: 2 }]);
  });

  it("refuses a JSON part that is not events, under the reader's streams.max-event-depth", () => {
    const part = (text: string) =>
      read(raw(`${JSON.stringify({ stream: 's', parts: [[0, Buffer.byteLength(text)]] })}\n${text}`), 0, 3);
    expect(part('[{"host":')).toMatchObject({ reason: 'not_json' });
    expect(part('{"host":"a"}')).toEqual({ reason: 'invalid', problem: 'events must be an array of objects' });
    expect(part('[null]')).toEqual({ reason: 'invalid', problem: 'events[0] must be an object, got null' });
    const problem =
      'events[0].deep nests objects and arrays deeper than the limit of 3 levels (streams.max-event-depth)';
    expect(part('[{"host":"a","time":1,"deep":{"b":{"c":{"d":1}}}}]')).toEqual({ reason: 'invalid', problem });
    expect(eventsProblem([{ host: 'a', time: 1, deep: { b: { c: { d: 1 } } } }], { eventDepth: 3 })).toBe(problem);
    expect(eventsProblem([{ host: 'a', time: 1, deep: { b: { c: { d: 1 } } } }], { eventDepth: 4 })).toBeNull();
  });

  it('checks what it reads as events already taken: their time is a number, never stamped or converted again', () => {
    const part = (events: unknown[]) =>
      read(parts([[0, codec.pack(events as Event[])]], 'msgpack'), 0, 8) as Event[] | LogDamage;
    expect(part([{ host: 'a' }])).toEqual({
      reason: 'invalid',
      problem: 'events[0].time must be a number of epoch nanoseconds, got undefined',
    });
    expect(
      part([
        { host: 'a', time: 1 },
        { host: 'b', time: '2024-12-24T13:44:32Z' },
      ]),
    ).toEqual({
      reason: 'invalid',
      problem: 'events[1].time must be a number of epoch nanoseconds, got "2024-12-24T13:44:32Z"',
    });
    expect(part([{ host: 'a', time: Number.NaN }])).toMatchObject({ reason: 'invalid' });
    expect(part([{ host: 'a', time: 1, ttl: '60' }])).toEqual({
      reason: 'invalid',
      problem: 'events[0].ttl must be a number of seconds, got "60"',
    });
    expect(part([{ host: 'a', time: 1, ttl: 60 }])).toEqual([{ host: 'a', time: 1, ttl: 60 }]);
  });

  it('refuses MessagePack that is not events, or holds what JSON cannot, and reads the next one still', () => {
    const part = (...packs: Buffer[]) => read(parts([[0, Buffer.concat(packs)]], 'msgpack'), 0, 3);
    // What a lying peer can write: every type MessagePack and msgpackr's extensions have.
    const anything = new Packr({ moreTypes: true, useRecords: false });
    const valid = codec.pack([{ host: 'a', time: 1 }]);
    expect(part(valid.subarray(0, valid.length - 2))).toMatchObject({ reason: 'not_msgpack' });
    expect(part(Buffer.alloc(100_000, 0x91))).toMatchObject({ reason: 'not_msgpack' });
    expect(part(anything.pack({ host: 'a' }))).toEqual({
      reason: 'invalid',
      problem: 'events must be an array of objects',
    });
    expect(part(valid, anything.pack({ host: 'a' }))).toEqual({
      reason: 'invalid',
      problem: 'events must be an array of objects',
    });
    expect(part(anything.pack([null]))).toEqual({
      reason: 'invalid',
      problem: 'events[0] must be an object, got null',
    });
    expect(part(anything.pack([{ host: 'a', time: 1, deep: { b: { c: { d: 1 } } } }]))).toMatchObject({
      reason: 'invalid',
      problem: expect.stringContaining('deeper than the limit of 3 levels'),
    });
    const cases: [unknown, string][] = [
      [new Date(0), 'Date'],
      [/a+/, 'RegExp'],
      [new Set([1]), 'Set'],
      [new Error('x'), 'Error'],
      [new Uint8Array([1, 2]), 'Uint8Array'],
    ];
    // A 64-bit integer is a number, as JSON.parse would give it, never a BigInt.
    expect(part(anything.pack([{ host: 'a', time: 1, field: 2n ** 64n - 1n }]))).toEqual([
      { host: 'a', time: 1, field: 2 ** 64 },
    ]);
    for (const [value, kind] of cases) {
      expect(part(anything.pack([{ host: 'a', time: 1, field: value }]))).toEqual({
        reason: 'invalid',
        problem: `events[0].field is a ${kind}, which JSON cannot hold`,
      });
      expect(part(anything.pack([{ host: 'a', time: 1, tags: ['ok', value] }]))).toEqual({
        reason: 'invalid',
        problem: `events[0].tags[1] is a ${kind}, which JSON cannot hold`,
      });
      expect(part(anything.pack([{ host: 'a', time: 1, attributes: { inner: value } }]))).toEqual({
        reason: 'invalid',
        problem: `events[0].attributes.inner is a ${kind}, which JSON cannot hold`,
      });
    }
    expect(part(anything.pack([new Date(0)]))).toEqual({
      reason: 'invalid',
      problem: 'events[0] is a Date, which JSON cannot hold',
    });
    // 0xc1 is never used by MessagePack: msgpackr reads it as an object of its own.
    expect(part(Buffer.concat([Buffer.from([0x91, 0x81, 0xa1, 0x78]), Buffer.from([0xc1])]))).toMatchObject({
      reason: 'invalid',
      problem: expect.stringMatching(/^events\[0\]\.x is a /),
    });
    // A key that would reach Object.prototype stays a key of the event.
    const proto = part(
      Buffer.concat([
        Buffer.from([0x91, 0x83, 0xa9]),
        Buffer.from('__proto__'),
        Buffer.from([0x81, 0xa1, 0x70, 0x01, 0xa4]),
        Buffer.from('host'),
        Buffer.from([0xa1, 0x61, 0xa4]),
        Buffer.from('time'),
        Buffer.from([0x01]),
      ]),
    ) as Event[];
    expect(({} as Record<string, unknown>).p).toBeUndefined();
    expect(proto[0]?.host).toBe('a');
    expect(part(valid)).toEqual([{ host: 'a', time: 1 }]);
  });
});

describe("a taker's own partitions", () => {
  let codec: EventCodec;
  beforeAll(async () => {
    codec = await loadEventCodec();
  });

  /** A log of 8 partitions whose publishes are kept, `runsHere` the partitions that run on this node. */
  const logWith = (
    runsHere: readonly number[],
    streams: LogTarget[] = [{ name: 's', partitionBy: ['host'] }],
    maxPending = 1_000_000,
    owners: readonly number[] | null = null,
  ) => {
    const published: { data: Buffer; done: (error?: Error) => void }[] = [];
    const own = new OwnMessages();
    const log = new ClusterEventLog({
      publisher: { publish: (_subject, data, done) => published.push({ data: data as Buffer, done }) },
      codec,
      partitions: 8,
      resolve: (target) => (target === 'default' ? streams : streams.filter((stream) => stream.name === target)),
      maxPending,
      onFull: () => undefined,
      metrics: new EventLogMetrics(new Registry()),
      own: { messages: own, runsHere: (stream, partition) => stream === 's' && runsHere.includes(partition) },
      owners: () => owners,
      unknownStream: (name) => new Error(`no stream ${name}`),
      invalidBatch: (message) => new Error(message),
    });
    return { log, own, published };
  };
  const events = () => Array.from({ length: 40 }, (_, i) => ({ host: `h${i}`, time: i, metric: i / 2 }));
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('keeps the events of a push for the partitions that run here, until the message is read back once', async () => {
    // Partitions 1 and 5 run here: packed together, apart from the others'.
    const { log, own, published } = logWith([1, 5], undefined, undefined, [1, 0, 2, 1, 2, 0, 1, 2]);
    // Two pushes in one turn: one message, each partition's events in two packs.
    const pushed = [...events(), ...events()];
    const acked = log.submit('s', pushed.slice(0, 40), 'stream');
    void log.submit('s', pushed.slice(40), 'stream');
    await turn();
    expect(published).toHaveLength(1);
    const data = (published[0] as { data: Buffer }).data;
    // A copy of the bytes, as a delivery is: matched by what it holds.
    const parts = own.take(Buffer.from(data)) as OwnParts;
    expect([...parts.keys()].sort()).toEqual([1, 5]);
    for (const [partition, packs] of parts) {
      expect(packs).toHaveLength(2);
      const kept = packs.flat();
      expect(kept.length).toBeGreaterThan(0);
      // The very objects pushed, and what decoding the part gives.
      for (const event of kept) expect(pushed).toContain(event);
      const { packs: written } = decodeLogHead(data, 8) as LogHead;
      expect(eventsOfPartition(data, 'msgpack', written, partition, 8, codec)).toEqual(kept);
    }
    expect(
      (decodeLogHead(data, 8) as LogHead).packs.map((pack) => [...pack.partitions].sort().join(',')).sort(),
    ).toEqual(['0,3,6', '0,3,6', '1,5', '1,5', '2,4,7', '2,4,7']);
    expect(own.take(Buffer.from(data))).toBeUndefined();
    (published[0] as { done: () => void }).done();
    await expect(acked).resolves.toMatchObject({ errorCount: 0 });
  });

  it('keeps the events of every input alike: the log never asks which input took them', async () => {
    for (const input of ['remote-write', 'riemann-tcp', 'otlp', 'fluentbit', 'healthcheck-exporter']) {
      const { log, own, published } = logWith([1, 5]);
      void log.submit('s', events(), input);
      await turn();
      expect(published).toHaveLength(1);
      expect([...(own.take((published[0] as { data: Buffer }).data)?.keys() ?? [])].sort(), input).toEqual([1, 5]);
    }
  });

  it('keeps nothing of a reinjection, of a push to several streams, or when no partition runs here', async () => {
    const reinjected = logWith([1, 5]);
    reinjected.log.forward('s', { host: 'h1', time: 1 });
    await turn();
    expect(reinjected.published.length).toBeGreaterThan(0);
    expect(reinjected.own.size).toBe(0);
    const cases: [number[], string, LogTarget[]?][] = [
      [[], 's'],
      [
        [1, 5],
        'default',
        [
          { name: 's', partitionBy: ['host'] },
          { name: 't', partitionBy: null },
        ],
      ],
    ];
    for (const [runsHere, target, streams] of cases) {
      const { log, own, published } = logWith(runsHere, streams);
      void log.submit(target, events(), 'stream');
      await turn();
      expect(published.length).toBeGreaterThan(0);
      expect(own.size).toBe(0);
    }
  });

  it('matches a message by all its bytes, forgets one that failed, and holds a bounded number', async () => {
    const { log, own, published } = logWith([0, 1, 2, 3, 4, 5, 6, 7]);
    const failed = log.submit('s', events(), 'stream') as Promise<unknown>;
    await turn();
    const data = (published[0] as { data: Buffer }).data;
    const altered = Buffer.from(data);
    altered.writeUInt8((altered.at(-1) as number) ^ 1, altered.length - 1);
    expect(own.take(altered)).toBeUndefined();
    expect(own.take(data.subarray(0, data.length - 1))).toBeUndefined();
    (published[0] as { done: (error?: Error) => void }).done(new Error('no acknowledgement'));
    await expect(failed).rejects.toThrow('no acknowledgement');
    expect(own.size).toBe(0);
    // One message a turn.
    for (let i = 0; i < 100; i++) {
      void log.submit('s', [{ host: `h${i}`, time: i }], 'stream');
      await turn();
    }
    expect(own.size).toBe(64);
    // The oldest went first: the last message published is still held, the first is not.
    expect(own.take((published.at(-1) as { data: Buffer }).data)).toBeDefined();
    expect(own.take((published[1] as { data: Buffer }).data)).toBeUndefined();
  });

  it('holds no more events than the inputs may have waiting (streams.max-pending-events), the oldest forgotten first', async () => {
    const { log, own, published } = logWith([0, 1, 2, 3, 4, 5, 6, 7], undefined, 100);
    for (let i = 0; i < 10; i++) {
      void log.submit('s', events().slice(0, 30), 'stream');
      await turn();
      for (const { done } of published.splice(0)) done();
    }
    // 30 events a message: three fit under 100.
    expect(own.size).toBe(3);
    expect(own.heldEvents).toBe(90);
    // A message of more events than the cap is not held at all (and holds nothing else back).
    void log.submit(
      's',
      Array.from({ length: 99 }, (_, i) => ({ host: `x${i}`, time: i })),
      'stream',
    );
    await turn();
    expect(own.heldEvents).toBe(99);
    const { done } = published.pop() as { done: () => void };
    done();
    void log.submit(
      's',
      Array.from({ length: 101 }, (_, i) => ({ host: `x${i}`, time: i })),
      'stream',
    );
    await turn();
    expect(own.heldEvents).toBe(99);
  });

  it('holds a bounded number of bytes, the oldest messages forgotten first', () => {
    const own = new OwnMessages(1_000);
    const parts = new Map([[0, [[{ host: 'a', time: 1 }]]]]);
    const message = (byte: number) => Buffer.alloc(400, byte);
    for (let i = 0; i < 5; i++) own.remember(message(i), parts, 1, 1_000_000);
    // 400 bytes each: two fit under 1,000.
    expect(own.size).toBe(2);
    expect(own.heldBytes).toBe(800);
    expect(own.take(message(0))).toBeUndefined();
    expect(own.take(message(4))).toBe(parts);
    expect(own.heldBytes).toBe(400);
    // A message larger than the cap is not held, and forgets nothing.
    own.remember(Buffer.alloc(1_001), parts, 1, 1_000_000);
    expect(own.size).toBe(1);
  });
});
