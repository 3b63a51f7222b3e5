import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Scheduler, type SchedulerJob } from '../../../src/healthcheck/scheduling/scheduler.ts';

/** A job whose runs last `runMs` of (fake) time, or until the run signal fires; it records what happened. */
class TestJob implements SchedulerJob {
  readonly starts: number[] = [];
  readonly aborted: number[] = [];
  running = 0;
  maxRunning = 0;

  constructor(
    readonly name: string,
    readonly intervalMs: number,
    readonly timeoutMs: number,
    private readonly runMs: number,
    private readonly fail = false,
  ) {}

  run(signal: AbortSignal): Promise<void> {
    this.starts.push(Date.now());
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.running--;
        if (this.fail) reject(new Error(`${this.name} failed`));
        else resolve();
      }, this.runMs);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        this.running--;
        this.aborted.push(Date.now());
        reject(new Error('aborted'));
      });
    });
  }
}

interface Finished {
  name: string;
  at: number;
  failure: unknown;
  durationMs: number;
}

function makeScheduler(options: { cap?: number; random?: () => number; tickMs?: number | 'auto' } = {}) {
  const finished: Finished[] = [];
  const lags: number[] = [];
  const scheduler = new Scheduler<TestJob>({
    maxConcurrentRuns: options.cap ?? 1000,
    onRunFinished: (job, failure, durationMs) => finished.push({ name: job.name, at: Date.now(), failure, durationMs }),
    onRunStarted: (lagMs) => lags.push(lagMs),
    now: () => Date.now(),
    random: options.random ?? (() => 0),
    ...(options.tickMs !== undefined ? { tickMs: options.tickMs } : {}),
  });
  return { scheduler, finished, lags };
}

