/**
 * Whether V8 compacts the old generation at a full collection: while the heap that survived the last one is below
 * `compact-heap-below` (docs/configuration.md), a full collection that comes at least 30 s after the one before does.
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
 *   events a CPU second and 4 ms of push p99, for pages the next collection empties again anyway. 30 s between
 *   them bounds the cost at about 0.1 % of a core.
 *
 * V8 reads `--compact-on-every-full-gc` at each collection. A `gc` PerformanceObserver clears it after each full
 * collection and arms one timer (unref'd) for the quiet interval; when that timer fires, no full collection came
 * since, and the flag is set if the heap that survived the last one is below the limit. So the first full
 * collection at least 30 s after the one before is compacted, whatever came before it: a small deployment's first
 * quiet collection after its start, about two minutes earlier than when the flag was set only after a pair of
 * quiet collections. Under a flood the timer is re-armed at every collection and never fires. An idle service
 * wakes for it once per full collection. A value the operator gave on the command line is kept.
 */
import { type NodeGCPerformanceDetail, type PerformanceEntry, PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

const FLAG = 'compact-on-every-full-gc';

/** A full collection closer than this to the one before is not compacted (above). */
const QUIET_INTERVAL_MS = 30_000;

export class HeapCompaction {
  private observer: PerformanceObserver | null = null;
  /** What was last set; null before the first look, so that it is set whatever the process started with. */
  private set: boolean | null = null;
  /** Fires once the quiet interval has passed since the last full collection. */
  private quietTimer: ReturnType<typeof setTimeout> | null = null;
  /** The heap used just after the last full collection (at start: then). */
  private survivedBytes = 0;
  private readonly onQuiet = (): void => {
    this.quietTimer = null;
    this.apply(this.limitBytes > 0 && this.survivedBytes < this.limitBytes);
  };

  /**
   * `limitBytes`: the heap used after a full collection below which the next one compacts; 0 never compacts.
   * `quietIntervalMs`: how long after a full collection the next one compacts.
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
    this.observer = new PerformanceObserver((list) => {
      if (list.getEntries().some(isFullCollection)) this.collected();
    });
    this.observer.observe({ entryTypes: ['gc'] });
    this.collected();
  }

  /** A reloaded config's limit, for the next full collection on. */
  setLimit(limitBytes: number): void {
    this.limitBytes = limitBytes;
    // Within the quiet interval the flag is off until it passes; past it, it follows the new limit at once.
    if (this.observer !== null && this.quietTimer === null) this.onQuiet();
  }

  /** A full collection ran (or the service started): none compacts until the quiet interval has passed. */
  private collected(): void {
    this.survivedBytes = getHeapStatistics().used_heap_size;
    this.apply(false);
    if (this.quietTimer !== null) this.quietTimer.refresh();
    else this.quietTimer = setTimeout(this.onQuiet, this.quietIntervalMs).unref();
  }

  private apply(compact: boolean): void {
    if (compact === this.set) return;
    setFlagsFromString(compact ? `--${FLAG}` : `--no-${FLAG}`);
    this.set = compact;
  }

  /** Leaves V8 its own heuristics again (a process may run a service more than once: the tests do). */
  stop(): void {
    this.observer?.disconnect();
    this.observer = null;
    if (this.quietTimer !== null) clearTimeout(this.quietTimer);
    this.quietTimer = null;
    if (this.set === true) setFlagsFromString(`--no-${FLAG}`);
    this.set = null;
  }
}

/** A `gc` entry of a full (mark-compact) collection. */
export function isFullCollection(entry: PerformanceEntry): boolean {
  return (
    (entry as PerformanceEntry & { detail?: NodeGCPerformanceDetail }).detail?.kind ===
    constants.NODE_PERFORMANCE_GC_MAJOR
  );
}
