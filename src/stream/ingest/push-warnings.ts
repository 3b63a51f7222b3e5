/**
 * What an HTTP push accepted but is most likely a mistake (docs/http-api.md, push events): a `time` that reads as
 * epoch seconds or milliseconds (before the year 2000 once read as nanoseconds), and a `metric` sent as a numeric
 * string (kept as the string; conditions and aggregations compare numbers). One warning per kind, naming the
 * first event and how many more, so that a batch of thousands makes two lines, not thousands.
 */
const YEAR_2000_NS = 946_684_800e9;
const YEAR_2000_S = 946_684_800;
/** Epoch seconds stay below this until the year 5138; epoch milliseconds from 2000 on are above it. */
const SECONDS_BELOW = 1e11;

export class PushWarnings {
  private timeIndex = -1;
  private timeValue = 0;
  private timeCount = 0;
  private metricIndex = -1;
  private metricValue = '';
  private metricCount = 0;

  /** Cheap enough for the push hot path: one comparison for a time in nanoseconds. */
  checkTime(index: number, time: number): void {
    if (time >= YEAR_2000_NS || time < YEAR_2000_S) return;
    if (this.timeCount++ === 0) {
      this.timeIndex = index;
      this.timeValue = time;
    }
  }

  checkMetric(index: number, metric: unknown): void {
    if (typeof metric !== 'string' || metric.trim() === '' || !Number.isFinite(Number(metric))) return;
    if (this.metricCount++ === 0) {
      this.metricIndex = index;
      this.metricValue = metric;
    }
  }

  /** How many events had a warning, by field: for the `stream_ingest_warnings_total` counter. */
  get counts(): { time: number; metric: number } {
    return { time: this.timeCount, metric: this.metricCount };
  }

  messages(): string[] {
    const messages: string[] = [];
    if (this.timeCount > 0) {
      const unit = this.timeValue < SECONDS_BELOW ? 'seconds' : 'milliseconds';
      const ns = this.timeValue * (unit === 'seconds' ? 1e9 : 1e6);
      messages.push(
        `events[${this.timeIndex}].time ${this.timeValue} reads as epoch ${unit} (${new Date(ns / 1e6).toISOString()}); time is epoch nanoseconds (${ns}), so it was taken as ${new Date(this.timeValue / 1e6).toISOString()}${more(this.timeCount)}`,
      );
    }
    if (this.metricCount > 0) {
      messages.push(
        `events[${this.metricIndex}].metric is the string ${JSON.stringify(this.metricValue)}; it was kept as a string, which conditions and aggregations do not compare as a number: send ${this.metricValue.trim()}${more(this.metricCount)}`,
      );
    }
    return messages;
  }
}

function more(count: number): string {
  return count > 1 ? ` (and ${count - 1} more event${count > 2 ? 's' : ''} alike)` : '';
}
