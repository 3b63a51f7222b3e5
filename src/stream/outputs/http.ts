/**
 * The `http` output: a JSON array of events POSTed per batch, with one keep-alive Agent per output and the POST
 * every HTTP sender shares (src/notify/delivery.ts: a per-request timeout, the status mapped to retry or drop).
 */
import { undici } from '../../common/undici.ts';
import { type HttpTarget, postBatch } from '../../notify/delivery.ts';
import type { Event } from '../event.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import type { OutputObserver } from './types.ts';

export function createHttpOutput(
  name: string,
  target: HttpTarget,
  batching: BatchSettings,
  observer: OutputObserver,
): BatchingOutput {
  const agent = new (undici().Agent)({ connections: 4 });
  const headers = { 'content-type': 'application/json', 'user-agent': 'vigie' };
  const deliver = (batch: Event[], signal: AbortSignal) =>
    postBatch(agent, target, headers, JSON.stringify(batch), signal);
  return new BatchingOutput({ name, settings: batching, deliver, observer, onClose: () => agent.close() });
}
