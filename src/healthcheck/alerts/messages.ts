/**
 * The notification of an alert or a group of alerts (docs/alerting.md, "What a notification holds"): one object,
 * `status` (`firing` or `resolved`), `group` (its label values), `checks` (each: `name`, `state`, `previous`,
 * `message`, `labels`, `since`, `ack_url`), `ack_url` (the first check's); the templates see those fields and
 * `check`, `state`, `message` of the first check, `count` and `summary`. The default templates differ for firing and
 * resolved; `alerts.templates` replaces either. A webhook's default body is the object as JSON.
 */
import { randomUUID } from 'node:crypto';
import type { Notification } from '../../notify/notification.ts';
import { Template } from '../../notify/templates.ts';
import type { AlertRecord } from './records.ts';

const DEFAULT_FIRING = `{{#single}}🔴 {{check}} is {{state}}: {{message}}{{/single}}{{^single}}🔴 {{count}} checks are down{{#summary}} ({{summary}}){{/summary}}{{/single}}
{{^single}}{{#checks}}- {{name}} is {{state}} since {{since}}: {{message}}
{{/checks}}{{/single}}{{#single}}Since {{since}}.
{{/single}}{{#ack_url}}Acknowledge: {{ack_url}}{{/ack_url}}`;

const DEFAULT_RESOLVED = `{{#single}}✅ {{check}} is up again{{#duration}} after {{duration}}{{/duration}}{{/single}}{{^single}}✅ {{count}} checks are up again{{#summary}} ({{summary}}){{/summary}}{{/single}}
{{^single}}{{#checks}}- {{name}} is {{state}} (was down since {{since}})
{{/checks}}{{/single}}`;

const templates = new Map<string, Template>();

/** Parsed once per text (the config checked it parses). */
function template(source: string): Template {
  let compiled = templates.get(source);
  if (compiled === undefined) {
    compiled = new Template(source, 'none');
    templates.set(source, compiled);
  }
  return compiled;
}

export interface MessageInput {
  status: 'firing' | 'resolved';
  /** The group's label values ({} for an alert on its own). */
  group: Readonly<Record<string, string>>;
  alerts: readonly AlertRecord[];
  /** The current state of each check (the record holds the state it fired with). */
  stateOf: (check: string) => string;
  ackUrl: (alert: AlertRecord) => string | null;
  templates: { firing?: string; resolved?: string };
  nowMs: number;
  /** The same for everything told of the group. */
  key: string;
}

export function buildNotification(input: MessageInput): Notification {
  const { status, alerts } = input;
  const checks = alerts.map((alert) => ({
    name: alert.check,
    state: status === 'resolved' ? input.stateOf(alert.check) : alert.state,
    previous: status === 'resolved' ? alert.state : alert.previous,
    message: alert.message,
    labels: alert.labels,
    since: new Date(alert.sinceMs).toISOString(),
    ack_url: status === 'firing' ? input.ackUrl(alert) : null,
  }));
  const first = checks[0];
  const data = {
    status,
    group: input.group,
    checks,
    ack_url: first?.ack_url ?? null,
  };
  const firstAlert = alerts[0];
  const view = {
    ...data,
    single: checks.length === 1,
    count: checks.length,
    check: first?.name ?? '',
    state: first?.state ?? '',
    message: first?.message ?? '',
    since: first?.since ?? '',
    summary: Object.entries(input.group)
      .map(([key, value]) => `${key}=${value}`)
      .join(', '),
    duration: status === 'resolved' && firstAlert ? humanDuration(input.nowMs - firstAlert.sinceMs) : '',
  };
  const source =
    status === 'firing' ? (input.templates.firing ?? DEFAULT_FIRING) : (input.templates.resolved ?? DEFAULT_RESOLVED);
  const text = template(source).render(view).trim();
  const title = text.split('\n', 1)[0] ?? '';
  const link = status === 'firing' && first?.ack_url ? { url: first.ack_url, label: 'Acknowledge' } : undefined;
  return {
    kind: status,
    title,
    text,
    key: input.key,
    id: randomUUID(),
    data,
    view,
    ...(link ? { link } : {}),
  };
}

/** `3h5m`, `42s`: how long an outage lasted, for people. */
function humanDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const parts: string[] = [];
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (d > 0) parts.push(`${d}d`);
  if (h > 0) parts.push(`${h}h`);
  if (m > 0 && d === 0) parts.push(`${m}m`);
  if ((rest > 0 || parts.length === 0) && d === 0 && h === 0) parts.push(`${rest}s`);
  return parts.join('');
}
