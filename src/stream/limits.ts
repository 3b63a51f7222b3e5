/**
 * Cardinality caps of a stream (docs/hardening.md): how many `:by` forks one action keeps, how many entries
 * one stream's index holds, and when an idle fork's state is released. Past a cap new keys are dropped, never
 * the process: each drop is counted (`stream_dropped_events_total{name,reason}`) and a warning is logged at
 * most once per interval for each stream and reason.
 */

export interface StreamLimits {
  /** Forks one `:by` action keeps; events of a new key past it are dropped (reason `fork_limit`). */
  readonly maxForks: number;
  /** Entries one stream's index keeps; events of a new key past it are not indexed (reason `index_full`). */
  readonly maxIndexEntries: number;
  /** Event time (ns) after which a fork no event reached is released, when `:by` sets no `:fork-ttl`. */
  readonly forkIdleNs: number;
}

/** bench/cardinality.ts measures about 1.4 KB of heap per fork of a windowed child and 250 B per index entry
 *  plus its event: a stream at both caps stays within a few hundred MB, well inside a 2-core, 24 GB machine. */
export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  maxForks: 100_000,
  maxIndexEntries: 250_000,
  forkIdleNs: 3600e9,
};

export type DropReason = 'fork_limit' | 'index_full';

export interface DropReporterOptions {
  count(stream: string, reason: DropReason): void;
  warn(stream: string, reason: DropReason, droppedSinceLastWarning: number): void;
  /** Minimum time between two warnings for the same stream and reason. */
  warnIntervalMs?: number;
}

/** Counts every drop and warns once per interval per (stream, reason), with how many were dropped since. */
export class DropReporter {
  private readonly lastWarning = new Map<string, { at: number; dropped: number }>();
  private readonly warnIntervalMs: number;

  constructor(private readonly options: DropReporterOptions) {
    this.warnIntervalMs = options.warnIntervalMs ?? 60_000;
  }

  drop(stream: string, reason: DropReason): void {
    this.options.count(stream, reason);
    const key = `${stream}\u001f${reason}`;
    let state = this.lastWarning.get(key);
    if (state === undefined) {
      state = { at: -Infinity, dropped: 0 };
      this.lastWarning.set(key, state);
    }
    state.dropped++;
    const now = Date.now();
    if (now - state.at < this.warnIntervalMs) return;
    this.options.warn(stream, reason, state.dropped);
    state.at = now;
    state.dropped = 0;
  }

  /** Forgets a removed stream's warning state. */
  forget(stream: string): void {
    for (const key of this.lastWarning.keys()) if (key.startsWith(`${stream}\u001f`)) this.lastWarning.delete(key);
  }
}
