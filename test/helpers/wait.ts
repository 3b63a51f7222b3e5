/**
 * Polling for tests: wait until something has happened, up to a deadline, rather than sleeping for a time that
 * is too long on an idle machine and too short on a loaded one.
 */
import { vi } from 'vitest';

export interface WaitOptions {
  /** Give up after this long (default 5 s). */
  timeoutMs?: number;
  /** Pause between two attempts (default 25 ms); an async check is never run twice at once. */
  intervalMs?: number;
  /** Says what was awaited, in the error of a predicate that never held. */
  message?: string;
}

/**
 * Runs `check` until it neither throws nor returns `false`, and resolves with what it returned. `check` is a
 * predicate (`false`: not yet) or a block of `expect`s (a failed expectation: not yet). At the deadline it
 * rejects with the last failed expectation, or with `message` for a predicate. Built on `vi.waitFor`, which
 * keeps real timers even when a test fakes them.
 */
export function waitFor<T>(check: () => T | Promise<T>, options: WaitOptions = {}): Promise<Exclude<T, false>> {
  const { timeoutMs = 5000, intervalMs = 25, message = 'the condition' } = options;
  return vi.waitFor(
    async () => {
      const value = await check();
      if (value === false) throw new Error(`${message} did not hold within ${timeoutMs} ms`);
      return value as Exclude<T, false>;
    },
    { timeout: timeoutMs, interval: intervalMs },
  );
}

/**
 * Lets `ms` pass with nothing awaited: the one pause a test may take, to prove that something does NOT happen
 * (no second notification, no run of a paused check). `reason` says what it proves, for the reader and for
 * `grep quietFor`. Prefer, where there is one, a wait on a positive signal that the thing had its chance (the
 * next scheduled run ran) followed by the negative assertion: it proves more, and sooner.
 */
export function quietFor(ms: number, reason: string): Promise<void> {
  if (reason.trim() === '') throw new Error('quietFor takes the reason it waits: what the pause proves');
  // eslint-disable-next-line no-restricted-syntax -- the named pause itself: every caller says what it proves
  return new Promise((resolve) => setTimeout(resolve, ms));
}
