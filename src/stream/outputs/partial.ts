/**
 * Partial delivery, for outputs whose destination answers per event (PagerDuty: one request per event;
 * Elasticsearch `_bulk`: one status per item). The batcher hands the same array to every attempt of a batch,
 * so a deliverer counts what it settled itself (sent, or dropped as `rejected`), keeps in the array only what
 * must be retried, and throws: the retry sends only that, and a final `retries_exhausted` counts only that.
 */
import type { Event } from '../event.ts';
import { DeliveryError } from '../../notify/delivery.ts';
import type { Deliver, OutputObserver } from './types.ts';

/** Keeps, in place and in order, the events at `indexes` (ascending). */
export function retainInPlace(batch: Event[], indexes: readonly number[]): void {
  let write = 0;
  for (const index of indexes) batch[write++] = batch[index] as Event;
  batch.length = write;
}

/**
 * A deliverer for destinations that take one event per request (notifications): each event of the batch is sent
 * in order; one the destination refuses (a 4xx) is dropped alone, counted `rejected`; a transient failure stops
 * the batch there, and the retry starts from that event.
 */
export function deliverEach(
  name: string,
  observer: OutputObserver,
  sendOne: (event: Event, signal: AbortSignal) => Promise<void>,
): Deliver {
  return async (batch, signal) => {
    const sent: number[] = [];
    for (let i = 0; i < batch.length; i++) {
      try {
        await sendOne(batch[i] as Event, signal);
        sent.push(i);
      } catch (error) {
        if (error instanceof DeliveryError && !error.retryable) {
          observer.failed(name, error);
          observer.dropped(name, 'rejected', 1);
          continue;
        }
        // Retry from this event: the ones before it are settled (sent, or dropped and counted).
        observer.sent(name, sent.length);
        batch.splice(0, i);
        throw error;
      }
    }
    // The batcher counts what is left in the batch as sent.
    retainInPlace(batch, sent);
  };
}
