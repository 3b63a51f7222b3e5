/**
 * Runs jobs periodically: a min-heap of due times behind one timer (12,000 checks cost one armed timer, not
 * 12,000), a global cap on concurrent runs with a FIFO queue behind it, and one AbortSignal per run that fires
 * at the job's timeout. It knows nothing of check kinds: a job is an interval, a timeout and a `run(signal)`.
 *
 * Timing: the first run is due after a random delay over [0, min(interval, 30 s)), rounded up to the start tick,
 * so that checks added together do not start together; then run n is due at first + n·interval, whatever the
 * runs' durations, and starts at the first tick at or after that. Runs of one job
 * never overlap, and a run that ends after its next slot skips to the first slot still in the future (no burst
 * of catch-up runs). A removed job never starts again, not even when it is removed during its initial delay.
 */
import { DueHeap } from './due-heap.ts';
import { runController } from '../run-signal.ts';
import { tickInForce } from './start-tick.ts';

export interface SchedulerJob {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Resolves on success, rejects with the failure; must settle soon after `signal` fires. */
  run(signal: AbortSignal): Promise<void>;
}

export interface SchedulerOptions<J extends SchedulerJob> {
  maxConcurrentRuns: number;
  /** A run ended (not called for runs of removed jobs). `failure` is undefined on success. */
  onRunFinished(job: J, failure: unknown, durationMs: number): void;
  /** How late a run started compared to its due time, in ms (queueing behind the cap included). */
  onRunStarted?(lagMs: number): void;
  /**
   * Runs start on a grid of this many ms (0: at their due time): first runs are due on it, and a due time off it
   * waits for the next tick. The checks due within one tick then start in one timer callback, and their
   * connections complete in a few polls of the event loop instead of one wake-up each (docs/performance.md).
   * `auto`: 2 s, 1 s, 500 ms or 250 ms as the runs due grow (src/healthcheck/scheduling/start-tick.ts).
   */
  tickMs?: number | 'auto';
  /** Monotonic clock in ms; injectable for tests. */
  now?: () => number;
  /** Uniform in [0, 1); injectable for tests. */
  random?: () => number;
}

/** The first run waits at most this long, so that a check with a 1 h interval does not stay silent for an hour. */
const MAX_INITIAL_DELAY_MS = 30_000;

/** Idle controllers kept for reuse: enough for the runs a tick starts, bounded whatever the cap on runs. */
const MAX_IDLE_CONTROLLERS = 1024;

const enum State {
  /** In the heap, waiting for its due time. */
  Scheduled,
  /** Due, waiting for a free run slot. */
  Queued,
  Running,
  Removed,
}

/** A scheduled job; the handle `add` returns and `remove` takes. */
export class ScheduledJob<J extends SchedulerJob> {
  /** @internal */ state = State.Scheduled;
  /** @internal */ due = 0;
  /** @internal */ heapIndex = -1;
  /** @internal */ startedAt = 0;
  /** @internal The controller of the run in flight. */ controller: AbortController | null = null;
  /** @internal */ timeoutTimer: ReturnType<typeof setTimeout> | null = null;
  /** @internal */ whenIdle: (() => void) | null = null;
  // Bound once per job so that a run allocates no closures of its own (bound functions also stay small: a
  // closure assigned to a property gets a dictionary-mode `name` under esbuild's keepNames, 250 bytes a piece).
  /** @internal */ readonly onSuccess: () => void;
  /** @internal */ readonly onFailure: (failure: unknown) => void;

  constructor(
    readonly job: J,
    scheduler: Scheduler<J>,
  ) {
    this.onSuccess = scheduler.finishRun.bind(scheduler, this, undefined);
    this.onFailure = scheduler.failRun.bind(scheduler, this);
  }
}

function abortOnTimeout(controller: AbortController): void {
  controller.abort();
}

