/**
 * Subscribe requests counted per hour, per address and per client (docs/status-pages.md, "Subscriptions"), in fixed
 * windows of an hour. Held in memory, at most `MAX_KEYS` keys: past it, the oldest window's keys are forgotten
 * first, so that a flood of distinct addresses costs bounded memory (each of them still counts in its client's).
 */
const HOUR_MS = 3_600_000;
const MAX_KEYS = 100_000;

export class HourlyLimiter {
  private window = 0;
  private counts = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Counts one request of `key`; false when it is over `limit` this hour. */
  take(key: string, limit: number): boolean {
    const window = Math.floor(this.now() / HOUR_MS);
    if (window !== this.window) {
      this.window = window;
      this.counts = new Map();
    }
    const count = (this.counts.get(key) ?? 0) + 1;
    if (count > limit) return false;
    if (!this.counts.has(key) && this.counts.size >= MAX_KEYS) {
      const oldest = this.counts.keys().next().value as string;
      this.counts.delete(oldest);
    }
    this.counts.set(key, count);
    return true;
  }

  /** Seconds until the counts start again. */
  retryAfterS(): number {
    return Math.ceil((HOUR_MS - (this.now() % HOUR_MS)) / 1000);
  }
}
