/**
 * Sending one request to a receiver, shared by the stream outputs (src/stream/outputs/) and the notifiers
 * (src/notify/notifier.ts): undici with the sender's keep-alive Agent, a per-request timeout, and the answer mapped
 * to what the caller does next. 2xx is delivered; 408, 429, 5xx and network failures are transient (retried);
 * any other status is a refusal (retrying would not help).
 */
import type { Agent, request } from 'undici';
import { mergeHeaders } from '../common/headers.ts';
import { undici } from '../common/undici.ts';

export class DeliveryError extends Error {
  constructor(
    message: string,
    /** Transient failures are retried with backoff; the others are given up at once. */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'DeliveryError';
  }
}

export interface HttpTarget {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A URL as errors and logs show it: a token in its path (Telegram's `bot<token>`, a Slack hook's) or its query is
 *  a credential, so only the origin and the first path segment are shown. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    const first = parsed.pathname.split('/')[1] ?? '';
    const more = parsed.pathname.length > first.length + 1 || parsed.search !== '' ? '/...' : '';
    return `${parsed.origin}/${first.startsWith('bot') ? 'bot...' : first}${more}`;
  } catch {
    return '<invalid url>';
  }
}

/** A keep-alive pool per sender (a notifier, a stream output), opened lazily: one that never sends holds no module
 *  and no socket. */
export class HttpSender {
  private agent: Agent | null = null;

  constructor(private readonly connections = 2) {}

  /** Sends a request (the target's headers over `headers`, names in any case); throws a DeliveryError unless 2xx. */
  async send(
    target: HttpTarget,
    method: HttpMethod,
    headers: Record<string, string>,
    body: Buffer | string | null,
    signal: AbortSignal,
  ): Promise<void> {
    this.agent ??= new (undici().Agent)({ connections: this.connections });
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await undici().request(target.url, {
        method,
        dispatcher: this.agent,
        headers: mergeHeaders(headers, target.headers),
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(target.timeoutMs)]),
      });
    } catch (error) {
      throw new DeliveryError(`${method} ${redacted(target.url)} failed: ${(error as Error).message}`, true);
    }
    const status = response.statusCode;
    const text = await response.body.text().catch(() => '');
    if (status >= 200 && status < 300) return;
    const retryable = status >= 500 || status === 408 || status === 429;
    throw new DeliveryError(`${method} ${redacted(target.url)} answered ${status}: ${text.slice(0, 200)}`, retryable);
  }

  async close(): Promise<void> {
    await this.agent?.close();
    this.agent = null;
  }
}
