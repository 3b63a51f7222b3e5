/**
 * The scheduler's queue of due times: a binary min-heap on `due` in which each entry keeps its own index, so that a
 * job removed while it waits (a check deleted or reassigned) leaves in O(log n) instead of a scan of 12,000.
 */

/** What the heap orders: a due time, and the entry's place in the heap (-1 when out of it), kept by the heap. */
interface DueEntry {
  due: number;
  heapIndex: number;
}

export class DueHeap<E extends DueEntry> {
  private entries: E[] = [];

  get length(): number {
    return this.entries.length;
  }

  /** The entry due first. */
  peek(): E | undefined {
    return this.entries[0];
  }

  /** Empties the heap and hands back what it held, in no order. */
  drain(): E[] {
    const entries = this.entries;
    this.entries = [];
    return entries;
  }

  push(entry: E): void {
    entry.heapIndex = this.entries.length;
    this.entries.push(entry);
    this.siftUp(entry.heapIndex);
  }

  /** Removes the entry due first. */
  pop(): void {
    const top = this.entries[0];
    if (top !== undefined) this.remove(top);
  }

  /** A no-op for an entry out of the heap. */
  remove(entry: E): void {
    const index = entry.heapIndex;
    if (index < 0) return;
    const last = this.entries.pop() as E;
    entry.heapIndex = -1;
    if (last === entry) return;
    this.entries[index] = last;
    last.heapIndex = index;
    this.siftDown(index);
    this.siftUp(last.heapIndex);
  }

  private siftUp(index: number): void {
    const heap = this.entries;
    const entry = heap[index] as E;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex] as E;
      if (parent.due <= entry.due) break;
      heap[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    heap[index] = entry;
    entry.heapIndex = index;
  }

  private siftDown(index: number): void {
    const heap = this.entries;
    const length = heap.length;
    const entry = heap[index] as E;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      let child = left;
      if (right < length && (heap[right] as E).due < (heap[left] as E).due) child = right;
      const smaller = heap[child] as E;
      if (smaller.due >= entry.due) break;
      heap[index] = smaller;
      smaller.heapIndex = index;
      index = child;
    }
    heap[index] = entry;
    entry.heapIndex = index;
  }
}
