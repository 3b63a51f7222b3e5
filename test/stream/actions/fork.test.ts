import { describe, expect, it } from 'vitest';
import { fieldKeyFunction } from '../../../src/stream/actions/field-key.ts';
import { by } from '../../../src/stream/actions/fork.ts';
import { ParamError } from '../../../src/stream/actions/params.ts';
import type { Event } from '../../../src/stream/event.ts';
import { buildNode, runStream, s, times } from './node-harness.ts';

const on = (time: number, host: unknown, extra: Record<string, unknown> = {}): Event =>
  ({ time, host, ...extra }) as Event;

describe(':by', () => {
  it('compiles the children once per distinct value and routes each event to its fork', () => {
    const node = buildNode(by, '[{:fields [:host]}]');
    node.push(on(1, 'a'), on(2, 'b'), on(3, 'a'), on(4, 'c'), on(5, 'b'));
    expect(node.forks.map((fork) => fork.map(times))).toEqual([[1, 3], [2, 5], [4]]);
    expect(node.emitted).toEqual([]);
  });

  it('keeps values of different types apart, and a missing field equal to nil', () => {
    const node = buildNode(by, '[{:fields [:host]}]');
    node.push(
      on(1, '1'),
      on(2, 1),
      on(3, true),
      on(4, 'true'),
      on(5, null),
      { time: 6 },
      on(7, { a: 1, b: 2 }),
      on(8, { b: 2, a: 1 }),
    );
    expect(node.forks.map((fork) => fork.map(times))).toEqual([[1], [2], [3], [4], [5, 6], [7, 8]]);
  });

  it('builds composite keys that do not collide when values are concatenated', () => {
    const node = buildNode(by, '[{:fields [:host :service]}]');
    node.push(
      on(1, 'a', { service: 'bc' }),
      on(2, 'ab', { service: 'c' }),
      on(3, 'a', { service: 'bc' }),
      on(4, 'a'),
      on(5, 'a', { service: null }),
    );
    expect(node.forks.map((fork) => fork.map(times))).toEqual([[1, 3], [2], [4, 5]]);
  });

  it('splits on nested fields', () => {
    const node = buildNode(by, '[{:fields [[:attributes :env]]}]');
    node.push(
      { time: 1, attributes: { env: 'prod' } },
      { time: 2, attributes: { env: 'dev' } },
      { time: 3, attributes: { env: 'prod' } },
    );
    expect(node.forks.map((fork) => fork.map(times))).toEqual([[1, 3], [2]]);
  });

  it('garbage-collects idle forks before routing, so an event can land in a recreated fork', () => {
    const node = buildNode(by, '[{:fields [:host] :gc-interval 10 :fork-ttl 20}]');
    node.push(on(1, 'a'), on(5, 'b')); // GC runs on the first event
    node.push(on(30, 'a')); // 30 > 1 + 10: forks last seen before 10 are dropped, a is recreated
    node.push(on(31, 'b')); // no GC (31 <= 40), but b was dropped at 30: recreated
    node.push(on(35, 'a'));
    expect(node.forks.map((fork) => fork.map(times))).toEqual([[1], [5], [30, 35], [31]]);
  });

  it("overwrites a fork's last-seen time even when the event is older (upstream rule)", () => {
    const node = buildNode(by, '[{:fields [:host] :gc-interval 10 :fork-ttl 60}]');
    node.push(on(100, 'a'), on(50, 'a')); // last seen goes back to 50
    node.push(on(120, 'b')); // GC: 50 < 120 - 60, a is dropped although it had an event at 100
    node.push(on(121, 'a'));
    expect(node.forks.map((fork) => fork.map(times))).toEqual([[100, 50], [120], [121]]);
  });

  it('reads :gc-interval and :fork-ttl as durations, with a default ttl of one hour', () => {
    const node = buildNode(by, '[{:fields [:host] :gc-interval "1m"}]');
    node.push(on(s(1), 'a'), on(s(2), 'b'));
    node.push(on(s(3000), 'c')); // GC: a and b are 2,998 s old, under an hour
    node.push(on(s(3000), 'a'));
    expect(node.forks).toHaveLength(3);
    node.push(on(s(3700), 'c')); // GC: a (3000) stays, b (2) is dropped
    node.push(on(s(3701), 'b'), on(s(3702), 'a'));
    expect(node.forks.map((fork) => fork.map(times))).toEqual([
      [s(1), s(3000), s(3702)],
      [s(2)],
      [s(3000), s(3700)],
      [s(3701)],
    ]);
  });

  it('without :gc-interval, releases a fork only after streams.fork-idle-timeout of event time', () => {
    const node = buildNode(by, '[{:fields [:host] :fork-ttl 1}]');
    node.push(on(1, 'a'), on(1000, 'b'), on(2000, 'a'));
    expect(node.forks).toHaveLength(2);
    const limits = { maxForks: 100, maxIndexEntries: 100, forkIdleNs: s(60) };
    const idle = buildNode(by, '[{:fields [:host]}]', { limits });
    idle.push(on(s(1), 'a'), on(s(50), 'b'), on(s(70), 'b')); // GC at 70 s (every 15 s): a idle 69 s, released
    idle.push(on(s(71), 'a'), on(s(72), 'b'));
    expect(idle.forks.map((fork) => fork.map(times))).toEqual([[s(1)], [s(50), s(70), s(72)], [s(71)]]);
  });

  it('drops and reports the events of new keys past streams.max-forks, still routing the known keys', () => {
    const drops: string[] = [];
    const node = buildNode(by, '[{:fields [:host]}]', {
      limits: { maxForks: 2, maxIndexEntries: 100, forkIdleNs: s(3600) },
      dropped: (reason) => drops.push(reason),
    });
    node.push(on(1, 'a'), on(2, 'b'), on(3, 'c'), on(4, 'a'), on(5, 'd'));
    expect(node.forks.map((fork) => fork.map(times))).toEqual([[1, 4], [2]]);
    expect(drops).toEqual(['fork_limit', 'fork_limit']);
  });

  it('throws on an event without :time', () => {
    expect(() => buildNode(by, '[{:fields [:host]}]').push({ host: 'a' })).toThrow(/:time/);
  });

  it('validates its params', () => {
    expect(() => buildNode(by, '[{:fields []}]')).toThrow(ParamError);
    expect(() => buildNode(by, '[{:fields :host}]')).toThrow(/:fields/);
    expect(() => buildNode(by, '[{:fields [:host] :gc-interval "soon"}]')).toThrow(/:gc-interval/);
    expect(() => buildNode(by, '[{:fields [:host] :fork-ttl 0}]')).toThrow(/:fork-ttl/);
  });
});

