import { describe, expect, it } from 'vitest';
import { bottom, mean, rate, ratio, ssort, sum, top } from '../../../src/stream/actions/aggregate.ts';
import { percentiles } from '../../../src/stream/actions/percentiles.ts';
import { nextDown, PercentileHistogram } from '../../../src/stream/actions/percentile-histogram.ts';
import { ParamError } from '../../../src/stream/actions/params.ts';
import type { Event } from '../../../src/stream/event.ts';
import { buildNode, ev, runStream, s } from './node-harness.ts';

const metrics = (emitted: unknown[]): unknown[] => emitted.map((e) => (e as Event).metric);

describe(':sum', () => {
  it('sums each window onto its most recent event; equal times keep the earlier base', () => {
    const node = buildNode(sum, '[{:duration 10}]');
    node.push(
      ev(100, 1, { id: 'first' }),
      ev(105, 2, { id: 'second' }),
      ev(105, 3, { id: 'tie' }),
      ev(101, 4, { id: 'older' }),
    );
    node.push(ev(112, 10, { id: 'next' }));
    expect(node.emitted).toEqual([{ time: 105, metric: 10, id: 'second' }]);
    node.push(ev(125, 1));
    expect(node.emitted[1]).toEqual({ time: 112, metric: 10, id: 'next' });
  });

  it('accepts the DSL-compiled params with :aggr-fn :+', () => {
    const node = buildNode(sum, '[{:duration 10000000000 :delay 0 :aggr-fn :+}]');
    node.push(ev(s(1), 1), ev(s(2), 2), ev(s(11), 0));
    expect(metrics(node.emitted)).toEqual([3]);
  });

  it('throws when a metric is missing from a window with several events', () => {
    const node = buildNode(sum, '[{:duration 10}]');
    node.push(ev(1, 1));
    expect(() => node.push(ev(2))).toThrow(/:metric/);
  });
});

describe(':mean', () => {
  it('averages each window (a nil metric counts as 0) onto its most recent event, earlier on ties', () => {
    const node = buildNode(mean, '[{:duration 10}]');
    node.push(ev(100, 1), ev(103, null, { id: 'a' }), ev(103, 5, { id: 'b' }), ev(110, 7));
    expect(node.emitted).toEqual([{ time: 103, metric: 2, id: 'a' }]);
  });

  it('gives exact divisions as doubles', () => {
    const node = buildNode(mean, '[{:duration 10}]');
    node.push(ev(0, 1), ev(1, 0), ev(2, 0), ev(10, 0));
    expect(metrics(node.emitted)).toEqual([1 / 3]);
  });
});

describe(':top and :bottom', () => {
  it('top keeps the highest metric of each window, the newer arrival on ties', () => {
    const node = buildNode(top, '[{:duration 10}]');
    node.push(ev(100, 5), ev(101, 9, { id: 'first nine' }), ev(102, 9, { id: 'second nine' }), ev(103, 1), ev(110, 0));
    expect(node.emitted).toEqual([{ time: 102, metric: 9, id: 'second nine' }]);
  });

  it('bottom keeps the lowest metric of each window, the newer arrival on ties', () => {
    const node = buildNode(bottom, '[{:duration 10}]');
    node.push(ev(100, 5), ev(101, 1, { id: 'x' }), ev(102, 1, { id: 'y' }), ev(103, 9), ev(110, 0));
    expect(node.emitted).toEqual([{ time: 102, metric: 1, id: 'y' }]);
  });
});

describe(':rate', () => {
  it('counts events per second of window (input metrics ignored), on the most recent event', () => {
    const node = buildNode(rate, '[{:duration "10s"}]');
    node.push(ev(s(1), 100), ev(s(2), 100, { id: 'last' }), ev(s(1.5), 100), ev(s(11), 1));
    expect(node.emitted).toEqual([{ time: s(2), metric: 0.3, id: 'last' }]);
  });

  it('divides exactly for sub-second and fractional durations (upstream divided by whole seconds)', () => {
    const half = buildNode(rate, '[{:duration "500ms"}]');
    half.push(ev(s(0), 0), ev(s(0.1), 0), ev(s(0.6), 0));
    expect(metrics(half.emitted)).toEqual([4]);
    const longer = buildNode(rate, '[{:duration 2500000000}]');
    longer.push(ev(0, 0), ev(s(1), 0), ev(s(2), 0), ev(s(2.4), 0), ev(s(3), 0));
    expect(metrics(longer.emitted)).toEqual([4 / 2.5]);
  });
});

