/**
 * The abort of a run (its timeout, or its check removed) without an event listener added and removed by every run. The
 * scheduler runs checks under signals of controllers it reuses (src/healthcheck/scheduling/scheduler.ts); each such
 * signal keeps one `abort` listener for its whole life, which calls the listener the run in flight set with
 * `onRunAbort`. Node's EventTarget allocates about 400 bytes a run to add a listener and take it off again, with option
 * objects validated each time; at 12,000 checks that was 1,200 times a second (bench/JOURNAL.md, "Issue 66"). The kinds
 * whose runs are the many (TCP, HTTP) take it; a signal from elsewhere (a test's, `AbortSignal.timeout`) gets an
 * `abort` listener, as any signal does.
 *
 * The listener that stays also keeps the signal's entry in its map of listeners: Node's EventTarget drops an event's
 * entry when its last listener goes, and once that map's table is in the old generation V8 rebuilt it there at each
 * add and remove (bench/JOURNAL.md, "Memory: what runs leave in the old generation").
 */

const RUN_LISTENER = Symbol('run abort listener');

/** What a run does when it is aborted: an object, so that a run passes itself rather than a closure. */
export interface RunAbortListener {
  handleEvent(): void;
}

type RunSignal = AbortSignal & { [RUN_LISTENER]: RunAbortListener | null };

function isRunSignal(signal: AbortSignal): signal is RunSignal {
  return RUN_LISTENER in signal;
}

/** A controller for runs: its signal, when aborted, calls what the run in flight gave `onRunAbort`. */
export function runController(): AbortController {
  const controller = new AbortController();
  const signal = controller.signal as RunSignal;
  signal[RUN_LISTENER] = null;
  signal.addEventListener('abort', () => {
    const listener = signal[RUN_LISTENER];
    signal[RUN_LISTENER] = null;
    listener?.handleEvent();
  });
  return controller;
}

/** Calls `listener` once when `signal` aborts, unless `offRunAbort` comes first. */
export function onRunAbort(signal: AbortSignal, listener: RunAbortListener): void {
  if (isRunSignal(signal)) signal[RUN_LISTENER] = listener;
  else signal.addEventListener('abort', listener, { once: true });
}

/** The run ended: `listener` is not called any more. */
export function offRunAbort(signal: AbortSignal, listener: RunAbortListener): void {
  if (!isRunSignal(signal)) signal.removeEventListener('abort', listener);
  else if (signal[RUN_LISTENER] === listener) signal[RUN_LISTENER] = null;
}