export class Scheduler<J extends SchedulerJob> {
  private readonly heap = new DueHeap<ScheduledJob<J>>();
  /** FIFO of due jobs waiting for a run slot; `queueHead` avoids O(n) shifts. */
  private queue: (ScheduledJob<J> | null)[] = [];
  private queueHead = 0;
  private running = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerDue = Infinity;
  private started = false;
  private stopping = false;
  private idleWaiters: (() => void)[] = [];
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly onTimer = () => this.tick();
  private cap: number;
  /** The configured tick, and the one in force: never more than a quarter of the shortest interval. */
  private configuredTick: number | 'auto';
  private tickLength: number;
  /** How many jobs have each interval, for the shortest one and the runs due a ms. */
  private readonly intervals = new Map<number, number>();
  /**
   * Controllers of runs that ended without being aborted, for the next runs to take. Not one per check: on Node
   * 20 every AbortSignal has a hidden class of its own, and 12,000 signals held for the checks' lives were 5 MB;
   * the runs in flight at once are far fewer.
   */
  private readonly idleControllers: AbortController[] = [];

  constructor(private readonly options: SchedulerOptions<J>) {
    this.now = options.now ?? (() => performance.now());
    this.random = options.random ?? Math.random;
    this.cap = options.maxConcurrentRuns;
    this.configuredTick = options.tickMs ?? 0;
    this.tickLength = 0;
    this.fitTick();
  }

  get tickMs(): number | 'auto' {
    return this.configuredTick;
  }

  /** Applies to first runs added from now on and to every later arming of the timer. */
  set tickMs(tick: number | 'auto') {
    this.configuredTick = tick;
    this.fitTick();
  }

  private fitTick(): void {
    this.tickLength = tickInForce(this.configuredTick, this.intervals);
  }

  private countInterval(interval: number, delta: 1 | -1): void {
    const count = (this.intervals.get(interval) ?? 0) + delta;
    if (count > 0) this.intervals.set(interval, count);
    else this.intervals.delete(interval);
    // The shortest interval changes only when an interval appears or goes; the runs due, with every job.
    if (this.configuredTick === 'auto' || count === 0 || (delta === 1 && count === 1)) this.fitTick();
  }

  get maxConcurrentRuns(): number {
    return this.cap;
  }

  /** A raised cap starts queued runs at once; a lowered one lets the runs in flight finish. */
  set maxConcurrentRuns(cap: number) {
    this.cap = cap;
    this.startQueued();
  }

  get size(): number {
    return this.heap.length + this.queue.length - this.queueHead + this.running;
  }

  get runningCount(): number {
    return this.running;
  }

