/**
 * Subscriptions to public status pages (docs/status-pages.md, "Subscriptions"): `POST /status/<slug>/subscribe`
 * with an e-mail address or a webhook URL makes a pending subscription and sends it a confirmation link; confirmed,
 * it is sent every incident of the page when created and at each update, and each maintenance window of the page's
 * checks when it starts; every message carries its unsubscribe link. Requests are limited per address and per
 * client each hour, and a page takes `max-subscribers` (10,000) at most; each refusal is counted by reason in
 * `status_subscriptions_refused_total`.
 */
import { Counter, type Registry } from 'prom-client';
import type { StateCollection } from '../../../common/runtime-state.ts';
import { covers, type MaintenanceWindow, occurrence } from '../../maintenance/maintenance.ts';
import { HttpError } from '../../../server/errors.ts';
import { STATUS_WORDS } from '../html.ts';
import type { Incident } from '../incidents.ts';
import { DEFAULT_MAX_SUBSCRIBERS, isPublic, type StatusPage } from '../page.ts';
import { Deliveries, isPrivateAddress, type Message } from './delivery.ts';
import { HourlyLimiter } from './limiter.ts';
import type { SubscriptionSettings } from './settings.ts';
import { type Channel, type LinkKey, type Subscription, SubscriptionStore } from './store.ts';

