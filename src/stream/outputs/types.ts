/**
 * The contract of stream outputs (`streams.outputs` in the config, fed by `:output!`). An output accepts an
 * emission without ever blocking the stream: it queues, and delivers in batches in the background.
 */
import type { Emission, Event } from '../event.ts';

/** Why events were dropped, the `reason` label of `stream_output_dropped_total`. */
export type DropReason =
  /** The queue was full: the destination is slower than the stream. */
  | 'queue_full'
  /** The destination refused the batch with a 4xx: retrying would not help. */
  | 'rejected'
  /** Every retry of a transient failure (5xx, 429, network, file system) failed. */
  | 'retries_exhausted'
  /** Not representable at the destination (prometheus: no numeric metric, or no service/name). */
  | 'unusable'
  /** Still queued when the close timeout ran out. */
  | 'shutdown'
  /** Sent to an output a reload removed while a stream still names it. */
  | 'removed'
  /** A notification output (pagerduty, webhook, slack, email) does not notify of an event in a maintenance window. */
  | 'maintenance';

/** Metrics hooks, wired by the service to prom-client. Called per batch (per event only on queue overflow). */
export interface OutputObserver {
  sent(output: string, count: number): void;
  dropped(output: string, reason: DropReason, count: number): void;
  /** One failed delivery attempt (it may be retried). */
  failed(output: string, error: Error): void;
}

export interface Output {
  readonly name: string;
  send(emission: Emission): void;
  /** Events waiting to be delivered, for `stream_output_queue_size{output}` (read at scrape time). */
  queueSize(): number;
  /** Stops the flush timer and delivers what is queued; after `timeoutMs` the rest is dropped as `shutdown`. */
  close(timeoutMs: number): Promise<void>;
}

/** Delivers one batch; throws a DeliveryError (src/notify/delivery.ts; any other error counts as transient). */
export type Deliver = (batch: Event[], signal: AbortSignal) => Promise<void>;

export const noopObserver: OutputObserver = {
  sent: () => undefined,
  dropped: () => undefined,
  failed: () => undefined,
};
