/**
 * The config of the outputs (`streams.outputs`), resolved by the config loader once into `OutputSettings`
 * (defaults applied, durations in ms, templates parsed): the outputs receive those and never read the raw config.
 * Kinds: `file` (JSON lines), `http` (POST of JSON arrays), `prometheus` (remote-write 1.0), and `pagerduty`,
 * `elasticsearch`, `webhook`, `slack`, `email` (their own keys and resolution live in their files). Every kind takes
 * the batching settings; unknown keys are rejected.
 */
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ConfigError } from '../../common/config-error.ts';
import { describeSchemaError, jsonPointerToKey } from '../../common/schema-errors.ts';
import { Duration, parseDuration } from '../../common/duration.ts';
import type { BatchSettings } from './batcher.ts';
import {
  ELASTICSEARCH_FIELDS,
  type ElasticsearchEntry,
  type ElasticsearchSettings,
  resolveElasticsearchSettings,
} from './elasticsearch.ts';
import { EMAIL_FIELDS, type EmailEntry } from '../../notify/email.ts';
import { SLACK_FIELDS, type SlackEntry, WEBHOOK_FIELDS, type WebhookEntry } from '../../notify/webhook.ts';
import { type EmailSettings, resolveEmailSettings } from './email.ts';
import {
  PAGERDUTY_FIELDS,
  type PagerDutyEntry,
  type PagerDutySettings,
  resolvePagerDutySettings,
} from './pagerduty.ts';
import { resolveSlackSettings, resolveWebhookSettings, type SlackSettings, type WebhookSettings } from './webhook.ts';

const closed = { additionalProperties: false } as const;

const batching = {
  'queue-size': Type.Optional(Type.Integer({ minimum: 1 })),
  'batch-size': Type.Optional(Type.Integer({ minimum: 1 })),
  'flush-interval': Type.Optional(Duration),
  retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 20 })),
  'retry-backoff': Type.Optional(Duration),
};

const remote = {
  url: Type.String({ pattern: '^https?://' }),
  headers: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
  timeout: Type.Optional(Duration),
};

const FileOutputSchema = Type.Object(
  { type: Type.Literal('file'), path: Type.String({ minLength: 1 }), ...batching },
  closed,
);
const HttpOutputSchema = Type.Object({ type: Type.Literal('http'), ...remote, ...batching }, closed);
const PrometheusOutputSchema = Type.Object({ type: Type.Literal('prometheus'), ...remote, ...batching }, closed);
const PagerDutyOutputSchema = Type.Object({ ...PAGERDUTY_FIELDS, ...batching }, closed);
const ElasticsearchOutputSchema = Type.Object({ ...ELASTICSEARCH_FIELDS, ...batching }, closed);
const WebhookOutputSchema = Type.Object({ ...WEBHOOK_FIELDS, ...batching }, closed);
const SlackOutputSchema = Type.Object({ ...SLACK_FIELDS, ...batching }, closed);
const EmailOutputSchema = Type.Object({ ...EMAIL_FIELDS, ...batching }, closed);

const SCHEMAS = {
  file: FileOutputSchema,
  http: HttpOutputSchema,
  prometheus: PrometheusOutputSchema,
  pagerduty: PagerDutyOutputSchema,
  elasticsearch: ElasticsearchOutputSchema,
  webhook: WebhookOutputSchema,
  slack: SlackOutputSchema,
  email: EmailOutputSchema,
} as const;
/** One entry of `streams.outputs`. */
type OutputConfigEntry = Static<(typeof SCHEMAS)[keyof typeof SCHEMAS]>;

const DEFAULT_BATCHING = {
  queueSize: 10_000,
  batchSize: 1_000,
  flushIntervalMs: 1_000,
  retries: 3,
  retryBackoffMs: 200,
} as const satisfies BatchSettings;
const DEFAULT_TIMEOUT_MS = 10_000;

