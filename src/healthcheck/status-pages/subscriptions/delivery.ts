/**
 * Sending to subscribers (docs/status-pages.md, "Subscriptions"): e-mail through SMTP with nodemailer (as the email
 * output does), webhooks as one JSON POST. Messages wait in one bounded queue (`max-pending`), sent two at a time;
 * a message over the bound is dropped, counted `status_subscription_messages_total{outcome="dropped"}`. No retry: a
 * subscriber's next message is the next update.
 *
 * A webhook's address is a stranger's choice: it must not make Vigie reach its own network. Unless
 * `allow-private-webhooks`, a webhook whose host is or resolves to a loopback, private, link-local or unspecified
 * address is refused at the connection (the address checked is the one connected to: no second resolution), and
 * redirects are not followed.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { Transporter } from 'nodemailer';
import { Counter, type Registry } from 'prom-client';
import { smtpTransport } from '../../../notify/email.ts';
import type { SubscriptionSettings } from './settings.ts';

export interface Message {
  channel: 'email' | 'webhook';
  address: string;
  subject: string;
  text: string;
  /** The webhook's body. */
  json: Record<string, unknown>;
  /** The message's unsubscribe link (an e-mail's List-Unsubscribe), absent on a confirmation. */
  unsubscribeUrl?: string;
}

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv6');

/** Whether an address is one a stranger's webhook may not reach (IPv4-mapped IPv6 read as its IPv4). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return PRIVATE.check(mapped[1] as string, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

class PrivateAddressError extends Error {}

/** dns.lookup, refusing private answers: the address refused is the one the socket would connect to. */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const usable = addresses.filter((one) => !isPrivateAddress(one.address));
    if (usable.length === 0)
      return callback(new PrivateAddressError(`${hostname} resolves to private addresses only`), '', 0);
    if ((options as { all?: boolean }).all)
      return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
    const [first] = usable as [LookupAddress];
    return callback(null, first.address, first.family);
  });
};

export class Deliveries {
  private readonly queue: Message[] = [];
  private running = 0;
  private transport: Promise<Transporter> | null = null;
  private transportFor: SubscriptionSettings['email'] = null;
  private readonly messages: Counter<'channel' | 'outcome'>;

  constructor(
    private readonly settings: () => SubscriptionSettings | null,
    registry: Registry,
    private readonly onError: (message: Message, error: Error) => void,
  ) {
    this.messages = new Counter({
      name: 'status_subscription_messages_total',
      help: 'Messages to the subscribers of status pages, by outcome: sent, failed, refused (a webhook to a private address), dropped (the queue full) (docs/status-pages.md, "Subscriptions").',
      labelNames: ['channel', 'outcome'],
      registers: [registry],
    });
  }

  send(message: Message): void {
    const settings = this.settings();
    if (settings === null || this.queue.length >= settings.maxPending) {
      this.messages.inc({ channel: message.channel, outcome: 'dropped' });
      return;
    }
    this.queue.push(message);
    this.pump();
  }

  private pump(): void {
    while (this.running < 2 && this.queue.length > 0) {
      const message = this.queue.shift() as Message;
      this.running++;
      this.deliver(message)
        .then(() => this.messages.inc({ channel: message.channel, outcome: 'sent' }))
        .catch((error: Error) => {
          this.messages.inc({
            channel: message.channel,
            outcome: error instanceof PrivateAddressError ? 'refused' : 'failed',
          });
          this.onError(message, error);
        })
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }

  private async deliver(message: Message): Promise<void> {
    const settings = this.settings();
    if (settings === null) throw new Error('subscriptions are no longer configured');
    if (message.channel === 'webhook') return this.post(message, settings);
    if (settings.email === null) throw new Error('e-mail subscriptions are no longer configured');
    const transport = await this.smtp(settings);
    await transport.sendMail({
      from: settings.email.from,
      to: message.address,
      subject: message.subject,
      text: message.text,
      ...(message.unsubscribeUrl === undefined
        ? {}
        : {
            headers: {
              'List-Unsubscribe': `<${message.unsubscribeUrl}>`,
              'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
            },
          }),
    });
  }

  private smtp(settings: SubscriptionSettings): Promise<Transporter> {
    const email = settings.email as NonNullable<SubscriptionSettings['email']>;
    if (this.transport === null || this.transportFor !== email) {
      this.transportFor = email;
      this.transport = smtpTransport(email, settings.timeoutMs);
    }
    return this.transport;
  }

  private post(message: Message, settings: SubscriptionSettings): Promise<void> {
    const url = new URL(message.address);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!settings.allowPrivateWebhooks && isIP(host) !== 0 && isPrivateAddress(host))
      return Promise.reject(new PrivateAddressError(`${host} is a private address`));
    const body = JSON.stringify(message.json);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const request = send(
        url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'vigie-status-page' },
          timeout: settings.timeoutMs,
          ...(settings.allowPrivateWebhooks ? {} : { lookup: publicLookup }),
        },
        (response) => {
          response.resume();
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve();
          else reject(new Error(`${url.origin} answered ${status}`));
        },
      );
      request.on('timeout', () =>
        request.destroy(new Error(`${url.origin}: no answer within ${settings.timeoutMs} ms`)),
      );
      request.on('error', reject);
      request.end(body);
    });
  }
}
