/**
 * Whether V8 compacts the old generation at every full collection: while the heap that survived the last one is
 * below `compact-heap-below` (docs/configuration.md) and full collections come at least 30 s apart, it does.
 *
 * A full collection frees what died, but gives a page back to the system only if it moved the page's survivors
 * elsewhere, and V8's own heuristics move only pages that are mostly empty. A small deployment's results die
 * scattered over many pages, so its old space stayed committed at the top of each cycle (about 29 MB for 20 MB
 * live) until V8's memory reducer compacted, every other collection at best. Compacting every time costs a longer
 * pause, about 1 ms per MB that survived (5 ms became 22 to 37 ms with 20 MB live), and holds a small deployment's
 * RSS 5 to 6 MB lower (docs/performance.md, "The old space compacted while small"). So it is done only where that
 * pause is rare and short:
 * - above the limit the pause would grow with the heap;
 * - under a flood of events full collections come seconds apart, and compacting each one cost 4 to 8 % of the
 *   events a CPU second and 4 ms of push p99, for pages the next collection empties again anyway. 30 s apart
 *   bounds the cost at about 0.1 % of a core.
 *
 * V8 reads `--compact-on-every-full-gc` at each collection; this sets it after each full collection, looked at in a
 * `gc` PerformanceObserver (no timer: an idle service never wakes for it), from the heap that survived it and the
 * time since the one before. A value the operator gave on the command line is kept.
 */
import { type NodeGCPerformanceDetail, type PerformanceEntry, PerformanceObserver, constants, performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

const FLAG = 'compact-on-every-full-gc';

/** Full collections closer than this are not compacted (above). */
const QUIET_INTERVAL_MS = 30_000;

export class HeapCompaction {
  private observer: PerformanceObserver | null = null;
  /** What was last set; null before the first look, so that it is set whatever the process started with. */
  private set: boolean | null = null;

  /** When the last full collection started, on the performance timeline; its start when none has run yet. */
  private lastFullMs = 0;
  /** Whether the last two full collections were at least `quietIntervalMs` apart. */
  private quiet = true;

  /**
   * `limitBytes`: the heap used after a full collection below which the next one compacts; 0 never compacts.
   * `quietIntervalMs`: the least time between the last two full collections for the next one to compact.
   */
  constructor(
    private limitBytes: number,
    private readonly quietIntervalMs = QUIET_INTERVAL_MS,
  ) {}

  /** Whether the next full collection compacts every page, as last set here. */
  get compacting(): boolean {
    return this.set === true;
  }

  start(): void {
    if (process.execArgv.some((flag) => flag === `--${FLAG}` || flag === `--no-${FLAG}`)) return;
    this.lastFullMs = performance.now();
    this.adjust();
    this.observer = new PerformanceObserver((list) => {
      let full = false;
      for (const entry of list.getEntries()) {
        if (!isFullCollection(entry)) continue;
        this.quiet = entry.startTime - this.lastFullMs >= this.quietIntervalMs;
        this.lastFullMs = entry.startTime;
        full = true;
      }
      if (full) this.adjust();
    });
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** A reloaded config's limit, for the next full collection on. */
  setLimit(limitBytes: number): void {
    this.limitBytes = limitBytes;
    if (this.observer !== null) this.adjust();
  }

  private adjust(): void {
    const compact = this.limitBytes > 0 && this.quiet && getHeapStatistics().used_heap_size < this.limitBytes;
    if (compact === this.set) return;
    setFlagsFromString(compact ? `--${FLAG}` : `--no-${FLAG}`);
    this.set = compact;
  }

  /** Leaves V8 its own heuristics again (a process may run a service more than once: the tests do). */
  stop(): void {
    this.observer?.disconnect();
    this.observer = null;
    if (this.set === true) setFlagsFromString(`--no-${FLAG}`);
    this.set = null;
  }
}

/** A `gc` entry of a full (mark-compact) collection. */
export function isFullCollection(entry: PerformanceEntry): boolean {
  return (entry as PerformanceEntry & { detail?: NodeGCPerformanceDetail }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
}
