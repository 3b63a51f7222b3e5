/**
 * The `email` sender (docs/alerting.md), shared by the stream output of that type and the notifiers: one e-mail per
 * message, through SMTP with nodemailer (a maintained SMTP client: STARTTLS, implicit TLS, authentication,
 * timeouts). Subject and body are Mustache templates over the message's view, rendered as plain text. An answer of
 * the 5xx family (a permanent refusal: an unknown recipient, wrong credentials) is a refusal; a connection failure
 * or a 4xx may pass later (retried). The status pages' subscriptions send through the same SMTP transport
 * (`smtpTransport`).
 */
import { readFileSync } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { Transporter } from 'nodemailer';
import { ConfigError } from '../common/config-error.ts';
import { Duration } from '../common/duration.ts';
import { DeliveryError } from './delivery.ts';
import { compileTemplate, type Template } from './templates.ts';

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
}

/** The subject and body of a sender without its own (each user of the sender has its view and its defaults). */
export interface EmailDefaults {
  subject: string;
  body: string;
}

export function resolveEmailSettings(
  entry: EmailEntry,
  timeoutMs: number,
  key: string,
  file: string | null,
  defaults: EmailDefaults,
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
    subject: compileTemplate(entry.subject ?? defaults.subject, 'none', file, `${key}.subject`),
    body: compileTemplate(entry.body ?? defaults.body, 'none', file, `${key}.body`),
    timeoutMs,
  };
}

/** A subject is one line: the newlines a template may bring are spaces. */
function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').trim();
}

/** Sends one e-mail per message over one SMTP transport. */
export class EmailSender {
  private transport: Promise<Transporter> | null = null;

  constructor(private readonly settings: EmailSettings) {}

  async send(view: object): Promise<void> {
    const { settings } = this;
    try {
      await (
        await this.connect()
      ).sendMail({
        from: settings.from,
        to: [...settings.to],
        subject: oneLine(settings.subject.render(view)),
        text: settings.body.render(view),
      });
    } catch (error) {
      const code = (error as { responseCode?: number }).responseCode;
      // 5xx is the server's final no; anything else (a 4xx, a connection or TLS failure) may pass later.
      throw new DeliveryError(
        `SMTP ${settings.host}:${settings.port}: ${(error as Error).message}`,
        code === undefined || code < 500,
      );
    }
  }

  async close(): Promise<void> {
    // A transport whose module failed to load has nothing to close.
    await this.transport?.then(
      (opened) => opened.close(),
      () => undefined,
    );
  }

  private connect(): Promise<Transporter> {
    return (this.transport ??= smtpTransport(this.settings, this.settings.timeoutMs));
  }
}

/** An SMTP server to send through: the email sender's, the status pages' subscriptions'. */
export interface SmtpServer {
  readonly host: string;
  readonly port: number;
  readonly tls: 'starttls' | 'tls' | 'none';
  readonly username: string | null;
  readonly password: string | null;
  /** A CA certificate (PEM file) for a server whose certificate the system does not trust. */
  readonly cacert?: string | null;
}

/**
 * A nodemailer transport to `server`, each step bounded by `timeoutMs`. nodemailer (2.5 MB of heap) is loaded here,
 * by the first e-mail sent, not at startup (bench/JOURNAL.md, "Modules loaded when used"); a transport opens no
 * connection before its first message anyway.
 */
export function smtpTransport(server: SmtpServer, timeoutMs: number): Promise<Transporter> {
  const cacert = server.cacert ?? null;
  const options = {
    host: server.host,
    port: server.port,
    secure: server.tls === 'tls',
    requireTLS: server.tls === 'starttls',
    ignoreTLS: server.tls === 'none',
    ...(server.username === null ? {} : { auth: { user: server.username, pass: server.password ?? '' } }),
    ...(cacert === null ? {} : { tls: { ca: readFileSync(cacert) } }),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  };
  return import('nodemailer').then(({ createTransport }) => createTransport(options));
}
