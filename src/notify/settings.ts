/**
 * `notifiers:` (docs/alerting.md, "Notifiers"): receivers declared once, by name, for whatever notifies people (the
 * alerts of the checks; later the subscriptions of status pages). Each entry is validated by its type's schema:
 * `slack`, `webhook`, `email`, `pagerduty` (the keys of the stream outputs of those types, without their batching)
 * and the presets over them (src/notify/presets/), plus the keys every notifier takes: `timeout` (10s), `retries`
 * (3), `retry-backoff` (500ms) and `max-pending` (1,000). Resolved once by the config loader; errors name the key.
 */
import { Type, type TProperties } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ConfigError } from '../common/config-error.ts';
import { durationMs } from '../common/config-values.ts';
import { Duration } from '../common/duration.ts';
import { describeSchemaError, jsonPointerToKey } from '../common/schema-errors.ts';
import { EMAIL_FIELDS, type EmailEntry, type EmailSettings, resolveEmailSettings } from './email.ts';
import { PAGERDUTY_EVENTS_URL, PAGERDUTY_FIELDS, type PagerDutyTarget } from './pagerduty.ts';
import { CHAT_PRESETS } from './presets/chat.ts';
import type { Preset } from './presets/preset.ts';
import { PUSH_PRESETS } from './presets/push.ts';
import {
  resolveSlackSettings,
  resolveWebhookSettings,
  SLACK_FIELDS,
  type SlackEntry,
  type SlackSettings,
  WEBHOOK_FIELDS,
  type WebhookEntry,
  type WebhookSettings,
} from './webhook.ts';

export const PRESETS: Readonly<Record<string, Preset>> = { ...CHAT_PRESETS, ...PUSH_PRESETS };

const COMMON = {
  timeout: Type.Optional(Duration),
  retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
  'retry-backoff': Type.Optional(Duration),
  'max-pending': Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
};

const SEVERITY = Type.Union(['critical', 'error', 'warning', 'info'].map((level) => Type.Literal(level)));

const closed = { additionalProperties: false } as const;
const SCHEMAS: Record<string, ReturnType<typeof Type.Object>> = {
  slack: Type.Object({ ...SLACK_FIELDS, ...COMMON }, closed),
  webhook: Type.Object({ ...WEBHOOK_FIELDS, ...COMMON }, closed),
  email: Type.Object({ ...EMAIL_FIELDS, ...COMMON }, closed),
  pagerduty: Type.Object({ ...PAGERDUTY_FIELDS, severity: Type.Optional(SEVERITY), ...COMMON }, closed),
  ...Object.fromEntries(
    Object.entries(PRESETS).map(([type, preset]) => [
      type,
      Type.Object({ type: Type.Literal(type), ...(preset.fields as TProperties), ...COMMON }, closed),
    ]),
  ),
};

const NOTIFIER_TYPES = Object.keys(SCHEMAS);

/** A notifier's name: a metric label and a word in checks' `alerts.notify`. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The e-mail of a notification: its title as the subject, its text as the body. */
const EMAIL_DEFAULTS = { subject: '{{title}}', body: '{{text}}' };

export type SenderSettings =
  | { readonly type: 'webhook'; readonly webhook: WebhookSettings }
  | { readonly type: 'slack'; readonly slack: SlackSettings }
  | { readonly type: 'email'; readonly email: EmailSettings }
  | { readonly type: 'pagerduty'; readonly pagerduty: PagerDutyTarget & { readonly severity: string } }
  | { readonly type: 'preset'; readonly preset: string; readonly entry: Readonly<Record<string, unknown>> };

export interface NotifierSettings {
  readonly name: string;
  /** As written: `slack`, `discord`... */
  readonly type: string;
  readonly sender: SenderSettings;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly retryBackoffMs: number;
  /** Notifications waiting or in flight at most; beyond, a notification is dropped (counted). */
  readonly maxPending: number;
}

