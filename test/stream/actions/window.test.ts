import { describe, expect, it } from 'vitest';
import { windowIndex } from '../../../src/stream/actions/aggregation-engine.ts';
import { ParamError } from '../../../src/stream/actions/params.ts';
import {
  coalesce,
  fixedEventWindow,
  fixedTimeWindow,
  movingEventWindow,
  movingTimeWindow,
  project,
} from '../../../src/stream/actions/window.ts';
import type { Event } from '../../../src/stream/event.ts';
import { buildNode, ev, runStream, s, times } from './node-harness.ts';

describe(':fixed-event-window', () => {
  it('emits a list every :size events and starts a new list after it', () => {
    const node = buildNode(fixedEventWindow, '[{:size 3}]');
    node.push(...[1, 2, 3, 4, 5, 6, 7].map((t) => ev(t)));
    expect(node.emitted.map(times)).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
  });

  it('rejects a size that is not a positive integer', () => {
    expect(() => buildNode(fixedEventWindow, '[{:size 0}]')).toThrow(ParamError);
    expect(() => buildNode(fixedEventWindow, '[{}]')).toThrow(/:size/);
  });
});

describe(':moving-event-window', () => {
  it('emits the last :size events, oldest first, on every event', () => {
    const node = buildNode(movingEventWindow, '[{:size 2}]');
    node.push(ev(1), ev(2), ev(3));
    expect(node.emitted.map(times)).toEqual([[1], [1, 2], [2, 3]]);
  });
});

describe(':fixed-time-window', () => {
  it('aligns windows on the first event, not on the epoch, and flushes when a later event arrives', () => {
    const node = buildNode(fixedTimeWindow, '[{:duration 10}]');
    node.push(ev(5), ev(14), ev(15), ev(24));
    expect(node.emitted.map(times)).toEqual([[5, 14]]);
    node.push(ev(25));
    expect(node.emitted.map(times)).toEqual([
      [5, 14],
      [15, 24],
    ]);
  });

  it('emits nothing for empty windows (gaps)', () => {
    const node = buildNode(fixedTimeWindow, '[{:duration 10}]');
    node.push(ev(100), ev(103), ev(150), ev(171));
    expect(node.emitted.map(times)).toEqual([[100, 103], [150]]);
  });

  it("accepts the params Mirabelle's DSL compiles (with :aggr-fn) and duration strings", () => {
    const node = buildNode(fixedTimeWindow, '[{:duration "10s" :delay 0 :aggr-fn :fixed-time-window}]');
    node.push(ev(s(0.5)), ev(s(9)), ev(s(10.5)));
    expect(node.emitted.map(times)).toEqual([[s(0.5), s(9)]]);
  });

  it('counts a late event within :delay in its own window, drops older ones, and never flushes on a late event', () => {
    const node = buildNode(fixedTimeWindow, '[{:duration 10 :delay 5}]');
    node.push(ev(100), ev(112)); // horizon 107: window [100,110) stays open
    node.push(ev(108)); // late (window 0 < 1) but 108 >= 112 - 5: kept
    node.push(ev(103)); // late and 103 < 107: dropped
    expect(node.emitted).toEqual([]);
    node.push(ev(116)); // horizon 111 closes window 0
    expect(node.emitted.map(times)).toEqual([[100, 108]]);
    node.push(ev(131));
    expect(node.emitted.map(times)).toEqual([
      [100, 108],
      [112, 116],
    ]);
  });

  it('flushes windows in creation order, not in time order', () => {
    const node = buildNode(fixedTimeWindow, '[{:duration 10 :delay 20}]');
    node.push(ev(100), ev(125)); // windows 0 and 2
    node.push(ev(115)); // late, accepted: window 1 is created after window 2
    node.push(ev(160)); // horizon 140 closes all three
    expect(node.emitted.map(times)).toEqual([[100], [125], [115]]);
  });

  it('puts an exact negative multiple of the duration one window too early (upstream quirk)', () => {
    expect(windowIndex(80, 100, 10)).toBe(-3);
    expect(windowIndex(79, 100, 10)).toBe(-3);
    expect(windowIndex(85, 100, 10)).toBe(-2);
    expect(windowIndex(100, 100, 10)).toBe(0);
    expect(windowIndex(119, 100, 10)).toBe(1);
    const node = buildNode(fixedTimeWindow, '[{:duration 10 :delay 100}]');
    node.push(ev(100), ev(80), ev(85), ev(79), ev(300));
    expect(node.emitted.map(times)).toEqual([[100], [80, 79], [85]]);
  });

  it('throws on an event without :time, the first one included', () => {
    expect(() => buildNode(fixedTimeWindow, '[{:duration 10}]').push(ev(undefined, 1))).toThrow(/:time/);
    const node = buildNode(fixedTimeWindow, '[{:duration 10}]');
    node.push(ev(1));
    expect(() => node.push({ metric: 1, time: 'soon' } as unknown as Event)).toThrow(/:time/);
  });

  it('names the bad parameter', () => {
    expect(() => buildNode(fixedTimeWindow, '[{:delay 10}]')).toThrow(/:duration/);
    expect(() => buildNode(fixedTimeWindow, '[{:duration "10 s"}]')).toThrow(ParamError);
    expect(() => buildNode(fixedTimeWindow, '[{:duration 10 :delay -1}]')).toThrow(/:delay/);
  });
});

