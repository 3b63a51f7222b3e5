/**
 * How far V8 may grow a cluster node's young generation, on a node started with 8 MB a semi-space, the single
 * node's size, and room for 32 (src/process/node-tuning.ts): what a node under event load needs, its scavenges
 * being few rather than cheap (bench/JOURNAL.md, "Cluster: a node's young generation"). A node that runs no stream
 * partition does not need the room, and would pay for it in memory (55 to 85 MB more RSS with 12,000 checks). So V8
 * may grow it past 8 MB only while partitions run here.
 *
 * V8 fixes the smallest and largest sizes when the process starts, but reads `--semi-space-growth-factor` each time
 * it grows the young generation: 1 holds it where it is. The node's tuning sets 1 as the cluster part is built;
 * this sets 2 while partitions run here and 1 otherwise, looked at after each collection (a `gc` PerformanceObserver).
 * Without growth, V8 still shrinks it back to 8 MB once allocation slows.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';

const GROWTH = 2;
const HELD = 1;

export class YoungGeneration {
  private observer: PerformanceObserver | null = null;
  /** The factor last set; 0 before the first look, so that it is set whatever the process started with. */
  private factor = 0;

  /** `roomNeeded`: whether this node runs stream partitions now. */
  constructor(private readonly roomNeeded: () => boolean) {}

  start(): void {
    this.observer = new PerformanceObserver(() => this.adjust());
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** Sets the growth factor V8 uses from now on, when it changes. */
  private adjust(): void {
    const factor = this.roomNeeded() ? GROWTH : HELD;
    if (factor === this.factor) return;
    setFlagsFromString(`--semi-space-growth-factor=${factor}`);
    this.factor = factor;
  }

  stop(): void {
    this.observer?.disconnect();
    this.observer = null;
  }
}
