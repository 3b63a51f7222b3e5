/**
 * The `http` output: a JSON array of events POSTed per batch, through one keep-alive HttpSender per output, the
 * sender every HTTP notifier uses (src/notify/delivery.ts: a per-request timeout, the status mapped to retry or drop).
 */
import { HttpSender, type HttpTarget } from '../../notify/delivery.ts';
import type { Event } from '../event.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import type { OutputObserver } from './types.ts';

export function createHttpOutput(
  name: string,
  target: HttpTarget,
  batching: BatchSettings,
  observer: OutputObserver,
): BatchingOutput {
  const http = new HttpSender(4);
  const headers = { 'content-type': 'application/json', 'user-agent': 'vigie' };
  const deliver = (batch: Event[], signal: AbortSignal) =>
    http.send(target, 'POST', headers, JSON.stringify(batch), signal);
  return new BatchingOutput({ name, settings: batching, deliver, observer, onClose: () => http.close() });
}