describe(':moving-time-window', () => {
  it('emits the events newer than (newest time - duration), keeping timeless events', () => {
    const node = buildNode(movingTimeWindow, '[{:duration 10}]');
    node.push(ev(1), ev(5), ev(12), ev(3));
    expect(node.emitted.map(times)).toEqual([[1], [1, 5], [5, 12], [5, 12, 3]]);
    node.push(ev(2)); // at the cutoff (12 - 10): dropped, nothing emitted
    expect(node.emitted).toHaveLength(4);
    node.push({ service: 'no-time' });
    node.push(ev(25));
    expect(node.emitted.slice(4).map(times)).toEqual([
      [5, 12, 3, undefined],
      [undefined, 25],
    ]);
  });

  it('drops events at time 0 or before (initial cutoff 0)', () => {
    const node = buildNode(movingTimeWindow, '[{:duration 10}]');
    node.push(ev(0), ev(-5));
    expect(node.emitted).toEqual([]);
  });

  it('never changes a list it already emitted', () => {
    const node = buildNode(movingTimeWindow, '[{:duration 10}]');
    node.push(ev(1), ev(20));
    expect(node.emitted.map(times)).toEqual([[1], [20]]);
  });
});

describe(':coalesce', () => {
  const host = (time: number, name: string, extra: Record<string, unknown> = {}): Event => ({
    time,
    host: name,
    ...extra,
  });

  it('emits the latest non-expired event per key every :duration, with :ttl in seconds', () => {
    const node = buildNode(coalesce, '[{:duration "10s" :fields [:host]}]');
    node.push(host(s(1), 'a')); // arms the clock
    node.push(host(s(5), 'b'));
    expect(node.emitted).toEqual([]);
    node.push(host(s(11), 'a', { metric: 2 }));
    expect(node.emitted).toEqual([[host(s(11), 'a', { metric: 2 }), host(s(5), 'b')]]);
    node.push(host(s(12), 'c', { ttl: 1 })); // expires 1 s after the newest time
    node.push(host(s(3), 'b', { metric: 99 })); // older than the buffered b: ignored
    node.push(host(s(22), 'd', { state: 'expired' }));
    node.push({ host: 'e' }); // no time: ignored
    node.push(host(s(21), 'a'));
    // b is 16 s old, under the default ttl of 120 s; c is 9 s old, over its 1 s ttl.
    expect(node.emitted[1]).toEqual([host(s(21), 'a'), host(s(5), 'b')]);
    node.push(host(s(200), 'a'));
    expect(node.emitted[2]).toEqual([host(s(200), 'a')]);
  });

  it('keys on every field, a missing field differing from a nil one', () => {
    const node = buildNode(coalesce, '[{:duration 10 :fields [:host [:attributes :env]]}]');
    node.push({ time: 1, host: 'a' });
    node.push({ time: 2, host: 'a', attributes: { env: null } });
    node.push({ time: 3, host: 'a', attributes: { env: 'prod' } });
    node.push({ time: 11, host: 'a', attributes: { env: 'prod' }, metric: 1 });
    expect(node.emitted).toEqual([
      [
        { time: 1, host: 'a' },
        { time: 2, host: 'a', attributes: { env: null } },
        { time: 11, host: 'a', attributes: { env: 'prod' }, metric: 1 },
      ],
    ]);
  });
});

