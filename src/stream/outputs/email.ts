/**
 * The `email` output (docs/alerting.md): one e-mail per event, through SMTP with nodemailer (a maintained SMTP
 * client: STARTTLS, implicit TLS, authentication, timeouts). Subject and body are Mustache templates over the
 * event's fields, rendered as plain text. It shares the outputs' bounded queue, batching and retries; an answer
 * of the 5xx family (a permanent refusal: an unknown recipient, wrong credentials) drops that event, counted
 * `rejected`, while a connection failure or a 4xx is retried. Events in a maintenance window are not sent
 * (counted `maintenance`).
 */
import { readFileSync } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { Transporter } from 'nodemailer';
import { ConfigError } from '../../common/config-error.ts';
import { Duration } from '../../common/duration.ts';
import type { Event } from '../event.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import { deliverEach } from './partial.ts';
import { compileTemplate, inMaintenance, type Template } from './templates.ts';
import { DeliveryError, type OutputObserver } from './types.ts';

const DEFAULT_EMAIL_SUBJECT = '{{host}} {{service}} is {{state}}';
const DEFAULT_EMAIL_BODY = `{{host}} {{service}} is {{state}}.

{{description}}

metric: {{metric}}
time (ns): {{time}}
`;

export const EMAIL_FIELDS = {
  type: Type.Literal('email'),
  host: Type.String({ minLength: 1 }),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  tls: Type.Optional(Type.Union([Type.Literal('starttls'), Type.Literal('tls'), Type.Literal('none')])),
  username: Type.Optional(Type.String({ minLength: 1 })),
  password: Type.Optional(Type.String()),
  /** A CA certificate (PEM file) for a server whose certificate the system does not trust. */
  cacert: Type.Optional(Type.String({ minLength: 1 })),
  from: Type.String({ minLength: 1 }),
  to: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
  subject: Type.Optional(Type.String({ minLength: 1 })),
  body: Type.Optional(Type.String({ minLength: 1 })),
  timeout: Type.Optional(Duration),
};

export interface EmailEntry {
  type: 'email';
  host: string;
  port?: number;
  tls?: 'starttls' | 'tls' | 'none';
  username?: string;
  password?: string;
  cacert?: string;
  from: string;
  to: string[];
  subject?: string;
  body?: string;
}

export interface EmailSettings {
  readonly type: 'email';
  readonly host: string;
  readonly port: number;
  readonly tls: 'starttls' | 'tls' | 'none';
  readonly username: string | null;
  readonly password: string | null;
  readonly cacert: string | null;
  readonly from: string;
  readonly to: readonly string[];
  readonly subject: Template;
  readonly body: Template;
  readonly timeoutMs: number;
  readonly batching: BatchSettings;
}

export function resolveEmailSettings(
  entry: EmailEntry,
  batching: BatchSettings,
  timeoutMs: number,
  key: string,
  file: string | null,
): EmailSettings {
  if ((entry.username === undefined) !== (entry.password === undefined)) {
    throw new ConfigError(
      file,
      `${key}.${entry.username === undefined ? 'username' : 'password'}`,
      'username and password go together',
    );
  }
  if (entry.cacert !== undefined) {
    try {
      readFileSync(entry.cacert);
    } catch (error) {
      throw new ConfigError(file, `${key}.cacert`, `cannot be read: ${(error as Error).message}`);
    }
  }
  return {
    type: 'email',
    host: entry.host,
    port: entry.port ?? 587,
    tls: entry.tls ?? 'starttls',
    username: entry.username ?? null,
    password: entry.password ?? null,
    cacert: entry.cacert ?? null,
    from: entry.from,
    to: entry.to,
    subject: compileTemplate(entry.subject ?? DEFAULT_EMAIL_SUBJECT, 'none', file, `${key}.subject`),
    body: compileTemplate(entry.body ?? DEFAULT_EMAIL_BODY, 'none', file, `${key}.body`),
    timeoutMs,
    batching,
  };
}

/** A subject is one line: the newlines a template may bring are spaces. */
function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').trim();
}

export function createEmailOutput(name: string, settings: EmailSettings, observer: OutputObserver): BatchingOutput {
  const options = {
    host: settings.host,
    port: settings.port,
    secure: settings.tls === 'tls',
    requireTLS: settings.tls === 'starttls',
    ignoreTLS: settings.tls === 'none',
    ...(settings.username === null ? {} : { auth: { user: settings.username, pass: settings.password ?? '' } }),
    ...(settings.cacert === null ? {} : { tls: { ca: readFileSync(settings.cacert) } }),
    connectionTimeout: settings.timeoutMs,
    greetingTimeout: settings.timeoutMs,
    socketTimeout: settings.timeoutMs,
  };
  // nodemailer (2.5 MB of heap) is loaded by the first e-mail sent, not at startup (bench/JOURNAL.md,
  // "Modules loaded when used"); a transport opens no connection before its first message anyway.
  let transport: Promise<Transporter> | null = null;
  const connect = () => (transport ??= import('nodemailer').then(({ createTransport }) => createTransport(options)));
  const deliver = deliverEach(name, observer, async (event: Event) => {
    try {
      await (
        await connect()
      ).sendMail({
        from: settings.from,
        to: [...settings.to],
        subject: oneLine(settings.subject.render(event)),
        text: settings.body.render(event),
      });
    } catch (error) {
      const code = (error as { responseCode?: number }).responseCode;
      // 5xx is the server's final no; anything else (a 4xx, a connection or TLS failure) may pass later.
      throw new DeliveryError(
        `SMTP ${settings.host}:${settings.port}: ${(error as Error).message}`,
        code === undefined || code < 500,
      );
    }
  });
  return new BatchingOutput(
    name,
    settings.batching,
    deliver,
    observer,
    (event) => (inMaintenance(event) ? 'maintenance' : null),
    async () => {
      // A transport whose module failed to load has nothing to close.
      await transport?.then(
        (opened) => opened.close(),
        () => undefined,
      );
    },
  );
}
