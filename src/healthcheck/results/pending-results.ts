/**
 * The results waiting to be written (src/healthcheck/results/result-store.ts writes them), per check: its newest
 * `history-size` raw results (the rows its history keeps; an older one would be trimmed by the write anyway), its
 * latest result, and every waiting run summed per hour (what its aggregates will add). A check that reports faster
 * than its results are written so holds at most `history-size` of them, and its uptime still counts every run
 * (docs/hardening.md, "Heartbeat floods"). At most `maxResults` raw results wait, all checks together, and at most
 * `maxBytes` of their messages (a job's report keeps 4 KiB of its body: 1,000 checks of 100 such results would hold
 * 400 MB): past either, a result still counts in its aggregates and as the latest, and takes the place of its
 * check's oldest raw result (of none when its check has none waiting). Every raw result not kept is counted with its
 * reason.
 */
import { type CheckResult, HOUR_S } from '../result-types.ts';
import type { PendingEvents, StateEvent } from '../states/events.ts';

/** Why a raw result was not kept: `history_size`, its check has history-size newer ones; `pending_full`, the cap
 *  in results; `pending_bytes`, the cap in bytes. */
export type FoldReason = 'history_size' | 'pending_full' | 'pending_bytes';

/** What a raw result's message holds in memory: two bytes a character, as V8 may keep a string. */
function bytesOf(result: CheckResult): number {
  return 2 * result.message.length;
}

/** One hour of a check's waiting runs, as its hourly aggregate row adds them (maintenance results count nowhere). */
export interface PendingHour {
  hour: number;
  runs: number;
  successes: number;
  totalMs: number;
  minMs: number;
  maxMs: number;
}

export interface PendingCheck {
  /** The newest raw results, oldest first; at most history-size. */
  readonly results: CheckResult[];
  /** Every waiting run, raw or not, per hour. */
  readonly hours: PendingHour[];
  latest: CheckResult;
  /** When the check's oldest waiting result was taken: it is written once this is write-delay old. */
  readonly sinceS: number;
  /** The changes of state its results made, oldest first (src/healthcheck/states/); null until one. */
  events: StateEvent[] | null;
}

/** The waiting runs of checks per hour, for the uptime reads (src/healthcheck/results/uptime-reads.ts). */
export interface PendingRuns {
  hoursOf(name: string): readonly PendingHour[];
  allHours(): Iterable<[string, readonly PendingHour[]]>;
}

export class PendingResults implements PendingRuns, PendingEvents {
  /** In the order the checks started waiting: the due ones come first. */
  private readonly checks = new Map<string, PendingCheck>();
  private count = 0;
  private heldBytes = 0;
  /** A message did not fit in `maxBytes` since the last write: the writes must start, as at the caps. */
  private overflowed = false;

  constructor(
    private readonly historySize: number,
    private readonly caps: { maxResults: number; maxBytes: number },
    private readonly onFolded: (reason: FoldReason) => void,
  ) {}

  /** Raw results held, all checks together. */
  get size(): number {
    return this.count;
  }

  /** The bytes of their messages. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** No check has anything waiting. */
  get empty(): boolean {
    return this.checks.size === 0;
  }

  get full(): boolean {
    return this.count >= this.caps.maxResults || this.overflowed;
  }

  /** A raw result, and the check's `state` it gives: its latest result, and what its run counts as in the uptime
   *  (the state of a check with locations is up while fewer than its quorum of locations fail). */
  add(result: CheckResult, state: CheckResult = result): void {
    let check = this.checks.get(result.name);
    if (check === undefined) {
      check = { results: [], hours: [], latest: state, sinceS: result['healthcheck-timestamp'], events: null };
      this.checks.set(result.name, check);
    }
    check.latest = state;
    if (!result.maintenance) addRun(check.hours, result, state.success);
    const bytes = bytesOf(result);
    if (this.count >= this.caps.maxResults || this.heldBytes + bytes > this.caps.maxBytes) {
      const byCount = this.count >= this.caps.maxResults;
      if (!byCount) this.overflowed = true;
      this.onFolded(byCount ? 'pending_full' : 'pending_bytes');
      if (check.results.length === 0) return;
      this.heldBytes += bytes - bytesOf(check.results.shift() as CheckResult);
      check.results.push(result);
      return;
    }
    check.results.push(result);
    this.count++;
    this.heldBytes += bytes;
    if (check.results.length > this.historySize) {
      this.heldBytes -= bytesOf(check.results.shift() as CheckResult);
      this.count--;
      this.onFolded('history_size');
    }
  }

  /** A change of state a check's result made, written with it; false when the check has nothing waiting. */
  addEvent(name: string, event: StateEvent): boolean {
    const check = this.checks.get(name);
    if (check === undefined) return false;
    (check.events ??= []).push(event);
    return true;
  }

  eventsOf(name: string): readonly StateEvent[] {
    return this.checks.get(name)?.events ?? [];
  }

  *allEvents(): Iterable<[string, readonly StateEvent[]]> {
    for (const [name, check] of this.checks) if (check.events !== null) yield [name, check.events];
  }

  get(name: string): PendingCheck | undefined {
    return this.checks.get(name);
  }

  /** The waiting checks, the one that has waited longest first. */
  entries(): IterableIterator<[string, PendingCheck]> {
    return this.checks.entries();
  }

  /** Takes a check's `max` oldest raw results off (they are being written). */
  takeOldest(check: PendingCheck, max: number): CheckResult[] {
    const taken = check.results.splice(0, max);
    this.count -= taken.length;
    for (const result of taken) this.heldBytes -= bytesOf(result);
    if (taken.length > 0) this.overflowed = false;
    return taken;
  }

  /** Forgets what a check has waiting (written, or the check is gone). */
  remove(name: string): void {
    const check = this.checks.get(name);
    if (check === undefined) return;
    this.count -= check.results.length;
    for (const result of check.results) this.heldBytes -= bytesOf(result);
    if (check.results.length > 0) this.overflowed = false;
    this.checks.delete(name);
  }

  hoursOf(name: string): readonly PendingHour[] {
    return this.checks.get(name)?.hours ?? [];
  }

  *allHours(): Iterable<[string, readonly PendingHour[]]> {
    for (const [name, check] of this.checks) yield [name, check.hours];
  }
}

function addRun(hours: PendingHour[], result: CheckResult, up: boolean): void {
  const timestampS = result['healthcheck-timestamp'];
  const hour = timestampS - (timestampS % HOUR_S);
  const durationMs = result.duration;
  const success = up ? 1 : 0;
  // Results come in time order: the hour is nearly always the last one.
  const last = hours[hours.length - 1];
  const bucket = last !== undefined && last.hour === hour ? last : hours.find((candidate) => candidate.hour === hour);
  if (bucket === undefined) {
    hours.push({ hour, runs: 1, successes: success, totalMs: durationMs, minMs: durationMs, maxMs: durationMs });
    return;
  }
  bucket.runs++;
  bucket.successes += success;
  bucket.totalMs += durationMs;
  if (durationMs < bucket.minMs) bucket.minMs = durationMs;
  if (durationMs > bucket.maxMs) bucket.maxMs = durationMs;
}