/** How often windows are looked at for one that started: its subscribers hear of it within this. */
const TICK_MS = 5000;
const EMAIL = /^[^\s@<>()[\]",;:\\]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+$/;

export interface SubscriptionsOptions {
  collection: StateCollection<Subscription>;
  settings: () => SubscriptionSettings | null;
  page: (slug: string) => StatusPage | undefined;
  /** The checks a page shows now, with their labels (for the windows that cover them). */
  checks: (page: StatusPage) => { name: string; labels: Readonly<Record<string, string>>; shown: string }[];
  registry: Registry;
  onError: (message: Message, error: Error) => void;
  now?: () => number;
}

function refusal(status: 400 | 404 | 409 | 429, message: string, headers: Record<string, string> = {}): HttpError {
  return new HttpError(status, message, headers);
}

export class Subscriptions {
  readonly store: SubscriptionStore;
  private readonly deliveries: Deliveries;
  private readonly limiter: HourlyLimiter;
  private readonly refused: Counter<'reason'>;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly options: SubscriptionsOptions) {
    this.now = options.now ?? Date.now;
    this.store = new SubscriptionStore(options.collection, this.now);
    this.limiter = new HourlyLimiter(this.now);
    this.deliveries = new Deliveries(options.settings, options.registry, options.onError);
    this.refused = new Counter({
      name: 'status_subscriptions_refused_total',
      help: 'Subscribe requests refused, by reason: invalid, address-rate, client-rate, page-full (docs/status-pages.md, "Subscriptions").',
      labelNames: ['reason'],
      registers: [options.registry],
    });
  }

  /** Which channels a page offers (none when subscriptions are not configured or the page is internal). */
  channels(page: StatusPage): { email: boolean; webhook: boolean } {
    const settings = this.options.settings();
    if (settings === null || !isPublic(page)) return { email: false, webhook: false };
    return { email: settings.email !== null, webhook: settings.webhooks };
  }

  private url(page: StatusPage, path = ''): string {
    return `${(this.options.settings() as SubscriptionSettings).publicUrl}/status/${page.slug}${path}`;
  }

  private link(page: StatusPage, id: string, token: string, action: 'confirm' | 'unsubscribe'): string {
    return this.url(page, `/subscription?id=${id}&token=${token}&action=${action}`);
  }

  /** Validates and records a subscribe request, then sends its confirmation. Throws a 4xx naming the problem. */
  async subscribe(slug: string, body: Record<string, unknown>, client: string): Promise<void> {
    const page = this.options.page(slug);
    const settings = this.options.settings();
    if (page === undefined || settings === null || !isPublic(page))
      throw refusal(404, `Status page ${slug} takes no subscribers`);
    const { channel, address } = this.address(page, body, settings);
    if (!this.limiter.take(`client\n${client}`, settings.perClientPerHour)) {
      this.refused.inc({ reason: 'client-rate' });
      const retry = this.limiter.retryAfterS();
      throw refusal(429, `Too many subscribe requests from ${client}; try again in ${retry} s`, {
        'Retry-After': String(retry),
      });
    }
    if (!this.limiter.take(`${channel}\n${address}`, settings.perAddressPerHour)) {
      this.refused.inc({ reason: 'address-rate' });
      const retry = this.limiter.retryAfterS();
      throw refusal(429, `Too many subscribe requests for this address; try again in ${retry} s`, {
        'Retry-After': String(retry),
      });
    }
    const max = page['max-subscribers'] ?? DEFAULT_MAX_SUBSCRIBERS;
    const made = await this.store.subscribe(page.slug, channel, address, max);
    if (made.outcome === 'page-full') {
      this.refused.inc({ reason: 'page-full' });
      throw refusal(409, `Status page ${page.slug} takes no more subscribers (max-subscribers: ${max})`);
    }
    // Confirmed already: answered as any other, so that the answer does not tell who subscribed.
    if (made.outcome === 'confirmed-already') return;
    const confirm = this.link(page, made.id, made.subscription.token, 'confirm');
    this.deliveries.send({
      channel,
      address,
      subject: `Confirm your subscription to ${page.title}`,
      text: `Someone, hopefully you, asked to be told of incidents and maintenance on ${page.title} (${this.url(page)}).\n\nTo confirm, open:\n${confirm}\n\nIf it was not you, ignore this message: nothing will be sent without it, and the request expires in a day.\n`,
      json: { type: 'confirm', page: this.pageJson(page), confirm_url: confirm },
    });
  }

  private address(page: StatusPage, body: Record<string, unknown>, settings: SubscriptionSettings) {
    const invalid = (field: string, problem: string) => {
      this.refused.inc({ reason: 'invalid' });
      return refusal(400, `Invalid subscription: ${field}: ${problem}`);
    };
    const { email, webhook } = body;
    if ((email === undefined) === (webhook === undefined))
      throw invalid('email', 'give exactly one of email and webhook');
    const channels = this.channels(page);
    if (email !== undefined) {
      if (!channels.email) throw invalid('email', 'this page takes no e-mail subscribers');
      if (typeof email !== 'string' || email.length > 254 || !EMAIL.test(email.trim()))
        throw invalid('email', 'must be an e-mail address');
      return { channel: 'email' as Channel, address: email.trim().toLowerCase() };
    }
    if (!channels.webhook) throw invalid('webhook', 'this page takes no webhook subscribers');
    let url: URL;
    try {
      url = new URL(String(webhook));
    } catch {
      throw invalid('webhook', 'must be an absolute https URL');
    }
    if (String(webhook).length > 2048 || (url.protocol !== 'https:' && url.protocol !== 'http:'))
      throw invalid('webhook', 'must be an absolute https URL');
    if (url.username !== '' || url.password !== '') throw invalid('webhook', 'must not hold a user name or password');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (
      !settings.allowPrivateWebhooks &&
      (host === 'localhost' || (/^[\d.:a-f]+$/i.test(host) && isPrivateAddress(host)))
    )
      throw invalid('webhook', `${host} is a private address`);
    return { channel: 'webhook' as Channel, address: url.href };
  }

  /** The subscription a link names; a 404 when none (unknown, used up, or of another page). */
  find(slug: string, link: LinkKey): Subscription {
    const one = this.store.find(slug, link);
    if (one === undefined) throw refusal(404, 'This link is not valid: the subscription does not exist (any more)');
    return one;
  }

  async confirm(slug: string, link: LinkKey): Promise<void> {
    const one = this.find(slug, link);
    if (one.confirmed) throw refusal(409, 'This subscription is confirmed already: the link was used');
    await this.store.confirm(link.id, one);
  }

  async unsubscribe(slug: string, link: LinkKey): Promise<void> {
    this.find(slug, link);
    await this.store.unsubscribe(link.id);
  }

  private pageJson(page: StatusPage) {
    return { slug: page.slug, title: page.title, url: this.url(page) };
  }

  /** Sends each confirmed subscriber of `page` its message, with its own unsubscribe link. */
  private fanOut(page: StatusPage, compose: (unsubscribe: string) => Omit<Message, 'channel' | 'address'>): void {
    if (this.options.settings() === null || !isPublic(page)) return;
    for (const [id, one] of this.store.confirmed(page.slug)) {
      const unsubscribe = this.link(page, id, one.token, 'unsubscribe');
      this.deliveries.send({
        channel: one.channel,
        address: one.address,
        ...compose(unsubscribe),
        unsubscribeUrl: unsubscribe,
      });
    }
  }

  /** An incident was created or updated: its pages' subscribers are told. */
  incident(incident: Incident): void {
    const latest = incident.updates.at(-1);
    if (latest === undefined || this.options.settings() === null) return;
    for (const slug of incident.pages) {
      const page = this.options.page(slug);
      if (page === undefined) continue;
      const words = STATUS_WORDS[latest.status];
      const url = `${this.url(page)}#incident-${incident.id}`;
      this.fanOut(page, (unsubscribe) => ({
        subject: `[${page.title}] ${incident.title}: ${words}`,
        text: `${incident.title}\n${words}: ${latest.message}\n\n${url}\n\nUnsubscribe: ${unsubscribe}\n`,
        json: {
          type: 'incident',
          page: this.pageJson(page),
          incident: {
            id: String(incident.id),
            title: incident.title,
            status: incident.status,
            impact: incident.impact,
            message: latest.message,
            updated_at: new Date(latest.atMs).toISOString(),
            url,
          },
          unsubscribe_url: unsubscribe,
        },
      }));
    }
  }

  /** The windows that started in (sinceMs, nowMs]: the subscribers of each public page showing a check they cover. */
  maintenanceStarted(
    windows: readonly MaintenanceWindow[],
    pages: readonly StatusPage[],
    sinceMs: number,
    nowMs: number,
  ): void {
    if (this.options.settings() === null) return;
    for (const window of windows) {
      const on = occurrence(window, nowMs);
      if (on === null || on.startMs > nowMs || on.startMs <= sinceMs) continue;
      for (const page of pages) {
        const covered = this.options.checks(page).filter((check) => covers(window, check.name, check.labels));
        if (covered.length === 0) continue;
        const until = new Date(on.endMs).toISOString();
        this.fanOut(page, (unsubscribe) => ({
          subject: `[${page.title}] Maintenance started: ${window.name}`,
          text: `${window.name} started at ${new Date(on.startMs).toISOString()}, until ${until}. It affects ${covered.map((check) => check.shown).join(', ')}.\n\n${this.url(page)}\n\nUnsubscribe: ${unsubscribe}\n`,
          json: {
            type: 'maintenance',
            page: this.pageJson(page),
            maintenance: {
              name: window.name,
              starts_at: new Date(on.startMs).toISOString(),
              ends_at: until,
              components: covered.map((check) => check.shown),
            },
            unsubscribe_url: unsubscribe,
          },
        }));
      }
    }
  }

  /** Watches for windows starting (every `TICK_MS`) and sweeps expired pending subscriptions (each hour). */
  start(windows: () => readonly MaintenanceWindow[], pages: () => readonly StatusPage[]): void {
    let since = this.now();
    let sweptAt = since;
    this.timer = setInterval(() => {
      const nowMs = this.now();
      this.maintenanceStarted(windows(), pages(), since, nowMs);
      since = nowMs;
      if (nowMs - sweptAt >= 3_600_000) {
        sweptAt = nowMs;
        this.store.sweep().catch(() => undefined);
      }
    }, TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
