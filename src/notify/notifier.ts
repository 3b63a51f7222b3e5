/**
 * A notifier (docs/alerting.md, "Notifiers"): `send(notification)` resolves with how it ended, never throws, and is
 * bounded every way: a timeout per attempt (`timeout`), `retries` retries of a transient failure with exponential
 * backoff from `retry-backoff` (p-retry), 4 sends at a time, and at most `max-pending` notifications waiting or in
 * flight (beyond, dropped). Every outcome is counted (`notifications_sent_total{notifier,outcome}`). `Notifiers`
 * holds them by name and applies a reload: an unchanged notifier keeps running, a changed one is replaced.
 */
import { isDeepStrictEqual } from 'node:util';
import pRetry from 'p-retry';
import { DeliveryError, HttpSender } from './delivery.ts';
import { EmailSender } from './email.ts';
import type { Notification, SendOutcome } from './notification.ts';
import { PagerDutySender } from './pagerduty.ts';
import { type NotifierSettings, PRESETS, type SenderSettings } from './settings.ts';
import { escapeText } from './templates.ts';
import { SlackSender, WebhookSender } from './webhook.ts';

export type { Notification, SendOutcome } from './notification.ts';

/** Sends at a time per notifier: receivers rate-limit, and a storm is one notification per group anyway. */
const MAX_IN_FLIGHT = 4;
const MAX_BACKOFF_MS = 30_000;
const CLOSE_TIMEOUT_MS = 5_000;

export interface NotifierObserver {
  /** How a send ended. */
  outcome(notifier: string, outcome: SendOutcome): void;
  /** One failed attempt (it may be retried): for the logs. */
  failed(notifier: string, error: Error): void;
}

/** One attempt at a notification: resolves once the receiver accepted it, false when there is nothing to send. */
type Deliver = (notification: Notification, signal: AbortSignal) => Promise<boolean>;

export class Notifier {
  private pending = 0;
  private inFlight = 0;
  private readonly queue: (() => void)[] = [];
  private readonly abort = new AbortController();
  private readonly deliver: Deliver;
  private readonly closeSenders: () => Promise<void>;

  constructor(
    readonly settings: NotifierSettings,
    private readonly observer: NotifierObserver,
  ) {
    [this.deliver, this.closeSenders] = delivery(settings.sender, settings.timeoutMs);
  }

  get name(): string {
    return this.settings.name;
  }

  async send(notification: Notification): Promise<SendOutcome> {
    let outcome: SendOutcome;
    if (this.pending >= this.settings.maxPending || this.abort.signal.aborted) outcome = 'dropped';
    else {
      this.pending++;
      try {
        await this.slot();
        try {
          outcome = await this.attempts(notification);
        } finally {
          this.release();
        }
      } finally {
        this.pending--;
      }
    }
    this.observer.outcome(this.name, outcome);
    return outcome;
  }

  /** Lets the sends in flight finish (at most 5 s), then gives up what is left. */
  async close(): Promise<void> {
    const deadline = setTimeout(() => this.abort.abort(), CLOSE_TIMEOUT_MS).unref();
    while (this.pending > 0 && !this.abort.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 20));
    clearTimeout(deadline);
    this.abort.abort();
    for (const wake of this.queue.splice(0)) wake();
    await this.closeSenders();
  }

  private async attempts(notification: Notification): Promise<SendOutcome> {
    const { signal } = this.abort;
    try {
      const sent = await pRetry(() => this.deliver(notification, signal), {
        retries: this.settings.retries,
        minTimeout: this.settings.retryBackoffMs,
        maxTimeout: MAX_BACKOFF_MS,
        signal,
        unref: true,
        onFailedAttempt: ({ error }) => this.observer.failed(this.name, error),
        shouldRetry: ({ error }) => !(error instanceof DeliveryError && !error.retryable),
      });
      return sent ? 'sent' : 'skipped';
    } catch (error) {
      return error instanceof DeliveryError && !error.retryable ? 'rejected' : 'failed';
    }
  }

  private slot(): Promise<void> {
    if (this.inFlight < MAX_IN_FLIGHT) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.queue.push(resolve)).then(() => {
      this.inFlight++;
    });
  }

  private release(): void {
    this.inFlight--;
    this.queue.shift()?.();
  }
}

