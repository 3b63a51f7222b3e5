import { describe, expect, it } from 'vitest';
import { IngestBacklog } from '../../../src/stream/partition/backlog.ts';
import type { Event } from '../../../src/stream/event.ts';

const events = (count: number, tag: string): Event[] =>
  Array.from({ length: count }, (_, i) => ({ host: `${tag}-${i}` }));

describe('IngestBacklog', () => {
  it('pushes a small batch at once when nothing waits', async () => {
    const pushed: string[] = [];
    const backlog = new IngestBacklog(
      (target, batch) => (pushed.push(`${target}:${batch.length}`), batch.length),
      100,
      10,
    );
    const pending = backlog.submit('s', events(5, 'a'), 0);
    expect(pushed).toEqual(['s:5']);
    expect(await pending).toEqual([5]);
    expect(backlog.pending).toBe(0);
  });

  it('cuts a large batch into slices across macrotasks, keeps order, and refuses what does not fit', async () => {
    const seen: string[] = [];
    const backlog = new IngestBacklog(
      (_target, batch) => {
        for (const event of batch) seen.push(event.host as string);
        return batch.length;
      },
      30,
      10,
    );
    const big = backlog.submit('s', events(45, 'big'), 0);
    expect(seen).toHaveLength(10);
    expect(backlog.pending).toBe(35);
    // Over the limit while the big batch waits: refused.
    expect(backlog.submit('s', events(1, 'late'), 0)).toBeNull();
    expect(await big).toEqual([10, 10, 10, 10, 5]);
    const after = backlog.submit('s', events(3, 'next'), 0);
    expect(await after).toEqual([3]);
    expect(seen).toEqual([...events(45, 'big'), ...events(3, 'next')].map((event) => event.host));
  });

  it('queues a batch that fits behind one that waits, in order', async () => {
    const seen: string[] = [];
    const backlog = new IngestBacklog(
      (_target, batch) => (seen.push(...batch.map((event) => event.host as string)), batch.length),
      100,
      4,
    );
    const first = backlog.submit('s', events(6, 'a'), 0);
    const second = backlog.submit('s', events(2, 'b'), 0);
    expect(second).not.toBeNull();
    await Promise.all([first, second]);
    expect(seen).toEqual(['a-0', 'a-1', 'a-2', 'a-3', 'a-4', 'a-5', 'b-0', 'b-1']);
  });
});
