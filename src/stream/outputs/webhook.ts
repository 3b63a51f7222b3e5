/**
 * The `webhook` and `slack` outputs (docs/alerting.md): one HTTP request per event, its body rendered from a
 * Mustache template over the event's fields. `webhook` is the general one (any method, headers and body: Slack,
 * Discord, Teams, Mattermost, Telegram, ntfy, Gotify, Opsgenie each take a body of their own); `slack` posts
 * `{"text": ...}` to an incoming webhook (Slack's and Mattermost's). In a JSON body (the default content type)
 * template values are JSON-escaped, so the body stays valid JSON whatever the event holds; in a form-urlencoded
 * body they are URL-encoded, so a value cannot add a parameter. Header values are templates too (ntfy's title),
 * sent as UTF-8 (docs/alerting.md, "Templates").
 *
 * Like every notification output they share the outputs' bounded queue, batching and retries
 * (src/stream/outputs/batcher.ts), send one request per event (a refused one is dropped alone, counted
 * `rejected`), and drop the events of a maintenance window (counted `maintenance`).
 */
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../../common/config-error.ts';
import { mergeHeaders } from '../../common/headers.ts';
import { undici } from '../../common/undici.ts';
import { Duration } from '../../common/duration.ts';
import type { Event } from '../event.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import { type HttpTarget, sendRequest } from './http.ts';
import { deliverEach } from './partial.ts';
import { compileTemplate, hasControlCharacters, inMaintenance, type Template } from './templates.ts';
import type { OutputObserver } from './types.ts';

const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type WebhookMethod = (typeof WEBHOOK_METHODS)[number];
const DEFAULT_HEADERS = { 'user-agent': 'vigie' };
const DEFAULT_SLACK_TEXT = '{{host}} {{service}} is {{state}}: {{description}}';

/** The kinds' own keys of `streams.outputs.<name>` (the batching keys are added by schema.ts). */
export const WEBHOOK_FIELDS = {
  type: Type.Literal('webhook'),
  url: Type.String({ pattern: '^https?://' }),
  method: Type.Optional(Type.Union(WEBHOOK_METHODS.map((method) => Type.Literal(method)))),
  headers: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
  body: Type.Optional(Type.String()),
  timeout: Type.Optional(Duration),
};

export const SLACK_FIELDS = {
  type: Type.Literal('slack'),
  url: Type.String({ pattern: '^https?://' }),
  text: Type.Optional(Type.String({ minLength: 1 })),
  timeout: Type.Optional(Duration),
};

export interface WebhookEntry {
  type: 'webhook';
  url: string;
  method?: WebhookMethod;
  headers?: Record<string, string>;
  body?: string;
}

export interface SlackEntry {
  type: 'slack';
  url: string;
  text?: string;
}

export interface WebhookSettings {
  readonly type: 'webhook';
  readonly url: string;
  readonly method: WebhookMethod;
  /** Each value a template, rendered per event. */
  readonly headers: Readonly<Record<string, Template>>;
  /** Null: the event itself, as JSON. */
  readonly body: Template | null;
  readonly timeoutMs: number;
  readonly batching: BatchSettings;
}

export interface SlackSettings {
  readonly type: 'slack';
  readonly url: string;
  readonly text: Template;
  readonly timeoutMs: number;
  readonly batching: BatchSettings;
}

function headerValue(headers: Readonly<Record<string, string>>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

export function resolveWebhookSettings(
  entry: WebhookEntry,
  batching: BatchSettings,
  timeoutMs: number,
  key: string,
  file: string | null,
): WebhookSettings {
  const headers = mergeHeaders({ 'content-type': 'application/json' }, entry.headers ?? {});
  const contentType = headerValue(headers, 'content-type') ?? '';
  const escaping = /\bjson\b/i.test(contentType)
    ? 'json'
    : /^\s*application\/x-www-form-urlencoded\b/i.test(contentType)
      ? 'form'
      : 'none';
  const headerTemplates: Record<string, Template> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (hasControlCharacters(value))
      throw new ConfigError(
        file,
        `${key}.headers.${name}`,
        'must not hold control characters (a header value is one line)',
      );
    headerTemplates[name] = compileTemplate(value, 'header', file, `${key}.headers.${name}`);
  }
  return {
    type: 'webhook',
    url: entry.url,
    method: entry.method ?? 'POST',
    headers: headerTemplates,
    body: entry.body === undefined ? null : compileTemplate(entry.body, escaping, file, `${key}.body`),
    timeoutMs,
    batching,
  };
}

/** The headers of one request. undici writes a header value's characters as bytes (latin1): a value is
 *  turned into its UTF-8 bytes first, so that `é` or an emoji reaches the receiver as UTF-8. */
function renderHeaders(templates: Readonly<Record<string, Template>>, event: Event): Record<string, string> {
  const rendered: Record<string, string> = {};
  for (const [name, template] of Object.entries(templates))
    rendered[name] = Buffer.from(template.render(event), 'utf8').toString('latin1');
  return mergeHeaders(DEFAULT_HEADERS, rendered);
}

export function resolveSlackSettings(
  entry: SlackEntry,
  batching: BatchSettings,
  timeoutMs: number,
  key: string,
  file: string | null,
): SlackSettings {
  return {
    type: 'slack',
    url: entry.url,
    text: compileTemplate(entry.text ?? DEFAULT_SLACK_TEXT, 'slack', file, `${key}.text`),
    timeoutMs,
    batching,
  };
}

const refuseMaintenance = (event: Event) => (inMaintenance(event) ? 'maintenance' : null);

export function createWebhookOutput(name: string, settings: WebhookSettings, observer: OutputObserver): BatchingOutput {
  const agent = new (undici().Agent)({ connections: 2 });
  // The headers go with each request (sendRequest lays the target's over its own): none on the target.
  const target: HttpTarget = { url: settings.url, headers: {}, timeoutMs: settings.timeoutMs };
  const body = (event: Event) => (settings.body === null ? JSON.stringify(event) : settings.body.render(event));
  const deliver = deliverEach(name, observer, (event, signal) =>
    sendRequest(
      agent,
      target,
      settings.method,
      renderHeaders(settings.headers, event),
      settings.method === 'GET' ? null : body(event),
      signal,
    ),
  );
  return new BatchingOutput(name, settings.batching, deliver, observer, refuseMaintenance, () => agent.close());
}

export function createSlackOutput(name: string, settings: SlackSettings, observer: OutputObserver): BatchingOutput {
  const agent = new (undici().Agent)({ connections: 2 });
  const target: HttpTarget = { url: settings.url, headers: {}, timeoutMs: settings.timeoutMs };
  const headers = { 'content-type': 'application/json', 'user-agent': 'vigie' };
  const deliver = deliverEach(name, observer, (event, signal) =>
    sendRequest(agent, target, 'POST', headers, JSON.stringify({ text: settings.text.render(event) }), signal),
  );
  return new BatchingOutput(name, settings.batching, deliver, observer, refuseMaintenance, () => agent.close());
}
