/**
 * How fast a connection writes, from its `total_changes()` (rows changed) sampled at each look of the checkpointer
 * (src/db/checkpointer.ts): the checkpoints of fast writes go to the worker thread, off the event loop
 * (bench/JOURNAL.md, "A small deployment's checkpoints").
 *
 * The rate is taken over the last WINDOW_MS as a whole, so that one burst does not make a flood: a small deployment's
 * second of result writes can add 1.8 MB to the WAL, and it is the rate held for seconds that tells 12,000 checks
 * (2,200 to 4,300 rows a second over 5 s, measured) from 1,200 (300 to 900, also once their history is full). It is
 * counted in rows, not WAL bytes: the WAL file's size drops when it starts again from its beginning, and a
 * checkpoint that could not copy everything leaves frames that were not written since.
 */

/** Rows changed a second, over WINDOW_MS, from which writes are a flood. */
const FLOOD_CHANGES_PER_SECOND = 1_500;
const WINDOW_MS = 5_000;

export class WriteRate {
  /** The samples of the last WINDOW_MS, the first at least that old. */
  private readonly samples: { atMs: number; changes: number }[] = [];

  constructor(private readonly floodPerSecond = FLOOD_CHANGES_PER_SECOND) {}

  /** Takes `changes` (the connection's `total_changes()` now); true when the writes of the window are a flood. */
  sample(changes: number, nowMs = performance.now()): boolean {
    const samples = this.samples;
    samples.push({ atMs: nowMs, changes });
    while (samples.length > 1 && nowMs - (samples[1] as { atMs: number }).atMs >= WINDOW_MS) samples.shift();
    const from = samples[0] as { atMs: number; changes: number };
    // A window shorter than WINDOW_MS (just started) counts as a whole one: a start's burst is no flood either.
    return (changes - from.changes) * 1000 >= this.floodPerSecond * Math.max(nowMs - from.atMs, WINDOW_MS);
  }
}