describe(':project', () => {
  const svc = (time: number | undefined, service: string, extra: Record<string, unknown> = {}): Event =>
    time === undefined ? { service, ...extra } : { time, service, ...extra };

  it('keeps the newest matching event per condition and emits the filled slots after every event', () => {
    const node = buildNode(project, '[[[:= :service "a"] [:= :service "b"]]]');
    node.push(svc(s(1), 'c'));
    expect(node.emitted).toEqual([]); // nothing filled yet
    node.push(svc(s(2), 'b'));
    node.push(svc(s(1), 'a'));
    node.push(svc(s(0.5), 'a', { metric: 1 })); // older than the slot: ignored
    node.push(svc(s(3), 'c'));
    node.push(svc(undefined, 'a')); // timeless: not stored
    expect(node.emitted).toEqual([
      [svc(s(2), 'b')],
      [svc(s(1), 'a'), svc(s(2), 'b')],
      [svc(s(1), 'a'), svc(s(2), 'b')],
      [svc(s(1), 'a'), svc(s(2), 'b')],
      [svc(s(1), 'a'), svc(s(2), 'b')],
    ]);
  });

  it('clears slots whose event expired (ttl in seconds) and does not store expired events', () => {
    const node = buildNode(project, '[[[:= :service "a"] [:= :service "b"]]]');
    node.push(svc(s(1), 'a'), svc(s(2), 'b', { ttl: 30 }));
    node.push(svc(s(40), 'b', { state: 'expired' })); // not stored; b@2 is 38 s old, over its ttl
    expect(node.emitted[2]).toEqual([svc(s(1), 'a')]);
    node.push(svc(s(130), 'c')); // a@1 is 129 s old, over the default 120 s
    expect(node.emitted).toHaveLength(3);
  });
});

describe('windows through the stream compiler', () => {
  it('project feeding coll-quotient, as in the upstream docstring', () => {
    const { taps, errors } = runStream(
      `{:actions {:action :project :params [[[:= :service "enqueues"] [:= :service "dequeues"]]]
                  :children [{:action :coll-quotient
                              :children [{:action :with :params [{:service "enqueues per dequeue"}]
                                          :children [{:action :tap :params [:ratio]}]}]}]}}`,
      [
        { service: 'enqueues', time: s(1), metric: 10 },
        { service: 'dequeues', time: s(2), metric: 4 },
        { service: 'enqueues', time: s(3), metric: 12 },
      ],
    );
    expect(errors).toEqual([]);
    expect(taps.get('ratio')).toEqual([
      { service: 'enqueues per dequeue', time: s(1), metric: 10 },
      { service: 'enqueues per dequeue', time: s(2), metric: 2.5 },
      { service: 'enqueues per dequeue', time: s(3), metric: 3 },
    ]);
  });

  it('reports a bad window size as a config error naming the parameter', () => {
    expect(() => runStream('{:actions {:action :fixed-event-window :params [{:size "3"}]}}', [])).toThrow(
      /Invalid parameter :size for action :fixed-event-window/,
    );
  });
});