/** Stops the scheduler once the runs in flight (1 ms of fake time) have ended. */
async function stopAfterRuns(scheduler: Scheduler<TestJob>): Promise<void> {
  const stopped = scheduler.stop();
  await vi.advanceTimersByTimeAsync(10);
  await stopped;
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('the scheduler', () => {
  it('runs first after the random delay, then on the grid first + n·interval whatever the run durations', async () => {
    const { scheduler, finished } = makeScheduler({ random: () => 0.5 });
    const job = new TestJob('a', 10_000, 5_000, 3_000);
    scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(36_000);
    expect(job.starts).toEqual([5_000, 15_000, 25_000, 35_000]);
    expect(finished.map((f) => f.at)).toEqual([8_000, 18_000, 28_000]);
    expect(finished.every((f) => f.failure === undefined && f.durationMs === 3_000)).toBe(true);
  });

  it('spreads the first runs over [0, min(interval, 30 s))', async () => {
    const { scheduler } = makeScheduler({ random: () => 0.999 });
    const short = new TestJob('short', 4_000, 1_000, 1);
    const long = new TestJob('long', 3_600_000, 1_000, 1);
    scheduler.add(short);
    scheduler.add(long);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(short.starts[0]).toBe(3_996);
    expect(long.starts).toEqual([29_970]);
  });

  it('starts runs on the tick grid: first runs due on it, runs due off it at the next tick, with that wait as lag', async () => {
    let draw = 0;
    // First runs drawn at 1,251 ms, 1,270 ms and 1,299 ms all start at the 1,300 ms tick, in one timer callback.
    const draws = [0.1251, 0.127, 0.1299];
    const { scheduler, lags } = makeScheduler({ tickMs: 50, random: () => draws[draw++] as number });
    const onGrid = [
      new TestJob('a', 10_000, 1_000, 1),
      new TestJob('b', 10_000, 1_000, 1),
      new TestJob('c', 10_000, 1_000, 1),
    ];
    for (const job of onGrid) scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(11_400);
    for (const job of onGrid) expect(job.starts).toEqual([1_300, 11_300]);
    expect(lags.every((lag) => lag === 0)).toBe(true);

    // An interval that is not a multiple of the tick drifts off the grid: its runs wait for the next tick.
    lags.length = 0;
    draws.push(0);
    const offGrid = new TestJob('off', 1_010, 500, 1);
    scheduler.add(offGrid);
    await vi.advanceTimersByTimeAsync(3_100);
    expect(offGrid.starts).toEqual([11_400, 12_450, 13_450, 14_450]);
    expect(lags).toEqual([0, 40, 30, 20]);
    await scheduler.stop();
  });

  it('narrows the tick to a quarter of the shortest interval, and widens it back once that check is gone', async () => {
    const { scheduler } = makeScheduler({ tickMs: 250 });
    const fast = new TestJob('fast', 100, 50, 1);
    const handle = scheduler.add(fast);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(1_000);
    // On a 250 ms grid a 100 ms check would run every 250 ms: 4 runs in a second instead of 10.
    expect(fast.starts).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1_000]);
    await scheduler.remove(handle);
    const slow = new TestJob('slow', 1_010, 500, 1);
    scheduler.add(slow, 0);
    await vi.advanceTimersByTimeAsync(2_100);
    // Back on the 250 ms grid: due at 2,010 ms, it waits for the 2,250 ms tick.
    expect(slow.starts).toEqual([1_000, 2_250]);
    await scheduler.stop();
  });

  it('widens an automatic tick to 2 s while few runs come due, and to no less than 250 ms as they grow', async () => {
    let draw = 0;
    // First runs spread over the interval, 7 ms apart, as the random delay would.
    const { scheduler } = makeScheduler({
      tickMs: 'auto',
      cap: 100_000,
      random: () => ((draw++ * 7) % 10_000) / 10_000,
    });
    const small = Array.from({ length: 1_200 }, (_, i) => new TestJob(`small-${i}`, 10_000, 1_000, 1));
    const handles = small.map((job) => scheduler.add(job));
    scheduler.start();
    await vi.advanceTimersByTimeAsync(20_000);
    // 1,200 checks at 10 s: 120 runs a second, which start together every other second.
    const smallStarts = small.flatMap((job) => job.starts);
    expect(small.every((job) => job.starts.length >= 2)).toBe(true);
    expect(smallStarts.every((at) => at % 2_000 === 0)).toBe(true);
    expect(new Set(smallStarts).size).toBe(11);

    // 12,000 checks: 1,200 runs a second, every 250 ms as with the fixed tick before.
    const large = Array.from({ length: 10_800 }, (_, i) => new TestJob(`large-${i}`, 10_000, 1_000, 1));
    handles.push(...large.map((job) => scheduler.add(job)));
    await vi.advanceTimersByTimeAsync(10_001);
    expect(large.every((job) => job.starts.length > 0)).toBe(true);
    const largeStarts = large.flatMap((job) => job.starts);
    expect(largeStarts.every((at) => at % 250 === 0)).toBe(true);
    expect(largeStarts.filter((at) => at % 1_000 !== 0).length).toBeGreaterThan(5_000);

    // Back to few checks: the grid widens again.
    await Promise.all(handles.map((handle) => scheduler.remove(handle)));
    const later = Array.from({ length: 100 }, (_, i) => new TestJob(`later-${i}`, 10_000, 1_000, 1));
    for (const job of later) scheduler.add(job);
    await vi.advanceTimersByTimeAsync(20_000);
    const laterStarts = later.flatMap((job) => job.starts);
    expect(laterStarts.length).toBe(200);
    expect(laterStarts.every((at) => at % 2_000 === 0)).toBe(true);
    await scheduler.stop();
  });

  it('keeps an automatic tick that every interval is a whole number of, and one that divides a second', async () => {
    let draw = 0;
    const { scheduler, lags } = makeScheduler({ tickMs: 'auto', random: () => ((draw++ * 7) % 10_000) / 10_000 });
    // An interval of 15 s is no whole number of 2 s: the tick stays at 1 s, and no run waits for one.
    const jobs = Array.from({ length: 100 }, (_, i) => new TestJob(`ten-${i}`, 10_000, 1_000, 1));
    jobs.push(new TestJob('fifteen', 15_000, 1_000, 1));
    for (const job of jobs) scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(40_000);
    const starts = jobs.flatMap((job) => job.starts);
    expect(starts.every((at) => at % 1_000 === 0)).toBe(true);
    expect(starts.some((at) => at % 2_000 !== 0)).toBe(true);
    expect(lags.every((lag) => lag === 0)).toBe(true);

    // A 3 s interval allows no tick over 750 ms; 750 ms does not divide a second, 500 ms does.
    lags.length = 0;
    const three = new TestJob('three', 3_000, 1_000, 1);
    scheduler.add(three);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(three.starts.length).toBeGreaterThanOrEqual(6);
    expect(three.starts.every((at) => at % 500 === 0)).toBe(true);
    expect(lags.every((lag) => lag === 0)).toBe(true);
    await stopAfterRuns(scheduler);
  });

  it('moves the runs a wider tick leaves off its grid onto it, each a second later once', async () => {
    let draw = 0;
    const { scheduler, lags } = makeScheduler({ tickMs: 'auto', random: () => ((draw++ * 7) % 10_000) / 10_000 });
    // With a 15 s check the tick is 1 s, and half of the others are due on odd seconds.
    const fifteen = scheduler.add(new TestJob('fifteen', 15_000, 1_000, 1));
    const jobs = Array.from({ length: 100 }, (_, i) => new TestJob(`ten-${i}`, 10_000, 1_000, 1));
    for (const job of jobs) scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(20_000);
    const before = jobs.map((job) => job.starts.length);
    expect(jobs.filter((job) => (job.starts.at(-1) as number) % 2_000 !== 0).length).toBeGreaterThan(20);

    // Without it the tick widens to 2 s. A check on odd seconds runs once more there, then a second later on the
    // 2 s grid: not a second late at every run, and without a lag, since its slot itself moved.
    await scheduler.remove(fifteen);
    await vi.advanceTimersByTimeAsync(30_000);
    for (const [i, job] of jobs.entries()) {
      const after = job.starts.slice((before[i] as number) - 1);
      const gaps = after.slice(1).map((at, k) => at - (after[k] as number));
      expect(gaps.filter((gap) => gap === 11_000).length).toBe((after[0] as number) % 2_000 === 0 ? 0 : 1);
      expect(gaps.every((gap) => gap === 10_000 || gap === 11_000)).toBe(true);
      expect(after.slice(2).every((at) => at % 2_000 === 0)).toBe(true);
    }
    expect(lags.every((lag) => lag === 0)).toBe(true);
    await stopAfterRuns(scheduler);
  });

  it('narrows the tick no further than 50 ms, so that a check at interval 1ms cannot set the whole grid to 1 ms', async () => {
    const { scheduler } = makeScheduler({ tickMs: 250 });
    // Cabourotte has no minimum interval; before the narrowing, a 50 ms tick bounded such a check to 20 runs a second.
    const hostile = new TestJob('hostile', 1, 1, 0);
    scheduler.add(hostile);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(hostile.starts.length).toBeLessThanOrEqual(21);
    expect(hostile.starts.every((at) => at % 50 === 0)).toBe(true);
    // The run started at 1,000 ms ends on the fake clock.
    const stopped = scheduler.stop();
    await vi.advanceTimersByTimeAsync(10);
    await stopped;
  });

  it('never overlaps runs of one check and skips the missed slots after an overrun instead of bursting', async () => {
    const { scheduler, lags } = makeScheduler();
    const job = new TestJob('slow', 10_000, 60_000, 25_000);
    scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(95_000);
    expect(job.starts).toEqual([0, 30_000, 60_000, 90_000]);
    expect(job.maxRunning).toBe(1);
    expect(lags.every((lag) => lag === 0)).toBe(true);
  });

  it('aborts a run through its signal at the timeout and reports the failure', async () => {
    const { scheduler, finished } = makeScheduler();
    const job = new TestJob('hang', 10_000, 2_000, 1_000_000);
    scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(2_500);
    expect(job.aborted).toEqual([2_000]);
    expect(finished).toHaveLength(1);
    expect((finished[0]?.failure as Error).message).toBe('aborted');
    expect(finished[0]?.durationMs).toBe(2_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(job.starts).toEqual([0, 10_000]);
  });

  it('hands every run a pooled signal that keeps one listener of its own between runs', async () => {
    // Node drops a signal's listener entry when its last listener goes, and rebuilds its table in the old generation
    // at the next add: the scheduler's own listener keeps the entry (bench/JOURNAL.md, "Memory: what runs leave in
    // the old generation").
    const { scheduler, finished } = makeScheduler();
    const listening: number[] = [];
    const job: TestJob = Object.assign(new TestJob('pooled', 1_000, 500, 10), {
      run: (signal: AbortSignal) => {
        listening.push(getEventListeners(signal, 'abort').length);
        return Promise.resolve();
      },
    });
    scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(3_100);
    expect(finished.map((f) => f.failure)).toEqual([undefined, undefined, undefined, undefined]);
    expect(listening).toEqual([1, 1, 1, 1]);
  });

  it('reports a rejected run and a run that throws synchronously as failures, and keeps scheduling them', async () => {
    const { scheduler, finished } = makeScheduler();
    const failing = new TestJob('failing', 1_000, 500, 10, true);
    const throwing: TestJob = Object.assign(new TestJob('throwing', 1_000, 500, 10), {
      run: () => {
        throw new Error('sync boom');
      },
    });
    scheduler.add(failing);
    scheduler.add(throwing);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(2_100);
    const messages = finished.map((f) => `${f.name}: ${(f.failure as Error).message}`);
    expect(messages.filter((m) => m === 'failing: failing failed')).toHaveLength(3);
    expect(messages.filter((m) => m === 'throwing: sync boom')).toHaveLength(3);
  });

  it('caps concurrent runs and starts the waiting ones in FIFO order, counting the wait as lag', async () => {
    // First runs due at 0, 3, 6, 9 and 12 ms, in the order the checks were added.
    let draw = 0;
    const { scheduler, lags } = makeScheduler({ cap: 2, random: () => draw++ * 0.0001 });
    const jobs = ['a', 'b', 'c', 'd', 'e'].map((name) => new TestJob(name, 60_000, 5_000, 1_000));
    for (const job of jobs) scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(30);
    expect(scheduler.runningCount).toBe(2);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(jobs.map((job) => job.starts[0])).toEqual([0, 3, 1_000, 1_003, 2_000]);
    expect(lags.map(Math.round)).toEqual([0, 0, 994, 994, 1_988]);
  });

  it('starts queued runs at once when the cap is raised', async () => {
    const { scheduler } = makeScheduler({ cap: 1 });
    const jobs = ['a', 'b', 'c'].map((name) => new TestJob(name, 60_000, 5_000, 1_000));
    for (const job of jobs) scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);
    scheduler.maxConcurrentRuns = 3;
    expect(scheduler.runningCount).toBe(3);
  });

  it('never runs a check removed during its initial delay', async () => {
    const { scheduler, finished } = makeScheduler({ random: () => 0.5 });
    const job = new TestJob('a', 10_000, 1_000, 10);
    const handle = scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(4_000);
    await scheduler.remove(handle);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(job.starts).toEqual([]);
    expect(finished).toEqual([]);
    expect(scheduler.size).toBe(0);
  });

  it('never runs a check removed while it waits for a run slot', async () => {
    const { scheduler } = makeScheduler({ cap: 1 });
    const first = new TestJob('first', 60_000, 5_000, 1_000);
    const queued = new TestJob('queued', 60_000, 5_000, 1_000);
    scheduler.add(first);
    const handle = scheduler.add(queued);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);
    await scheduler.remove(handle);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(queued.starts).toEqual([]);
    expect(first.starts).toEqual([0, 60_000, 120_000]);
  });

  it('aborts the run in flight of a removed check, drops its outcome, and resolves once it has settled', async () => {
    const { scheduler, finished } = makeScheduler();
    const job = new TestJob('a', 10_000, 5_000, 4_000);
    const handle = scheduler.add(job);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(1_000);
    let idle = false;
    const removal = scheduler.remove(handle).then(() => (idle = true));
    expect(job.aborted).toEqual([1_000]);
    await removal;
    expect(idle).toBe(true);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(job.starts).toEqual([0]);
    expect(finished).toEqual([]);
  });

  it('keeps the other checks on their grid when one is removed', async () => {
    const { scheduler } = makeScheduler({ random: () => 0.1 });
    const kept = new TestJob('kept', 10_000, 1_000, 10);
    const removed = new TestJob('removed', 10_000, 1_000, 10);
    scheduler.add(kept);
    const handle = scheduler.add(removed);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(5_000);
    await scheduler.remove(handle);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(kept.starts).toEqual([1_000, 11_000, 21_000]);
    expect(removed.starts).toEqual([1_000]);
  });

  it('stops starting runs at stop, and resolves once the runs in flight have finished and been reported', async () => {
    const { scheduler, finished } = makeScheduler({ random: () => 0.5 });
    const running = new TestJob('running', 10_000, 5_000, 3_000);
    scheduler.add(running);
    const waiting = new TestJob('waiting', 60_000, 5_000, 10);
    scheduler.add(waiting);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(6_000);
    let stopped = false;
    const stop = scheduler.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    await stop;
    expect(finished.map((f) => f.name)).toEqual(['running']);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(running.starts).toEqual([5_000]);
    expect(waiting.starts).toEqual([]);
  });

  it('handles thousands of checks with one armed timer, each run on its own grid', async () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const { scheduler, lags } = makeScheduler({ random });
    const jobs = Array.from({ length: 5_000 }, (_, i) => new TestJob(`j${i}`, 10_000, 1_000, 5));
    for (const job of jobs) scheduler.add(job);
    scheduler.start();
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(29_000);
    for (const job of jobs) {
      expect(job.starts.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < job.starts.length; i++) expect(job.starts[i]! - job.starts[i - 1]!).toBe(10_000);
    }
    expect(Math.max(...lags)).toBeLessThanOrEqual(1);
  });
});