/** How each type sends one notification, and how its sender closes. */
function delivery(sender: SenderSettings, timeoutMs: number): [Deliver, () => Promise<void>] {
  switch (sender.type) {
    case 'webhook': {
      const webhook = new WebhookSender(sender.webhook);
      const send: Deliver = (n, signal) => webhook.send(n.view, signal, JSON.stringify(n.data)).then(() => true);
      return [send, () => webhook.close()];
    }
    case 'slack': {
      const slack = new SlackSender(sender.slack);
      const send: Deliver = (n, signal) => slack.send(n.view, signal, escapeText('slack', n.text)).then(() => true);
      return [send, () => slack.close()];
    }
    case 'email': {
      const email = new EmailSender(sender.email);
      return [(n) => email.send(n.view).then(() => true), () => email.close()];
    }
    case 'pagerduty': {
      const pagerduty = new PagerDutySender(sender.pagerduty);
      const send: Deliver = async (n, signal) => {
        // The Events API has no note: a partial recovery of a group leaves the incident open, untold.
        if (n.kind === 'info') return false;
        await pagerduty.send(pagerDutyEvent(n, sender.pagerduty.severity), signal);
        return true;
      };
      return [send, () => pagerduty.close()];
    }
    case 'preset': {
      const preset = PRESETS[sender.preset];
      if (preset === undefined) throw new Error(`unknown notifier preset ${sender.preset}`);
      const http = new HttpSender();
      const send: Deliver = async (n, signal) => {
        const request = preset.request(sender.entry, n);
        if (request === null) return false;
        const target = { url: request.url, headers: {}, timeoutMs };
        await http.send(target, request.method, request.headers, request.body, signal);
        return true;
      };
      return [send, () => http.close()];
    }
  }
}

function pagerDutyEvent(n: Notification, severity: string): Record<string, unknown> {
  if (n.kind === 'resolved') return { event_action: 'resolve', dedup_key: n.key };
  return {
    event_action: 'trigger',
    dedup_key: n.key,
    payload: { summary: n.title.slice(0, 1024), source: 'vigie', severity, custom_details: n.data },
    ...(n.link ? { links: [{ href: n.link.url, text: n.link.label }] } : {}),
  };
}

/** The notifiers by name (`notifiers:`), applied again at each reload. */
export class Notifiers {
  private readonly notifiers = new Map<string, Notifier>();

  constructor(
    settings: Readonly<Record<string, NotifierSettings>>,
    private readonly observer: NotifierObserver,
  ) {
    for (const [name, one] of Object.entries(settings)) this.notifiers.set(name, new Notifier(one, observer));
  }

  get(name: string): Notifier | undefined {
    return this.notifiers.get(name);
  }

  has(name: string): boolean {
    return this.notifiers.has(name);
  }

  names(): string[] {
    return [...this.notifiers.keys()];
  }

  /** A reload: unchanged notifiers keep running; changed and removed ones finish their sends in the background. */
  apply(next: Readonly<Record<string, NotifierSettings>>): void {
    const leaving: Notifier[] = [];
    for (const [name, settings] of Object.entries(next)) {
      const current = this.notifiers.get(name);
      if (current !== undefined && isDeepStrictEqual(current.settings, settings)) continue;
      if (current !== undefined) leaving.push(current);
      this.notifiers.set(name, new Notifier(settings, this.observer));
    }
    for (const [name, notifier] of this.notifiers)
      if (!(name in next)) {
        this.notifiers.delete(name);
        leaving.push(notifier);
      }
    for (const notifier of leaving) void notifier.close();
  }

  async close(): Promise<void> {
    await Promise.all([...this.notifiers.values()].map((notifier) => notifier.close()));
  }
}
