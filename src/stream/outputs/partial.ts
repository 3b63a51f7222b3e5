/**
 * Partial delivery, for outputs whose destination answers per event (PagerDuty: one request per event;
 * Elasticsearch `_bulk`: one status per item). The batcher hands the same array to every attempt of a batch,
 * so a deliverer counts what it settled itself (sent, or dropped as `rejected`), keeps in the array only what
 * must be retried, and throws: the retry sends only that, and a final `retries_exhausted` counts only that.
 */
import type { Event } from '../event.ts';

/** Keeps, in place and in order, the events at `indexes` (ascending). */
export function retainInPlace(batch: Event[], indexes: readonly number[]): void {
  let write = 0;
  for (const index of indexes) batch[write++] = batch[index] as Event;
  batch.length = write;
}