export type OutputSettings =
  | { readonly type: 'file'; readonly path: string; readonly batching: BatchSettings }
  | {
      readonly type: 'http' | 'prometheus';
      readonly url: string;
      readonly headers: Readonly<Record<string, string>>;
      readonly timeoutMs: number;
      readonly batching: BatchSettings;
    }
  | PagerDutySettings
  | ElasticsearchSettings
  | WebhookSettings
  | SlackSettings
  | EmailSettings;

/**
 * Validates one entry against its kind's schema (checked by kind, so that the message is about the right
 * fields) and resolves defaults and durations. Throws a ConfigError keyed `streams.outputs.<name>...`.
 */
export function parseOutputConfig(name: string, raw: unknown, file: string | null = null): OutputSettings {
  const key = `streams.outputs.${name}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigError(file, key, 'must be a mapping');
  const type = (raw as { type?: unknown }).type;
  if (typeof type !== 'string' || !Object.hasOwn(SCHEMAS, type)) {
    const kinds = Object.keys(SCHEMAS)
      .map((kind) => JSON.stringify(kind))
      .join(', ');
    throw new ConfigError(file, `${key}.type`, `must be one of ${kinds}, got ${JSON.stringify(type ?? null)}`);
  }
  const schema = SCHEMAS[type as keyof typeof SCHEMAS];
  const first = Value.Errors(schema, raw).First();
  if (first)
    throw new ConfigError(
      file,
      `${key}${first.path === '' ? '' : `.${jsonPointerToKey(first.path)}`}`,
      describeSchemaError(first),
    );
  const entry = raw as OutputConfigEntry;
  const batching: BatchSettings = {
    queueSize: entry['queue-size'] ?? DEFAULT_BATCHING.queueSize,
    batchSize: entry['batch-size'] ?? DEFAULT_BATCHING.batchSize,
    flushIntervalMs: durationMs(
      file,
      `${key}.flush-interval`,
      entry['flush-interval'],
      DEFAULT_BATCHING.flushIntervalMs,
    ),
    retries: entry.retries ?? DEFAULT_BATCHING.retries,
    retryBackoffMs: durationMs(file, `${key}.retry-backoff`, entry['retry-backoff'], DEFAULT_BATCHING.retryBackoffMs),
  };
  if (entry.type === 'file') return { type: 'file', path: entry.path, batching };
  if (entry.type === 'elasticsearch')
    return resolveElasticsearchSettings(entry as ElasticsearchEntry, batching, key, file);
  const timeoutMs = durationMs(file, `${key}.timeout`, entry.timeout, DEFAULT_TIMEOUT_MS);
  if (entry.type === 'pagerduty') return resolvePagerDutySettings(entry as PagerDutyEntry, batching, timeoutMs);
  if (entry.type === 'webhook') return resolveWebhookSettings(entry as WebhookEntry, batching, timeoutMs, key, file);
  if (entry.type === 'slack') return resolveSlackSettings(entry as SlackEntry, batching, timeoutMs, key, file);
  if (entry.type === 'email') return resolveEmailSettings(entry as EmailEntry, batching, timeoutMs, key, file);
  return {
    type: entry.type as 'http' | 'prometheus',
    url: (entry as { url: string }).url,
    headers: (entry as { headers?: Record<string, string> }).headers ?? {},
    timeoutMs,
    batching,
  };
}

/** Resolves every entry of `streams.outputs` (the config loader's step); the first bad entry throws. */
export function resolveOutputs(
  raw: Readonly<Record<string, unknown>>,
  file: string | null = null,
): Record<string, OutputSettings> {
  const resolved: Record<string, OutputSettings> = {};
  for (const [name, entry] of Object.entries(raw)) resolved[name] = parseOutputConfig(name, entry, file);
  return resolved;
}

function durationMs(file: string | null, key: string, text: string | undefined, fallbackMs: number): number {
  if (text === undefined) return fallbackMs;
  let ns: number;
  try {
    ns = parseDuration(text);
  } catch (error) {
    throw new ConfigError(file, key, (error as Error).message);
  }
  if (ns <= 0) throw new ConfigError(file, key, `must be positive, got ${JSON.stringify(text)}`);
  return Math.max(1, Math.round(ns / 1e6));
}
