/**
 * Whether V8 compacts the old generation at every full collection: while the heap that survived the last one is
 * below `compact-heap-below` (docs/configuration.md), it does.
 *
 * A full collection frees what died, but gives a page back to the system only if it moved the page's survivors
 * elsewhere, and V8's own heuristics move only pages that are mostly empty. A small deployment's results die
 * scattered over many pages, so its old space stayed committed at the top of each cycle (about 29 MB for 20 MB
 * live) until V8's memory reducer compacted, every other collection at best. Compacting every time costs a longer
 * pause, about 1 ms per MB that survived (5 ms became 22 to 37 ms with 20 MB live), once every few minutes in such a
 * deployment, and holds its RSS 5 to 6 MB lower (docs/performance.md, "The old space compacted while small"). Above
 * the limit the pause would grow with the heap, so V8's heuristics decide again.
 *
 * V8 reads `--compact-on-every-full-gc` at each collection; this sets it after each full collection, looked at in a
 * `gc` PerformanceObserver (no timer: an idle service never wakes for it). A value the operator gave on the command
 * line is kept.
 */
import { type NodeGCPerformanceDetail, type PerformanceEntry, PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

const FLAG = 'compact-on-every-full-gc';

export class HeapCompaction {
  private observer: PerformanceObserver | null = null;
  /** What was last set; null before the first look, so that it is set whatever the process started with. */
  private set: boolean | null = null;

  /** `limitBytes`: the heap used after a full collection below which the next one compacts; 0 never compacts. */
  constructor(private limitBytes: number) {}

  /** Whether the next full collection compacts every page, as last set here. */
  get compacting(): boolean {
    return this.set === true;
  }

  start(): void {
    if (process.execArgv.some((flag) => flag === `--${FLAG}` || flag === `--no-${FLAG}`)) return;
    this.adjust();
    this.observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if (isFullCollection(entry)) {
          this.adjust();
          return;
        }
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** A reloaded config's limit, for the next full collection on. */
  setLimit(limitBytes: number): void {
    this.limitBytes = limitBytes;
    if (this.observer !== null) this.adjust();
  }

  private adjust(): void {
    const compact = this.limitBytes > 0 && getHeapStatistics().used_heap_size < this.limitBytes;
    if (compact === this.set) return;
    setFlagsFromString(compact ? `--${FLAG}` : `--no-${FLAG}`);
    this.set = compact;
  }

  stop(): void {
    this.observer?.disconnect();
    this.observer = null;
  }
}

/** A `gc` entry of a full (mark-compact) collection. */
export function isFullCollection(entry: PerformanceEntry): boolean {
  return (entry as PerformanceEntry & { detail?: NodeGCPerformanceDetail }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
}
