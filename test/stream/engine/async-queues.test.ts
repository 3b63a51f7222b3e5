/**
 * `async-queue!` with the real engine and queues: the children run after the push returns, in order, in
 * batches between event-loop turns; a full queue drops and counts; an unknown queue does not compile; in test
 * mode it runs synchronously, as upstream.
 */
import { describe, expect, it } from 'vitest';
import { AsyncQueues } from '../../../src/stream/engine/async-queues.ts';
import { StreamConfigError } from '../../../src/stream/engine/compiler.ts';
import { StreamEngine } from '../../../src/stream/engine/engine.ts';
import type { Emission } from '../../../src/stream/event.ts';

const QUEUED = '{:actions {:action :async-queue! :params [:slow] :children [{:action :output! :params [:out]}]}}';
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function setup(queueSize: number) {
  const delivered: Emission[] = [];
  const drops: { queue: string; reason: string; count: number }[] = [];
  const errors: string[] = [];
  const queues = new AsyncQueues(
    { slow: { queueSize } },
    { dropped: (queue, reason, count) => drops.push({ queue, reason, count }) },
  );
  const engine = new StreamEngine({
    asyncQueues: queues,
    outputs: { has: (name) => name === 'out', send: (_name, emission) => delivered.push(emission) },
    observer: { error: (stream) => errors.push(stream) },
  });
  return { engine, queues, delivered, drops, errors };
}

describe('async-queue!', () => {
  it('runs its children after the push returns, in order', async () => {
    const { engine, delivered } = setup(100);
    engine.add('s', QUEUED);
    engine.push('s', [{ metric: 1 }, { metric: 2 }]);
    expect(delivered).toEqual([]);
    await nextTurn();
    expect(delivered).toEqual([{ metric: 1 }, { metric: 2 }]);
  });

  it('drains a long backlog in batches of 1000, giving the loop a turn between them', async () => {
    const { engine, delivered } = setup(10_000);
    engine.add('s', QUEUED);
    engine.push(
      's',
      Array.from({ length: 2_500 }, (_, i) => ({ metric: i })),
    );
    await nextTurn();
    expect(delivered).toHaveLength(1_000);
    await nextTurn();
    expect(delivered).toHaveLength(2_000);
    await nextTurn();
    expect(delivered.map((event) => (event as { metric: number }).metric)).toEqual(
      Array.from({ length: 2_500 }, (_, i) => i),
    );
  });

  it('drops what does not fit in the queue and counts it with a reason', async () => {
    const { engine, delivered, drops, queues } = setup(3);
    engine.add('s', QUEUED);
    engine.push('s', [{ metric: 1 }, { metric: 2 }, { metric: 3 }, { metric: 4 }, { metric: 5 }]);
    expect(queues.sizes()).toEqual({ slow: 3 });
    expect(drops).toEqual([
      { queue: 'slow', reason: 'queue_full', count: 1 },
      { queue: 'slow', reason: 'queue_full', count: 1 },
    ]);
    await nextTurn();
    expect(delivered).toEqual([{ metric: 1 }, { metric: 2 }, { metric: 3 }]);
    expect(queues.sizes()).toEqual({ slow: 0 });
  });

  it('reports errors raised below the queue as errors of the stream', async () => {
    const { engine, errors, delivered } = setup(10);
    engine.add(
      's',
      '{:actions {:action :async-queue! :params [:slow] :children [{:action :reinject! :params [:missing]} {:action :output! :params [:out]}]}}',
    );
    const result = engine.push('s', [{ metric: 1 }]);
    expect(result.errorCount).toBe(0);
    await nextTurn();
    expect(errors).toEqual(['s']);
    expect(delivered).toEqual([{ metric: 1 }]);
  });

  it('runs what is queued at once on drain (stop)', () => {
    const { engine, delivered, queues } = setup(10);
    engine.add('s', QUEUED);
    engine.push('s', [{ metric: 1 }]);
    queues.drain();
    expect(delivered).toEqual([{ metric: 1 }]);
  });

  it('refuses an unknown queue name when the stream is compiled', () => {
    const { engine } = setup(10);
    expect(() => engine.add('s', '{:actions {:action :async-queue! :params [:nope] :children []}}')).toThrow(
      StreamConfigError,
    );
    expect(() => engine.add('s', '{:actions {:action :async-queue! :params [:nope] :children []}}')).toThrow(
      /Async queue :nope not found/,
    );
  });

  it('is synchronous in test mode, for any queue name', () => {
    const engine = new StreamEngine({ testMode: true });
    engine.add('s', '{:actions {:action :async-queue! :params [:anything] :children [{:action :tap :params [:t]}]}}');
    engine.push('s', [{ metric: 1 }]);
    expect(engine.taps().get('t')).toEqual([{ metric: 1 }]);
  });
});
