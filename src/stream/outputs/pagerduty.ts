/**
 * The `pagerduty` output (README, "Configuration file"): each event becomes one PagerDuty Events API v2 request
 * (`POST <url>`, default https://events.pagerduty.com/v2/enqueue):
 *
 *   {"routing_key": <service-key>, "event_action": "trigger"|"acknowledge"|"resolve",
 *    "dedup_key": <dedup-keys values joined by "-">,
 *    "payload": {"summary": <summary-keys values joined by " - ">, "source": <the source-key field>,
 *                "severity": "info" for ok, else the state, "timestamp": <ISO 8601 of the event time>,
 *                "custom_details": <the event>}}
 *
 * The action is the event's `pagerduty/action` (a string or a keyword), else `resolve` for state ok and
 * `trigger` otherwise. Fixed from Mirabelle: the timestamp comes from the ns time (Mirabelle read it as
 * seconds), a string action is accepted, the URL is configurable, a severity PagerDuty does not know (such as
 * "expired") is sent as "critical" and a missing source as "unknown" instead of being refused with a 400.
 * Answers: 202 delivered; 400 (an invalid event) drops that event as `rejected`; 429 and 5xx are retried with
 * backoff, from the first event not yet delivered. An event in a maintenance window (`:maintenance true`) is not
 * sent (dropped, reason `maintenance`).
 */
import { Type } from '@sinclair/typebox';
import { isKeyword } from '../lang/edn.ts';
import type { Event } from '../event.ts';
import { PAGERDUTY_EVENTS_URL, PAGERDUTY_FIELDS as SENDER_FIELDS, PagerDutySender } from '../../notify/pagerduty.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import { inMaintenance } from './maintenance.ts';
import { deliverEach } from './partial.ts';
import type { OutputObserver } from './types.ts';

export { PAGERDUTY_EVENTS_URL } from '../../notify/pagerduty.ts';
const ACTIONS = new Set(['trigger', 'acknowledge', 'resolve']);
const SEVERITIES = new Set(['critical', 'error', 'warning', 'info']);

const fieldList = Type.Array(Type.String({ minLength: 1 }), { minItems: 1 });

/** The kind's own keys of `streams.outputs.<name>` (the batching keys are added by schema.ts): the sender's, and
 *  how events are read. */
export const PAGERDUTY_FIELDS = {
  ...SENDER_FIELDS,
  'source-key': Type.Optional(Type.String({ minLength: 1 })),
  'summary-keys': Type.Optional(fieldList),
  'dedup-keys': Type.Optional(fieldList),
};

export interface PagerDutyEntry {
  type: 'pagerduty';
  'service-key': string;
  'source-key'?: string;
  'summary-keys'?: string[];
  'dedup-keys'?: string[];
  url?: string;
}

export interface PagerDutySettings {
  readonly type: 'pagerduty';
  readonly serviceKey: string;
  readonly sourceKey: string;
  readonly summaryKeys: readonly string[];
  readonly dedupKeys: readonly string[];
  readonly url: string;
  readonly timeoutMs: number;
  readonly batching: BatchSettings;
}

/** Mirabelle's keys are keywords (`:host`); YAML gives `host` or `:host`, both mean the field `host`. */
const fieldName = (key: string) => (key.startsWith(':') ? key.slice(1) : key);

export function resolvePagerDutySettings(
  entry: PagerDutyEntry,
  batching: BatchSettings,
  timeoutMs: number,
): PagerDutySettings {
  return {
    type: 'pagerduty',
    serviceKey: entry['service-key'],
    sourceKey: fieldName(entry['source-key'] ?? 'host'),
    summaryKeys: (entry['summary-keys'] ?? ['host', 'service', 'state']).map(fieldName),
    dedupKeys: (entry['dedup-keys'] ?? ['host', 'service']).map(fieldName),
    url: entry.url ?? PAGERDUTY_EVENTS_URL,
    timeoutMs,
    batching,
  };
}

/** The event's action, or null when `pagerduty/action` is set to something PagerDuty does not know. */
function pagerDutyAction(event: Event): string | null {
  const explicit = event['pagerduty/action'];
  if (explicit !== undefined && explicit !== null) {
    const action = isKeyword(explicit) ? explicit.name : explicit;
    return typeof action === 'string' && ACTIONS.has(action) ? action : null;
  }
  return event.state === 'ok' ? 'resolve' : 'trigger';
}

function joined(event: Event, keys: readonly string[], separator: string): string {
  return keys.map((key) => text(event[key])).join(separator);
}

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : isKeyword(value) ? value.name : JSON.stringify(value);
}

function pagerDutyBody(settings: PagerDutySettings, event: Event, action: string): Record<string, unknown> {
  const state = typeof event.state === 'string' ? event.state : 'critical';
  const severity = state === 'ok' ? 'info' : SEVERITIES.has(state) ? state : 'critical';
  const time = typeof event.time === 'number' ? Math.round(event.time / 1e6) : Date.now();
  const source = text(event[settings.sourceKey]);
  return {
    event_action: action,
    dedup_key: joined(event, settings.dedupKeys, '-'),
    payload: {
      summary: joined(event, settings.summaryKeys, ' - '),
      source: source === '' ? 'unknown' : source,
      severity,
      timestamp: new Date(time).toISOString(),
      custom_details: event,
    },
  };
}

export function createPagerDutyOutput(
  name: string,
  settings: PagerDutySettings,
  observer: OutputObserver,
): BatchingOutput {
  const sender = new PagerDutySender(settings);
  // PagerDuty answers 400 for an event it cannot take: deliverEach drops that event alone.
  const deliver = deliverEach(name, observer, (event, signal) =>
    sender.send(pagerDutyBody(settings, event, pagerDutyAction(event) as string), signal),
  );
  const refuse = (event: Event) =>
    inMaintenance(event) ? 'maintenance' : pagerDutyAction(event) === null ? 'unusable' : null;
  return new BatchingOutput({
    name,
    settings: settings.batching,
    deliver,
    observer,
    refuse,
    onClose: () => sender.close(),
  });
}
