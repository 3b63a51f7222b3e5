import { describe, expect, it } from 'vitest';
import { eventsOfMessage, eventsProblem, partitionOf, partitionSubject, streamId } from '../../src/cluster/stream-log.ts';
import { encodeRecord } from '../../src/stream/journal.ts';
import { mergeSearches, mergeStats } from '../../src/cluster/stream-queries.ts';

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
    for (let i = 0; i < 50; i++) spread.add(partitionOf({ host: `a${i}`, service: 'bc' }, fields, 1024) - partitionOf({ host: `a${i}b`, service: 'c' }, fields, 1024));
    expect(spread.has(0) && spread.size === 1).toBe(false);
    expect(partitionOf({ service: 'x' }, fields, 64)).toBe(partitionOf({ host: '', service: 'x' }, fields, 64));
  });

  it('names subjects with a token NATS accepts whatever the stream name', () => {
    expect(partitionSubject('my.stream-1', 7)).toMatch(/^vigie\.events\.[0-9a-f]{16}\.7$/);
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
    expect(mergeSearches([{ events: [{ host: 'a' }], truncated: false }, { events: [], truncated: false }], 10)).toEqual({ events: [{ host: 'a' }], truncated: false });
  });

  it('adds index sizes and keeps the newest current time', () => {
    const merged = mergeStats([{ s: { size: 2, currentTime: 10 } }, { s: { size: 3, currentTime: 7 }, t: { size: 1, currentTime: 1 } }]);
    expect(merged.get('s')).toEqual({ size: 5, currentTime: 10 });
    expect(merged.get('t')).toEqual({ size: 1, currentTime: 1 });
  });
});

describe('events read from the cluster', () => {
  it("are checked under the reader's streams.max-event-depth, not a process-wide one", () => {
    const events = [{ host: 'a', time: 1, deep: { b: { c: { d: 1 } } } }];
    const message = Buffer.concat(encodeRecord(0, { target: 's', input: 'cluster', format: 'events', receivedAtNs: 0, count: 1, payload: Buffer.from(JSON.stringify(events)) }));
    const problem = 'events[0].deep nests objects and arrays deeper than the limit of 3 levels (streams.max-event-depth)';
    expect(eventsProblem(events, 3)).toBe(problem);
    expect(eventsProblem(events, 4)).toBeNull();
    const damage: string[] = [];
    expect(eventsOfMessage(message, 3, (reason, detail) => damage.push(`${reason}: ${detail}`))).toBeNull();
    expect(damage).toEqual([`invalid: ${problem}`]);
    expect(eventsOfMessage(message, 4, () => undefined)).toEqual(events);
  });
});
