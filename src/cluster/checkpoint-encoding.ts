/**
 * A partition's checkpoint as the bytes of its JSON, encoded in slices of at most `budgetMs` on the event loop, as a
 * single node's snapshot rounds write their index (src/stream/snapshotter.ts): `JSON.stringify` of a checkpoint
 * whose index holds 100,000 events held the loop for hundreds of milliseconds in one piece, and checks, requests
 * and the partition's own consumer with it.
 *
 * The state is the one captured when the checkpoint was taken: the index's entries are the events it held then
 * (an indexed event is never changed in place: a new one replaces it), so encoding them later, in turns, still
 * writes the state the checkpoint's sequence number covers.
 */
import type { PartitionCheckpoint } from './stream-checkpoints.ts';

/** Entries encoded between two looks at the clock. */
const BATCH = 256;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export async function encodeCheckpoint(checkpoint: PartitionCheckpoint, budgetMs: number): Promise<Buffer> {
  const { index, ...rest } = checkpoint;
  // The fields but the index, then the index's entries one by one: the same JSON as a whole stringify.
  const head = JSON.stringify(rest);
  const pieces: Buffer[] = [
    Buffer.from(`${head.slice(0, -1)},"index":{"currentTime":${JSON.stringify(index.currentTime)},"entries":[`),
  ];
  const { entries } = index;
  let sliceStart = performance.now();
  let batch: string[] = [];
  for (let i = 0; i < entries.length; i++) {
    batch.push(JSON.stringify(entries[i]));
    if (batch.length === BATCH || i === entries.length - 1) {
      pieces.push(Buffer.from((i + 1 > batch.length ? ',' : '') + batch.join(',')));
      batch = [];
      if (performance.now() - sliceStart >= budgetMs && i < entries.length - 1) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
  }
  pieces.push(Buffer.from(']}}'));
  return Buffer.concat(pieces);
}