describe(':ratio', () => {
  it('divides the count matching the first condition by the count matching the second', () => {
    const node = buildNode(ratio, '[{:duration 10 :conditions [[:= :state "error"] [:always-true]]}]');
    node.push(
      ev(1, 0, { state: 'error' }),
      ev(2, 0, { state: 'ok' }),
      ev(3, 0, { state: 'ok' }),
      ev(4, 0, { state: 'ok', id: 'last' }),
    );
    node.push(ev(11, 0));
    expect(node.emitted).toEqual([{ time: 4, metric: 0.25, state: 'ok', id: 'last' }]);
  });

  it('gives 0 when nothing matches the second condition, and sums metrics with :metric true', () => {
    const none = buildNode(ratio, '[{:duration 10 :conditions [[:always-true] [:= :state "nope"]]}]');
    none.push(ev(1, 3), ev(11, 0));
    expect(metrics(none.emitted)).toEqual([0]);
    const weighted = buildNode(ratio, '[{:duration 10 :metric true :conditions [[:= :state "error"] [:always-true]]}]');
    weighted.push(ev(1, 3, { state: 'error' }), ev(2, 9, { state: 'ok' }), ev(11, 0));
    expect(metrics(weighted.emitted)).toEqual([0.25]);
  });

  it('requires two conditions', () => {
    expect(() => buildNode(ratio, '[{:duration 10 :conditions [[:always-true]]}]')).toThrow(/:conditions/);
    expect(() => buildNode(ratio, '[{:duration 10 :conditions [[:bogus :x] [:always-true]]}]')).toThrow(ParamError);
  });
});

describe(':ssort', () => {
  it('emits each window sorted by the field, one event at a time (the upstream docstring example)', () => {
    const node = buildNode(ssort, '[{:duration 10 :field :time}]');
    node.push(...[1, 10, 4, 9, 13, 31].map((time) => ({ time })));
    expect(node.emitted).toEqual([1, 4, 9, 10, 13].map((time) => ({ time })));
  });

  it('sorts all the windows flushed by one event together, stably, on a nested field', () => {
    const node = buildNode(
      ssort,
      '[{:duration 10 :delay 10 :field [:attributes :rank] :nested? true :aggr-fn :ssort}]',
    );
    const ranked = (time: number, rank: number | null): Event => ({ time, attributes: { rank } });
    node.push(ranked(100, 5), ranked(101, 2), ranked(112, 1), ranked(113, 2), ranked(114, null));
    expect(node.emitted).toEqual([]);
    node.push(ranked(135, 0)); // closes both windows at once
    expect(node.emitted).toEqual([ranked(114, null), ranked(112, 1), ranked(101, 2), ranked(113, 2), ranked(100, 5)]);
  });

  it('needs a :field', () => {
    expect(() => buildNode(ssort, '[{:duration 10}]')).toThrow(/:field/);
  });
});

