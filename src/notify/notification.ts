/**
 * What a notifier sends (docs/alerting.md, "Notifiers"): one message for people, whatever produced it (an alert
 * or a group of alerts of the checks, src/healthcheck/alerts/; later the subscriptions of a status page). Each
 * notifier turns it into its service's request: Slack's text, Opsgenie's alert, an e-mail, a webhook's JSON.
 */

/**
 * `firing` opens what a receiver tracks (PagerDuty's trigger, Opsgenie's create), `resolved` closes it; `info`
 * only tells (a part of a group came back while the rest is still down: an Opsgenie note, nothing for PagerDuty).
 */
type NotificationKind = 'firing' | 'resolved' | 'info';

export interface Notification {
  readonly kind: NotificationKind;
  /** One line: a chat message's title, an e-mail's subject, Opsgenie's message. */
  readonly title: string;
  /** The message for people, plain text (its first line is the title). */
  readonly text: string;
  /** The same for everything told of one alert or group, firing to resolved: PagerDuty's `dedup_key`, Opsgenie's
   *  `alias`. */
  readonly key: string;
  /** Unique to this notification and the same across its retries: Matrix's transaction id (a retry posts once). */
  readonly id: string;
  /** The notification as an object: a webhook's default body (as JSON), PagerDuty's `custom_details`. */
  readonly data: Readonly<Record<string, unknown>>;
  /** What the templates of a notifier (a webhook's `body`, Slack's `text`, an e-mail's `subject`) see. */
  readonly view: object;
  /** A link for people (the alert's acknowledgement page), shown as a button where the service has them. */
  readonly link?: { readonly url: string; readonly label: string };
}

/**
 * How a send ended, the `outcome` label of `notifications_sent_total`: `sent` (the receiver accepted it),
 * `rejected` (it refused it: a 4xx, an SMTP 5xx; retrying would not help), `failed` (every retry of a transient
 * failure failed, or timed out), `dropped` (the notifier's `max-pending` was reached), `skipped` (nothing to send for
 * that kind: PagerDuty has no note for an `info`).
 */
export type SendOutcome = 'sent' | 'rejected' | 'failed' | 'dropped' | 'skipped';

/** Caps a text at `max` characters (a service refuses longer ones), with an ellipsis. */
export function capText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
