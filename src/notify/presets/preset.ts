/**
 * A preset (docs/alerting.md, "Presets"): a service's own request built from a notification, sent as any webhook
 * (src/notify/delivery.ts). Its keys are validated by its schema; the entry, once validated, is its settings.
 */
import type { TProperties } from '@sinclair/typebox';
import type { HttpMethod } from '../delivery.ts';
import type { Notification } from '../notification.ts';

export interface PresetRequest {
  readonly url: string;
  readonly method: HttpMethod;
  readonly headers: Record<string, string>;
  readonly body: string | null;
}

export interface Preset {
  /** The preset's own keys (every notifier also takes `type`, `timeout`, `retries`, `retry-backoff`, `max-pending`). */
  readonly fields: TProperties;
  /** The request of a notification; null: nothing to send for its kind (counted `skipped`). */
  request(entry: Record<string, unknown>, notification: Notification): PresetRequest | null;
}

const JSON_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/json',
  'user-agent': 'vigie',
};

/** A POST of a JSON body with the JSON headers and `headers` over them. */
export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): PresetRequest {
  return { url, method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/** `base` without its trailing slashes, followed by `path`. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
