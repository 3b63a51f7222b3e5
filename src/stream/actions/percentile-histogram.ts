/**
 * The HdrHistogram behind `:percentiles`, configured as Mirabelle configures its Java `Recorder`, and read
 * with Java HdrHistogram's `getValueAtPercentile` rule (hdr-histogram-js rounds the count differently: it
 * subtracts one ulp from the count, Java from the percentile, and the two disagree on some quantiles).
 */
import type * as HdrHistogramJs from 'hdr-histogram-js';
import { lazyModule } from '../../common/lazy-module.ts';

/**
 * hdr-histogram-js is loaded by the first histogram, not at startup: at load it builds an `Intl.NumberFormat`
 * (which pages in ICU's data) and loads its WebAssembly build and pako: 5 MB more RSS in the service (16 MB in a
 * bare node), for a service that may never run a `:percentiles` action (bench/JOURNAL.md, "Memory").
 */
const hdrHistogram = lazyModule<typeof HdrHistogramJs>('hdr-histogram-js');

export interface HistogramOptions {
  readonly significantDigits: number;
  readonly highestTrackableValue?: number | undefined;
  readonly lowestDiscernibleValue?: number | undefined;
}

export class PercentileHistogram {
  private readonly histogram: HdrHistogramJs.Float64Histogram;

  constructor(options: HistogramOptions) {
    const { significantDigits, highestTrackableValue, lowestDiscernibleValue } = options;
    if (highestTrackableValue === undefined) {
      // Java's `new Recorder(digits)`: starts tiny and grows with the values.
      this.histogram = new (hdrHistogram().Float64Histogram)(1, 2, significantDigits);
      this.histogram.autoResize = true;
    } else {
      this.histogram = new (hdrHistogram().Float64Histogram)(
        lowestDiscernibleValue ?? 1,
        highestTrackableValue,
        significantDigits,
      );
    }
  }

  /** Records a metric the way Clojure hands a double to `recordValue(long)`: truncated toward zero. */
  record(metric: number): void {
    const value = Math.trunc(metric);
    if (value < 0) throw new RangeError(`:percentiles cannot record a negative metric (${metric})`);
    this.histogram.recordValue(value);
  }

  get totalCount(): number {
    return this.histogram.totalCount;
  }

  reset(): void {
    this.histogram.reset();
  }

  /** The recorded values as `[value, count, value, count, ...]`, one pair per non-empty bucket. */
  save(): number[] {
    const h = this.histogram;
    const pairs: number[] = [];
    for (let i = 0; i < h.countsArrayLength; i++) {
      const count = h.getCountAtIndex(i);
      if (count > 0) pairs.push(h.valueFromIndex(i), count);
    }
    return pairs;
  }

  /** Records again what `save` gave: each value lands in the bucket it came from. */
  load(pairs: readonly number[]): void {
    this.histogram.reset();
    for (let i = 0; i + 1 < pairs.length; i += 2)
      this.histogram.recordValueWithCount(pairs[i] as number, pairs[i + 1] as number);
  }

  /** Java HdrHistogram 2.1.12+: `count = max(1, ceil(nextDown(p)/100 × total))` with p clamped to 0..100,
   *  then the highest equivalent value of the bucket reaching that count (the lowest one for p = 0). */
  valueAtPercentile(percentile: number): number {
    const h = this.histogram;
    const requested = Math.min(Math.max(nextDown(percentile), 0), 100);
    const countAtPercentile = Math.max(Math.ceil((requested / 100) * h.totalCount), 1);
    let total = 0;
    for (let i = 0; i < h.countsArrayLength; i++) {
      total += h.getCountAtIndex(i);
      if (total >= countAtPercentile) {
        const value = h.valueFromIndex(i);
        return percentile === 0 ? h.lowestEquivalentValue(value) : h.highestEquivalentValue(value);
      }
    }
    return 0;
  }
}

const float = new Float64Array(1);
const bits = new BigInt64Array(float.buffer);

/** Java's `Math.nextAfter(x, -Infinity)`. */
export function nextDown(x: number): number {
  if (Number.isNaN(x) || x === -Infinity) return x;
  if (x === 0) return -Number.MIN_VALUE;
  float[0] = x;
  bits[0] = (bits[0] as bigint) + (x > 0 ? -1n : 1n);
  return float[0] as number;
}