const DEFAULT_TIMEOUT = '10s';
const DEFAULT_RETRIES = 3;
const DEFAULT_BACKOFF = '500ms';
const DEFAULT_MAX_PENDING = 1000;

/** Resolves every entry of `notifiers:`; the first bad one throws a ConfigError naming `notifiers.<name>.<key>`. */
export function resolveNotifiers(
  raw: Readonly<Record<string, unknown>> | undefined,
  file: string | null,
): Record<string, NotifierSettings> {
  const resolved: Record<string, NotifierSettings> = {};
  for (const [name, entry] of Object.entries(raw ?? {})) resolved[name] = resolveNotifier(name, entry, file);
  return resolved;
}

function resolveNotifier(name: string, raw: unknown, file: string | null): NotifierSettings {
  const key = `notifiers.${name}`;
  if (!NAME.test(name))
    throw new ConfigError(
      file,
      key,
      'a notifier name is 1 to 64 letters, digits, "_", "." or "-", starting with a letter or a digit',
    );
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigError(file, key, 'must be a mapping');
  const type = (raw as { type?: unknown }).type;
  const schema = typeof type === 'string' && Object.hasOwn(SCHEMAS, type) ? SCHEMAS[type] : undefined;
  if (schema === undefined)
    throw new ConfigError(
      file,
      `${key}.type`,
      `must be one of ${NOTIFIER_TYPES.join(', ')}, got ${JSON.stringify(type ?? null)}`,
    );
  const first = Value.Errors(schema, raw).First();
  if (first)
    throw new ConfigError(
      file,
      first.path === '' ? key : `${key}.${jsonPointerToKey(first.path)}`,
      describeSchemaError(first),
    );
  const entry = raw as Record<string, unknown> & { type: string };
  const timeoutMs = durationMs(file, `${key}.timeout`, (entry.timeout as string | undefined) ?? DEFAULT_TIMEOUT);
  return {
    name,
    type: entry.type,
    sender: sender(entry, timeoutMs, key, file),
    timeoutMs,
    retries: (entry.retries as number | undefined) ?? DEFAULT_RETRIES,
    retryBackoffMs: durationMs(
      file,
      `${key}.retry-backoff`,
      (entry['retry-backoff'] as string | undefined) ?? DEFAULT_BACKOFF,
    ),
    maxPending: (entry['max-pending'] as number | undefined) ?? DEFAULT_MAX_PENDING,
  };
}

function sender(
  entry: Record<string, unknown> & { type: string },
  timeoutMs: number,
  key: string,
  file: string | null,
): SenderSettings {
  switch (entry.type) {
    case 'webhook':
      return {
        type: 'webhook',
        webhook: resolveWebhookSettings(entry as unknown as WebhookEntry, timeoutMs, key, file),
      };
    case 'slack':
      return {
        type: 'slack',
        slack: resolveSlackSettings(entry as unknown as SlackEntry, timeoutMs, key, file, null),
      };
    case 'email':
      return {
        type: 'email',
        email: resolveEmailSettings(entry as unknown as EmailEntry, timeoutMs, key, file, EMAIL_DEFAULTS),
      };
    case 'pagerduty':
      return {
        type: 'pagerduty',
        pagerduty: {
          serviceKey: entry['service-key'] as string,
          url: (entry.url as string | undefined) ?? PAGERDUTY_EVENTS_URL,
          timeoutMs,
          severity: (entry.severity as string | undefined) ?? 'critical',
        },
      };
    default: {
      const { timeout: _t, retries: _r, 'retry-backoff': _b, 'max-pending': _m, ...own } = entry;
      return { type: 'preset', preset: entry.type, entry: own };
    }
  }
}

/** The schema of `notifiers:` in the config file: each entry is checked by `resolveNotifiers`. */
export const NotifiersSchema = Type.Record(Type.String(), Type.Unknown());