describe(':percentiles', () => {
  const quantileOf = (e: unknown): unknown => ((e as Event).attributes as Record<string, unknown>).quantile;

  it('emits the triggering event once per quantile, computed on the events before it', () => {
    const node = buildNode(percentiles, '[{:duration 10 :percentiles [0 0.5 0.99 1]}]');
    for (let t = 1; t <= 10; t++) node.push(ev(t, t));
    expect(node.emitted).toEqual([]);
    node.push(ev(12, 1000, { host: 'h' }));
    expect(node.emitted).toEqual([
      { time: 12, metric: 1, host: 'h', attributes: { quantile: '0' } },
      { time: 12, metric: 5, host: 'h', attributes: { quantile: '0.5' } },
      { time: 12, metric: 10, host: 'h', attributes: { quantile: '0.99' } },
      { time: 12, metric: 10, host: 'h', attributes: { quantile: '1' } },
    ]);
    // The triggering event's 1000 opens the next interval (exact: 3 significant digits, below 2048).
    node.push(ev(23, 3, { attributes: { env: 'prod' } }));
    expect(node.emitted.slice(4)).toEqual(
      ['0', '0.5', '0.99', '1'].map((quantile) => ({ time: 23, metric: 1000, attributes: { env: 'prod', quantile } })),
    );
  });

  it("follows Java HdrHistogram's count rule (p nudged down one ulp), not hdr-histogram-js's", () => {
    const node = buildNode(percentiles, '[{:duration 1000 :percentiles [0.07 0.55]}]');
    for (let t = 1; t <= 100; t++) node.push(ev(t, t));
    node.push(ev(2000, 0));
    // 100 × 0.07 = 7.000000000000001: Java rounds the count up to 8 (the JS library would say 7).
    expect(metrics(node.emitted)).toEqual([8, 56]);
    expect(node.emitted.map(quantileOf)).toEqual(['0.07', '0.55']);
  });

  it('truncates fractional metrics and reports bucket upper bounds above the exact range', () => {
    const node = buildNode(percentiles, '[{:duration 100 :percentiles [0 0.5 1]}]');
    node.push(ev(1, 0.1), ev(2, 1.9), ev(3, 123456), ev(200, 0));
    expect(metrics(node.emitted)).toEqual([0, 1, 123519]);
    const coarse = buildNode(percentiles, '[{:duration 100 :percentiles [0.5] :nb-significant-digits 2}]');
    coarse.push(ev(1, 1000), ev(200, 0));
    expect(metrics(coarse.emitted)).toEqual([1003]);
  });

  it('records late events within :delay in the current interval and drops older ones', () => {
    const node = buildNode(percentiles, '[{:duration 10 :delay 10 :percentiles [0 1]}]');
    node.push(ev(100, 50), ev(95, 7), ev(89, 1), ev(111, 0));
    expect(metrics(node.emitted)).toEqual([7, 50]);
  });

  it('treats a first event at time 0 as no event (upstream quirk): the next one starts again', () => {
    const node = buildNode(percentiles, '[{:duration 10 :percentiles [0 1]}]');
    node.push(ev(0, 1), ev(50, 2), ev(61, 0));
    expect(metrics(node.emitted)).toEqual([1, 2]);
  });

  it('throws on events without time or metric, negative metrics and values over :highest-trackable-value', () => {
    expect(() => buildNode(percentiles, '[{:duration 10 :percentiles [0.5]}]').push(ev(undefined, 1))).toThrow(/:time/);
    expect(() => buildNode(percentiles, '[{:duration 10 :percentiles [0.5]}]').push(ev(1))).toThrow(/:metric/);
    expect(() => buildNode(percentiles, '[{:duration 10 :percentiles [0.5]}]').push(ev(1, -1))).toThrow(/negative/);
    const bounded = buildNode(percentiles, '[{:duration 10 :percentiles [0.5] :highest-trackable-value 1000}]');
    bounded.push(ev(1, 1000));
    expect(() => bounded.push(ev(2, 5000))).toThrow();
  });

  it('honours :lowest-discernible-value', () => {
    const node = buildNode(
      percentiles,
      '[{:duration 10 :percentiles [0.5] :lowest-discernible-value 1000 :highest-trackable-value 1000000000}]',
    );
    node.push(ev(1, 1500), ev(20, 0));
    const h = new PercentileHistogram({
      significantDigits: 3,
      lowestDiscernibleValue: 1000,
      highestTrackableValue: 1e9,
    });
    h.record(1500);
    expect(metrics(node.emitted)).toEqual([h.valueAtPercentile(50)]);
  });

  it('validates its params, naming them', () => {
    expect(() => buildNode(percentiles, '[{:duration 10}]')).toThrow(/:percentiles/);
    expect(() => buildNode(percentiles, '[{:duration 10 :percentiles [1.5]}]')).toThrow(/:percentiles\[0\]/);
    expect(() => buildNode(percentiles, '[{:duration 10 :percentiles [0.5] :nb-significant-digits 6}]')).toThrow(
      /:nb-significant-digits/,
    );
    expect(() => buildNode(percentiles, '[{:duration 10 :percentiles [0.5] :lowest-discernible-value 10}]')).toThrow(
      /:lowest-discernible-value/,
    );
  });
});

describe('nextDown', () => {
  it("is Java's Math.nextAfter toward -Infinity", () => {
    expect(nextDown(100)).toBe(99.99999999999999);
    expect(nextDown(0)).toBe(-Number.MIN_VALUE);
    expect(nextDown(-1)).toBeLessThan(-1);
  });
});

describe('aggregations through the stream compiler', () => {
  it('percentiles then a tap, from EDN text', () => {
    const { taps, errors } = runStream(
      `{:actions {:action :percentiles :params [{:duration "1s" :percentiles [0.5 1]}]
                  :children [{:action :tap :params [:q]}]}}`,
      [ev(s(1), 10), ev(s(1.5), 20), ev(s(1.7), 30), ev(s(2.5), 0)],
    );
    expect(errors).toEqual([]);
    expect(taps.get('q')).toEqual([
      { time: s(2.5), metric: 20, attributes: { quantile: '0.5' } },
      { time: s(2.5), metric: 30, attributes: { quantile: '1' } },
    ]);
  });

  it('rate under a where, with an error in one event not stopping the others', () => {
    const { taps, errors } = runStream(
      `{:actions {:action :where :params [[:= :service "api"]]
                  :children [{:action :rate :params [{:duration "2s"}] :children [{:action :tap :params [:rate]}]}]}}`,
      [
        ev(s(1), 0, { service: 'api' }),
        ev(undefined, 0, { service: 'api' }),
        ev(s(2), 0, { service: 'api' }),
        ev(s(3.5), 0, { service: 'api' }),
      ],
    );
    expect(errors).toHaveLength(1);
    expect(taps.get('rate')).toEqual([{ time: s(2), metric: 1, service: 'api' }]);
  });
});