  /** Starts running due jobs; jobs added before are due relative to their own add time. */
  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.arm();
  }

  /**
   * Schedules a job: its first run comes after the random initial delay, or after `delayMs` (at once when not
   * positive): a check taken over from another node runs when it is due after its last result (docs/cluster.md).
   */
  add(job: J, delayMs?: number): ScheduledJob<J> {
    if (this.stopping) throw new Error('the scheduler is stopped');
    const entry = new ScheduledJob(job, this);
    this.countInterval(job.intervalMs, 1);
    const now = this.now();
    entry.due = this.onGrid(
      now +
        (delayMs !== undefined ? Math.max(0, delayMs) : this.random() * Math.min(job.intervalMs, MAX_INITIAL_DELAY_MS)),
    );
    this.heap.push(entry);
    this.arm();
    return entry;
  }

  /**
   * Removes a job: it never starts again. A run in flight is aborted and its outcome dropped; the promise
   * resolves once no run of the job is in flight, so that its resources can then be released.
   */
  remove(entry: ScheduledJob<J>): Promise<void> {
    const state = entry.state;
    if (state === State.Removed) return Promise.resolve();
    entry.state = State.Removed;
    this.countInterval(entry.job.intervalMs, -1);
    if (state === State.Scheduled) {
      this.heap.remove(entry);
      this.arm();
    } else if (state === State.Running) {
      return new Promise((resolve) => {
        entry.whenIdle = resolve;
        entry.controller?.abort();
      });
    }
    // A queued entry stays in the queue as Removed and is skipped when its turn comes.
    return Promise.resolve();
  }

  /** Stops starting runs; resolves once the runs in flight have finished (and been reported). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const entry of this.heap.drain()) entry.state = State.Removed;
    for (let i = this.queueHead; i < this.queue.length; i++) {
      const entry = this.queue[i];
      if (entry) entry.state = State.Removed;
    }
    this.queue = [];
    this.queueHead = 0;
    if (this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private tick(): void {
    this.timer = null;
    this.timerDue = Infinity;
    // Node's timers have ms resolution and may fire a fraction of a ms before a fractional due time.
    const horizon = this.now() + 1;
    for (let top = this.heap.peek(); top !== undefined && top.due <= horizon; top = this.heap.peek()) {
      this.heap.pop();
      if (this.running < this.cap) this.startRun(top);
      else {
        top.state = State.Queued;
        this.queue.push(top);
      }
    }
    this.arm();
  }

  private startRun(entry: ScheduledJob<J>): void {
    const now = this.now();
    this.options.onRunStarted?.(now > entry.due ? now - entry.due : 0);
    entry.state = State.Running;
    entry.startedAt = now;
    this.running++;
    const controller = this.idleControllers.pop() ?? runController();
    entry.controller = controller;
    entry.timeoutTimer = setTimeout(abortOnTimeout, entry.job.timeoutMs, controller);
    let run: Promise<void>;
    try {
      run = entry.job.run(controller.signal);
    } catch (error) {
      run = Promise.reject(error);
    }
    run.then(entry.onSuccess, entry.onFailure);
  }

  /** @internal A run rejected (with undefined, for a careless job: still a failure). */
  failRun(entry: ScheduledJob<J>, failure: unknown): void {
    this.finishRun(entry, failure ?? new Error('the run failed'));
  }

  /** @internal Called when a run settles. */
  finishRun(entry: ScheduledJob<J>, failure: unknown): void {
    const now = this.now();
    if (entry.timeoutTimer !== null) clearTimeout(entry.timeoutTimer);
    entry.timeoutTimer = null;
    // A run that was not aborted leaves its controller as good as new.
    const controller = entry.controller;
    entry.controller = null;
    if (controller !== null && !controller.signal.aborted && this.idleControllers.length < MAX_IDLE_CONTROLLERS)
      this.idleControllers.push(controller);
    this.running--;
    if (entry.state === State.Removed) {
      const whenIdle = entry.whenIdle;
      entry.whenIdle = null;
      whenIdle?.();
    } else {
      this.options.onRunFinished(entry.job, failure, now - entry.startedAt);
      if (this.stopping) entry.state = State.Removed;
      else this.reschedule(entry, now);
    }
    this.startQueued();
    if (this.stopping && this.running === 0) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /**
   * The next slot of the job's grid first + n·interval that is still in the future. When the interval is a whole
   * number of ticks, that slot is moved onto the tick grid: a tick that widened since the job was placed (checks
   * went, and an automatic tick grew) would otherwise make every run of it wait for the tick after its slot. It
   * moves once, by less than a tick; an interval that is not a whole number of ticks keeps its own grid.
   */
  private reschedule(entry: ScheduledJob<J>, now: number): void {
    const interval = entry.job.intervalMs;
    let due = entry.due + interval;
    if (due <= now) due += (Math.floor((now - due) / interval) + 1) * interval;
    if (this.tickLength > 0 && interval % this.tickLength === 0) due = this.onGrid(due);
    entry.due = due;
    entry.state = State.Scheduled;
    this.heap.push(entry);
    this.arm();
  }

  private startQueued(): void {
    while (this.running < this.cap && this.queueHead < this.queue.length) {
      const entry = this.queue[this.queueHead];
      this.queue[this.queueHead++] = null;
      if (entry && entry.state === State.Queued) this.startRun(entry);
    }
    if (this.queueHead === this.queue.length) {
      this.queue.length = 0;
      this.queueHead = 0;
    } else if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
  }

  /** Keeps the one timer armed for the earliest due time. */
  private arm(): void {
    if (!this.started || this.stopping) return;
    const top = this.heap.peek();
    const due = top === undefined ? Infinity : top.due;
    if (due === this.timerDue) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerDue = due;
    if (top === undefined) return;
    this.timer = setTimeout(this.onTimer, Math.max(0, this.onGrid(due) - this.now()));
  }

  /** The first tick at or after `time`. */
  private onGrid(time: number): number {
    const tick = this.tickLength;
    return tick > 0 ? Math.ceil(time / tick) * tick : time;
  }
}
