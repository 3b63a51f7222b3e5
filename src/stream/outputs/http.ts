/**
 * The `http` output (a JSON array of events POSTed per batch) and the POST both HTTP outputs share: undici
 * with one keep-alive Agent per output, a per-request timeout, and the status mapped to retry or drop.
 */
import type { Agent, request } from 'undici';
import { mergeHeaders } from '../../common/headers.ts';
import { undici } from '../../common/undici.ts';
import type { Event } from '../event.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import { DeliveryError, type OutputObserver } from './types.ts';

export interface HttpTarget {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

/** POSTs a body; 2xx is success, 408/429/5xx and network errors are transient, any other status drops. */
export function postBatch(
  agent: Agent,
  target: HttpTarget,
  headers: Record<string, string>,
  body: Buffer | string,
  signal: AbortSignal,
): Promise<void> {
  return sendRequest(agent, target, 'POST', headers, body, signal);
}

/** Sends a request (the target's headers over `headers`, names in any case), with postBatch's rules for the answer. */
export async function sendRequest(
  agent: Agent,
  target: HttpTarget,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  headers: Record<string, string>,
  body: Buffer | string | null,
  signal: AbortSignal,
): Promise<void> {
  let response: Awaited<ReturnType<typeof request>>;
  try {
    response = await undici().request(target.url, {
      method,
      dispatcher: agent,
      headers: mergeHeaders(headers, target.headers),
      body,
      signal: AbortSignal.any([signal, AbortSignal.timeout(target.timeoutMs)]),
    });
  } catch (error) {
    throw new DeliveryError(`${method} ${target.url} failed: ${(error as Error).message}`, true);
  }
  const status = response.statusCode;
  const text = await response.body.text().catch(() => '');
  if (status >= 200 && status < 300) return;
  const retryable = status >= 500 || status === 408 || status === 429;
  throw new DeliveryError(`${method} ${target.url} answered ${status}: ${text.slice(0, 200)}`, retryable);
}

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
  return new BatchingOutput(name, batching, deliver, observer, null, () => agent.close());
}
