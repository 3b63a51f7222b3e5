import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Event } from '../../../src/stream/event.ts';
import { BatchingOutput } from '../../../src/stream/outputs/batcher.ts';
import { RecordingObserver } from '../../helpers/outputs.ts';

const SETTINGS = { queueSize: 100, batchSize: 10, flushIntervalMs: 1_000, retries: 0, retryBackoffMs: 10 };

/** An output whose batches are recorded, delivered at once. */
function recordingOutput(): { output: BatchingOutput; batches: Event[][] } {
  const batches: Event[][] = [];
  const output = new BatchingOutput({
    name: 'out',
    settings: SETTINGS,
    deliver: async (batch) => void batches.push(batch),
    observer: new RecordingObserver(),
  });
  return { output, batches };
}

describe('an output with nothing queued (docs/performance.md, "An idle service")', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('holds no timer, so an idle service with outputs is not woken by them', async () => {
    const { output } = recordingOutput();
    expect(vi.getTimerCount()).toBe(0);
    await output.close(1_000);
  });

  it('sends a partial batch flush-interval after its first event, then holds no timer again', async () => {
    const { output, batches } = recordingOutput();
    output.send({ metric: 1 });
    await vi.advanceTimersByTimeAsync(400);
    output.send({ metric: 2 });
    await vi.advanceTimersByTimeAsync(599);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([[{ metric: 1 }, { metric: 2 }]]);
    expect(vi.getTimerCount()).toBe(0);
    // The next event waits its own interval.
    output.send({ metric: 3 });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(batches).toEqual([[{ metric: 1 }, { metric: 2 }], [{ metric: 3 }]]);
    expect(vi.getTimerCount()).toBe(0);
    await output.close(1_000);
  });

  it('sends a full batch at once, and what is left within flush-interval', async () => {
    const { output, batches } = recordingOutput();
    output.send(Array.from({ length: 13 }, (_, i) => ({ metric: i })));
    await vi.advanceTimersByTimeAsync(0);
    expect(batches.map((batch) => batch.length)).toEqual([10]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(batches.map((batch) => batch.length)).toEqual([10, 3]);
    await output.close(1_000);
    expect(vi.getTimerCount()).toBe(0);
  });
});
