/**
 * `healthchecks.status-subscriptions` (docs/status-pages.md, "Subscriptions"): whether readers of public pages may
 * subscribe, and how they are written to. Without it, `/status/<slug>/subscribe` answers 404 and pages offer no form.
 * `public-url` is the base of every link sent (confirm, unsubscribe, the page): never the request's Host, which a
 * stranger chooses, so that a message can only link to where the operator said.
 */
import { Type, type Static } from '@sinclair/typebox';
import { ConfigError } from '../../../common/config-error.ts';
import { durationMs } from '../../../common/config-values.ts';
import { Duration } from '../../../common/duration.ts';

const closed = { additionalProperties: false } as const;

export const SubscriptionSettingsSchema = Type.Object(
  {
    'public-url': Type.String({ minLength: 1 }),
    email: Type.Optional(
      Type.Object(
        {
          host: Type.String({ minLength: 1 }),
          port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
          tls: Type.Optional(Type.Union([Type.Literal('starttls'), Type.Literal('tls'), Type.Literal('none')])),
          username: Type.Optional(Type.String({ minLength: 1 })),
          password: Type.Optional(Type.String()),
          from: Type.String({ minLength: 1 }),
        },
        closed,
      ),
    ),
    webhooks: Type.Optional(Type.Boolean()),
    'allow-private-webhooks': Type.Optional(Type.Boolean()),
    'per-address-per-hour': Type.Optional(Type.Integer({ minimum: 1 })),
    'per-client-per-hour': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-pending': Type.Optional(Type.Integer({ minimum: 1 })),
    timeout: Type.Optional(Duration),
  },
  closed,
);

interface SmtpSettings {
  host: string;
  port: number;
  tls: 'starttls' | 'tls' | 'none';
  username: string | null;
  password: string | null;
  from: string;
}

export interface SubscriptionSettings {
  /** Without a trailing `/`. */
  publicUrl: string;
  email: SmtpSettings | null;
  webhooks: boolean;
  /** Webhooks to loopback, private and link-local addresses (a test's receiver; never a stranger's choice). */
  allowPrivateWebhooks: boolean;
  /** Subscribe requests naming one address (an e-mail or a webhook URL) per hour. */
  perAddressPerHour: number;
  /** Subscribe requests from one client address per hour. */
  perClientPerHour: number;
  /** Messages waiting to be sent; more are dropped, counted. */
  maxPending: number;
  timeoutMs: number;
}

export function resolveSubscriptions(
  file: string | null,
  raw: Static<typeof SubscriptionSettingsSchema> | undefined,
): SubscriptionSettings | null {
  if (raw === undefined) return null;
  const key = 'healthchecks.status-subscriptions';
  let url: URL;
  try {
    url = new URL(raw['public-url']);
  } catch {
    throw new ConfigError(file, `${key}.public-url`, 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ConfigError(file, `${key}.public-url`, 'must be an absolute http(s) URL');
  const { email } = raw;
  if (email !== undefined && (email.username === undefined) !== (email.password === undefined))
    throw new ConfigError(file, `${key}.email.username`, 'username and password go together');
  return {
    publicUrl: url.href.replace(/\/+$/, ''),
    email:
      email === undefined
        ? null
        : {
            host: email.host,
            port: email.port ?? 587,
            tls: email.tls ?? 'starttls',
            username: email.username ?? null,
            password: email.password ?? null,
            from: email.from,
          },
    webhooks: raw.webhooks ?? true,
    allowPrivateWebhooks: raw['allow-private-webhooks'] ?? false,
    perAddressPerHour: raw['per-address-per-hour'] ?? 3,
    perClientPerHour: raw['per-client-per-hour'] ?? 30,
    maxPending: raw['max-pending'] ?? 10_000,
    timeoutMs: durationMs(file, `${key}.timeout`, raw.timeout ?? '10s'),
  };
}
