/**
 * The PagerDuty Events API v2 sender (docs/alerting.md), shared by the stream output of that type and the notifiers:
 * `POST <url>` (default https://events.pagerduty.com/v2/enqueue) of one event, `{"routing_key", "event_action":
 * "trigger"|"acknowledge"|"resolve", "dedup_key", "payload": {...}}`. PagerDuty answers 202; 400 (an invalid event) is
 * a refusal; 429 and 5xx are retried. Each user builds its events: the stream output from an event's fields
 * (src/stream/outputs/pagerduty.ts), a notifier from a notification (src/notify/presets.ts).
 */
import { Type } from '@sinclair/typebox';
import { Duration } from '../common/duration.ts';
import { HttpSender, type HttpTarget } from './delivery.ts';

export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue';
const HEADERS = { 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'vigie' };

/** The keys every PagerDuty sender takes (the stream output adds how it reads events). */
export const PAGERDUTY_FIELDS = {
  type: Type.Literal('pagerduty'),
  'service-key': Type.String({ minLength: 1 }),
  url: Type.Optional(Type.String({ pattern: '^https?://' })),
  timeout: Type.Optional(Duration),
};

export interface PagerDutyTarget {
  readonly serviceKey: string;
  readonly url: string;
  readonly timeoutMs: number;
}

/** Posts one Events API v2 event; `routing_key` is the sender's. */
export class PagerDutySender {
  private readonly http = new HttpSender();
  private readonly target: HttpTarget;

  constructor(private readonly settings: PagerDutyTarget) {
    this.target = { url: settings.url, headers: {}, timeoutMs: settings.timeoutMs };
  }

  send(event: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    const body = JSON.stringify({ routing_key: this.settings.serviceKey, ...event });
    return this.http.send(this.target, 'POST', HEADERS, body, signal);
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
