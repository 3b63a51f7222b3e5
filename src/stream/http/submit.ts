/**
 * Submitting an input's batch, one way for every input (the HTTP routes, Riemann TCP): the gateway either takes
 * the events and they go through the actions (null), or refuses them for now, and the input has the sender retry
 * (HTTP: 503 with Retry-After; Riemann TCP: it stops reading while the backlog is full). A batch whose actions
 * failed is a `StreamError` (action-failed) naming the stream and the first failure.
 */
import type { FastifyReply } from 'fastify';
import { UnavailableError } from '../../common/unavailable.ts';
import { StreamError } from '../errors.ts';
import type { Event } from '../event.ts';
import { describeFailures } from '../partition/ingest-gateway.ts';
import type { LogRecord } from '../durability/event-log.ts';
import { JournalWriteError } from '../durability/journal.ts';
import type { EventIngest, IngestOutcome } from '../partition/placement.ts';

/** Why a batch was not taken: the backlog is full, or the journal could not make it durable (not acknowledged). */
export interface IngestRefusal {
  readonly reason: 'full' | 'not-durable';
  readonly message: string;
}

/** Hands the events to the gateway and waits for them to go through; a refusal the sender should retry, or null. */
export async function submitOrRefuse(
  ingest: Pick<EventIngest, 'submit' | 'maxPending'>,
  target: string,
  events: Event[],
  input: string,
  record?: LogRecord,
): Promise<IngestRefusal | null> {
  const pending = ingest.submit(target, events, input, record);
  if (pending === 'full')
    return {
      reason: 'full',
      message: `Too many events waiting to be processed (limit ${ingest.maxPending}), retry later`,
    };
  let outcome: IngestOutcome;
  try {
    outcome = await pending;
  } catch (error) {
    // Not durable (the journal, or the cluster's event log, did not take it), so not acknowledged: the sender
    // retries, as after a full backlog.
    if (!(error instanceof JournalWriteError) && !(error instanceof UnavailableError)) throw error;
    return { reason: 'not-durable', message: error.message };
  }
  if (outcome.errorCount > 0) throw new StreamError('action-failed', describeFailures(target, outcome));
  return null;
}

/** The HTTP answer to a refusal: 503 with Retry-After, which senders (Prometheus, OTLP, Fluent Bit) retry. */
export function replyRefused(reply: FastifyReply, refusal: IngestRefusal): FastifyReply {
  return reply.code(503).header('Retry-After', '1').send({ error: refusal.message });
}
