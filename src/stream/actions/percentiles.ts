/**
 * `:percentiles`, the time aggregation that is not on the windowing engine (aggregation-engine.ts): one interval
 * at a time, recorded in an HdrHistogram (percentile-histogram.ts) rather than kept as events, and flushed once
 * per quantile. Listed with the other time aggregations in aggregate.ts.
 */
import type { EdnValue } from '../lang/edn.ts';
import type { Event } from '../event.ts';
import { assocIn, type Path } from '../lang/path.ts';
import type { WindowParams } from './aggregation-engine.ts';
import { quantileLabel, requireNumber, requireTime } from './numbers.ts';
import { arity, describe, number, type ParamReading, positiveInteger, ParamError } from './params.ts';
import { PercentileHistogram } from './percentile-histogram.ts';
import * as shape from './state-shape.ts';
import { defineAction } from './types.ts';

const QUANTILE_PATH: Path = ['attributes', 'quantile'];

interface PercentilesParams extends WindowParams {
  readonly quantiles: readonly number[];
  readonly significantDigits: number;
  readonly highestTrackableValue: number | undefined;
  readonly lowestDiscernibleValue: number | undefined;
}

function readPercentilesParams(raw: readonly EdnValue[], read: ParamReading): PercentilesParams {
  arity(raw, 1);
  const options = read.map(raw[0], 'config');
  const quantiles = read.option(options, 'percentiles');
  if (!Array.isArray(quantiles))
    throw new ParamError(':percentiles', `expected a vector of quantiles, got ${describe(quantiles)}`);
  const digits = read.option(options, 'nb-significant-digits');
  const significantDigits = digits === undefined ? 3 : positiveInteger(digits, ':nb-significant-digits');
  if (significantDigits > 5)
    throw new ParamError(':nb-significant-digits', `expected 1 to 5, got ${significantDigits}`);
  const highest = read.option(options, 'highest-trackable-value');
  const lowest = read.option(options, 'lowest-discernible-value');
  const highestTrackableValue =
    highest === undefined ? undefined : positiveInteger(highest, ':highest-trackable-value');
  const lowestDiscernibleValue =
    lowest === undefined ? undefined : positiveInteger(lowest, ':lowest-discernible-value');
  if (lowestDiscernibleValue !== undefined) {
    if (highestTrackableValue === undefined)
      throw new ParamError(':lowest-discernible-value', 'needs :highest-trackable-value too');
    if (highestTrackableValue < 2 * lowestDiscernibleValue) {
      throw new ParamError(
        ':highest-trackable-value',
        `must be at least twice :lowest-discernible-value (${lowestDiscernibleValue})`,
      );
    }
  } else if (highestTrackableValue !== undefined && highestTrackableValue < 2) {
    throw new ParamError(':highest-trackable-value', 'must be at least 2');
  }
  const delay = read.option(options, 'delay');
  return {
    duration: read.duration(read.option(options, 'duration'), ':duration'),
    delay: delay === undefined ? 0 : read.duration(delay, ':delay', { allowZero: true }),
    quantiles: quantiles.map((q, i) => {
      const value = number(q, `:percentiles[${i}]`);
      if (value < 0 || value > 1)
        throw new ParamError(`:percentiles[${i}]`, `expected a quantile between 0 and 1, got ${value}`);
      return value;
    }),
    significantDigits,
    highestTrackableValue,
    lowestDiscernibleValue,
  };
}

/** The histogram as `[value, count, ...]` pairs (PercentileHistogram.save). */
const percentilesShape = shape.record({
  lastFlush: shape.finite,
  recorded: shape.refine(shape.list(shape.natural), (pairs) =>
    pairs.length % 2 === 0 ? null : `expected [value count ...] pairs, got ${pairs.length} numbers`,
  ),
});

/** HdrHistogram-backed; the triggering event counts in the next interval. */
export const percentiles = defineAction({
  name: 'percentiles',
  state: 'kept',
  doc: {
    summary:
      'Records metrics in an HdrHistogram and, when an event arrives more than `:duration` after the last flush, emits that event once per quantile with `:metric` = the value at that quantile (an integer: metrics are truncated when recorded) and `[:attributes :quantile]` = the quantile as a string. `:delay` admits late events into the current interval; `:nb-significant-digits` is 1 to 5 (default 3). Every event needs a `:time`.',
    params:
      '[{:duration duration :percentiles [number ...] :delay duration? :nb-significant-digits integer? :highest-trackable-value integer? :lowest-discernible-value integer?}]',
    example:
      '{:action :percentiles :params [{:duration "1m" :percentiles [0.5 0.99 1] :nb-significant-digits 3}] :children [{:action :info}]}',
  },
  params: readPercentilesParams,
  build(params, ctx) {
    const { duration: interval, delay, quantiles } = params;
    const labels = quantiles.map(quantileLabel);
    const histogram = new PercentileHistogram(params);
    const emit = ctx.emit;
    const record = (event: Event): void => histogram.record(requireNumber(event.metric, ':percentiles: :metric'));
    // Upstream uses 0 as "no event yet", so a first event at time 0 leaves the action unstarted: kept.
    let lastFlush = 0;
    ctx.keepState<{ lastFlush: number; recorded: number[] }>({
      shape: percentilesShape,
      save: () => ({ lastFlush, recorded: histogram.save() }),
      load: (state) => {
        lastFlush = state.lastFlush;
        histogram.load(state.recorded);
      },
    });
    return (emission) => {
      const time = requireTime(emission, 'percentiles');
      const event = emission as Event;
      if (lastFlush === 0) {
        lastFlush = time;
        record(event);
      } else if (time > lastFlush + interval) {
        const values = quantiles.map((q) => histogram.valueAtPercentile(100 * q));
        histogram.reset();
        lastFlush = time;
        record(event);
        for (let i = 0; i < values.length; i++) {
          // assocIn copies the event, so setting the metric on the copy is safe.
          const quantileEvent = assocIn(event, QUANTILE_PATH, labels[i]);
          quantileEvent.metric = values[i] as number;
          emit(quantileEvent);
        }
      } else if (time >= lastFlush - delay) {
        record(event);
      }
    };
  },
});