describe('fieldKeyFunction', () => {
  it('uses a top-level primitive value itself as the key (no allocation on the hot path)', () => {
    const key = fieldKeyFunction([['host']], { missingIsNil: true });
    const host = 'web-1';
    expect(key({ host })).toBe(host);
    expect(key({})).toBeNull();
    expect(fieldKeyFunction([['host']], { missingIsNil: false })({})).toBeUndefined();
  });

  it('cannot confuse a string with the encoding of a map', () => {
    const key = fieldKeyFunction([['host']], { missingIsNil: true });
    const mapKey = key({ host: { a: 1 } } as unknown as Event);
    expect(key({ host: mapKey as string })).not.toBe(mapKey);
  });
});

describe(':by through the stream compiler', () => {
  const config = `
    {:actions {:action :by :params [{:fields [:host]}]
               :children [{:action :fixed-time-window :params [{:duration "10s"}]
                           :children [{:action :coll-mean :children [{:action :tap :params [:means]}]}]}]}}`;

  it('gives every host its own window, with fresh state per fork', () => {
    const { taps, errors } = runStream(config, [
      { host: 'a', time: s(0), metric: 1 },
      { host: 'b', time: s(5), metric: 10 },
      { host: 'a', time: s(9), metric: 3 },
      { host: 'a', time: s(10), metric: 100 }, // closes a's first window: its windows start at 0
      { host: 'b', time: s(14), metric: 20 }, // b's windows start at 5: still open
      { host: 'b', time: s(15), metric: 0 },
    ]);
    expect(errors).toEqual([]);
    expect(taps.get('means')).toEqual([
      { host: 'a', time: s(9), metric: 2 },
      { host: 'b', time: s(14), metric: 15 },
    ]);
  });

  it('isolates an event without time: it is reported, the next events still flow', () => {
    const { taps, errors } = runStream(config, [
      { host: 'a', time: s(0), metric: 1 },
      { host: 'a', metric: 5 },
      { host: 'a', time: s(10), metric: 1 },
    ]);
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toMatch(/:by needs events with a numeric :time/);
    expect(taps.get('means')).toEqual([{ host: 'a', time: s(0), metric: 1 }]);
  });

  it('reports bad params as a config error naming the action and the parameter', () => {
    expect(() => runStream('{:actions {:action :by :params [{:fields [:host] :fork-ttl "1 hour"}]}}', [])).toThrow(
      /Invalid parameter :fork-ttl for action :by/,
    );
  });
});
