/**
 * The `webhook` and `slack` senders (docs/alerting.md), shared by the stream outputs of those types and the
 * notifiers: one HTTP request per message, its body rendered from a Mustache template over the message's view (a
 * stream event, or a notification's fields). `webhook` is the general one (any method, headers and body); `slack`
 * posts `{"text": ...}` to an incoming webhook (Slack's and Mattermost's). In a JSON body (the default content type)
 * template values are JSON-escaped, so the body stays valid JSON whatever the view holds; in a form-urlencoded body
 * they are URL-encoded, so a value cannot add a parameter. Header values are templates too (ntfy's title), sent as
 * UTF-8 (docs/alerting.md, "Templates").
 */
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../common/config-error.ts';
import { Duration } from '../common/duration.ts';
import { mergeHeaders } from '../common/headers.ts';
import { type HttpMethod, HttpSender } from './delivery.ts';
import { compileTemplate, hasControlCharacters, type Template } from './templates.ts';

const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const DEFAULT_HEADERS = { 'user-agent': 'vigie' };
const JSON_HEADERS = { 'content-type': 'application/json', 'user-agent': 'vigie' };

/** The keys of a `webhook` (an output's or a notifier's; the outputs add their batching keys). */
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
  method?: HttpMethod;
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
  readonly method: HttpMethod;
  /** Each value a template, rendered per message. */
  readonly headers: Readonly<Record<string, Template>>;
  /** Null: the view itself, as JSON (or the caller's default body). */
  readonly body: Template | null;
  readonly timeoutMs: number;
}

export interface SlackSettings {
  readonly type: 'slack';
  readonly url: string;
  /** Null: the caller's text (a notifier's message). */
  readonly text: Template | null;
  readonly timeoutMs: number;
}

function headerValue(headers: Readonly<Record<string, string>>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

export function resolveWebhookSettings(
  entry: WebhookEntry,
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
  };
}

export function resolveSlackSettings(
  entry: SlackEntry,
  timeoutMs: number,
  key: string,
  file: string | null,
  defaultText: string | null,
): SlackSettings {
  const text = entry.text ?? defaultText;
  return {
    type: 'slack',
    url: entry.url,
    text: text === null ? null : compileTemplate(text, 'slack', file, `${key}.text`),
    timeoutMs,
  };
}

/** The headers of one request. undici writes a header value's characters as bytes (latin1): a value is
 *  turned into its UTF-8 bytes first, so that `é` or an emoji reaches the receiver as UTF-8. */
function renderHeaders(templates: Readonly<Record<string, Template>>, view: object): Record<string, string> {
  const rendered: Record<string, string> = {};
  for (const [name, template] of Object.entries(templates))
    rendered[name] = Buffer.from(template.render(view), 'utf8').toString('latin1');
  return mergeHeaders(DEFAULT_HEADERS, rendered);
}

/** Sends a webhook's request per message. */
export class WebhookSender {
  private readonly http = new HttpSender();
  // The headers go with each request: none on the target.
  private readonly target;

  constructor(private readonly settings: WebhookSettings) {
    this.target = { url: settings.url, headers: {}, timeoutMs: settings.timeoutMs };
  }

  /** `view`: what the templates see; `defaultBody`: the body without a `body` template (the view as JSON unless
   *  given). */
  send(view: object, signal: AbortSignal, defaultBody?: string): Promise<void> {
    const { settings } = this;
    const body =
      settings.method === 'GET'
        ? null
        : settings.body === null
          ? (defaultBody ?? JSON.stringify(view))
          : settings.body.render(view);
    return this.http.send(this.target, settings.method, renderHeaders(settings.headers, view), body, signal);
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/** Posts `{"text": ...}` per message. */
export class SlackSender {
  private readonly http = new HttpSender();
  private readonly target;

  constructor(private readonly settings: SlackSettings) {
    this.target = { url: settings.url, headers: {}, timeoutMs: settings.timeoutMs };
  }

  /** The `text` template over `view`, or `text` (already escaped for Slack) without one. */
  send(view: object, signal: AbortSignal, text = ''): Promise<void> {
    const rendered = this.settings.text === null ? text : this.settings.text.render(view);
    return this.http.send(this.target, 'POST', JSON_HEADERS, JSON.stringify({ text: rendered }), signal);
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
