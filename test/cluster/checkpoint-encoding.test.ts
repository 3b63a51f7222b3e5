/**
 * A partition's checkpoint is encoded in time-boxed slices (src/cluster/checkpoint-encoding.ts), as a single node's
 * snapshot rounds are: a big index must not hold the event loop for the whole of its JSON, so the loop runs between
 * slices; the bytes are those of the whole checkpoint, whatever the slicing.
 */
import { describe, expect, it } from 'vitest';
import { encodeCheckpoint } from '../../src/cluster/checkpoint-encoding.ts';
import { PARTITION_CHECKPOINT_VERSION, type PartitionCheckpoint } from '../../src/cluster/stream-checkpoints.ts';

function checkpoint(entries: number): PartitionCheckpoint {
  return {
    version: PARTITION_CHECKPOINT_VERSION,
    stream: 'web "edge"',
    partition: 3,
    seq: 42,
    node: 'node-a',
    units: [['0', { hash: 'h', state: { count: 7, nested: ['\u2028', 'é'] } }]],
    index: {
      currentTime: 1700000000,
      entries: Array.from({ length: entries }, (_, i) => ({
        key: `k${i}`,
        event: { host: `host-${i}`, metric: i, tags: ['a', '"b"'] },
      })),
    },
  };
}

describe('checkpoint encoding', () => {
  it('encodes exactly what JSON.stringify does, empty index and a large one alike', async () => {
    for (const size of [0, 1, 3, 5_000]) {
      const whole = checkpoint(size);
      const bytes = await encodeCheckpoint(whole, 1);
      expect(JSON.parse(bytes.toString('utf8')), `${size} entries`).toEqual(whole);
    }
  });

  it('lets the event loop run between slices of a large index', async () => {
    let turns = 0;
    let running = true;
    const spin = () => {
      turns++;
      if (running) setImmediate(spin);
    };
    setImmediate(spin);
    // A budget of 0 ms: one batch of entries per slice.
    const bytes = await encodeCheckpoint(checkpoint(20_000), 0);
    running = false;
    expect(bytes.length).toBeGreaterThan(1_000_000);
    expect(turns).toBeGreaterThan(5);
  });
});
