/**
 * The notifiers (docs/alerting.md, "Notifiers"): each preset sends its service's documented request to a local
 * receiver standing in for the service (the SaaS cannot run here), built from one alert's notification; a firing
 * and a resolved notification read differently, and a policy's templates replace either.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildNotification } from '../../src/healthcheck/alerts/messages.ts';
import type { AlertRecord } from '../../src/healthcheck/alerts/records.ts';
import { Notifier } from '../../src/notify/notifier.ts';
import { resolveNotifiers } from '../../src/notify/settings.ts';
import { type HttpTarget, type RecordedRequest, startHttpTarget } from '../helpers/targets.ts';

const alert: AlertRecord = {
  id: '0123456789abcdef',
  check: 'shop',
  sinceMs: Date.parse('2026-12-07T03:00:00Z'),
  state: 'down',
  previous: 'pending',
  message: 'HTTP request failed: status 500',
  labels: { team: 'web' },
  sent: 0,
};

const notification = (status: 'firing' | 'resolved', templates = {}) =>
  buildNotification({
    status,
    group: {},
    alerts: [alert],
    stateOf: () => 'up',
    ackUrl: () => 'https://vigie.example.com/api/v1/alerts/0123456789abcdef/ack?token=t',
    templates,
    nowMs: alert.sinceMs + 750_000,
    key: 'check\nshop\nops',
  });

describe('notifications', () => {
  it('reads differently firing and resolved, and takes the templates given', () => {
    const firing = notification('firing');
    expect(firing.title).toBe('🔴 shop is down: HTTP request failed: status 500');
    expect(firing.text).toContain('Acknowledge: https://vigie.example.com/api/v1/alerts/0123456789abcdef/ack?token=t');
    expect(firing.data).toMatchObject({ status: 'firing', checks: [{ name: 'shop', state: 'down' }] });
    const resolved = notification('resolved');
    expect(resolved.title).toBe('✅ shop is up again after 12m30s');
    expect(resolved.data).toMatchObject({ status: 'resolved', checks: [{ state: 'up', previous: 'down' }] });
    const custom = notification('resolved', { resolved: '{{check}} back ({{checks.0.labels.team}})' });
    expect(custom.text).toBe('shop back (web)');
  });
});

describe('each preset sends its documented request', () => {
  let receiver: HttpTarget;
  beforeAll(async () => {
    receiver = await startHttpTarget();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  async function sent(
    entry: Record<string, unknown>,
    status: 'firing' | 'resolved' = 'firing',
  ): Promise<RecordedRequest> {
    const before = receiver.requests.length;
    const settings = resolveNotifiers({ one: { ...entry, retries: 0 } }, null).one;
    const notifier = new Notifier(settings!, { outcome: () => undefined, failed: () => undefined });
    expect(await notifier.send(notification(status))).toBe('sent');
    await notifier.close();
    expect(receiver.requests.length).toBe(before + 1);
    return receiver.requests[before] as RecordedRequest;
  }
  const body = (request: RecordedRequest) => JSON.parse(request.body) as Record<string, unknown>;

  it('discord, mattermost, google-chat, slack: their text', async () => {
    const discord = await sent({ type: 'discord', url: `${receiver.origin}/discord` });
    expect(body(discord)).toMatchObject({
      content: expect.stringContaining('shop is down'),
      allowed_mentions: { parse: [] },
    });
    const mattermost = await sent({ type: 'mattermost', url: `${receiver.origin}/mm`, channel: 'ops' });
    expect(body(mattermost)).toMatchObject({ text: expect.stringContaining('shop is down'), channel: 'ops' });
    const chat = await sent({ type: 'google-chat', url: `${receiver.origin}/chat` });
    expect(body(chat)).toEqual({ text: expect.stringContaining('shop is down') });
    const slack = await sent({ type: 'slack', url: `${receiver.origin}/slack` });
    expect(body(slack)).toEqual({ text: expect.stringContaining('shop is down') });
  });

  it('teams: an Adaptive Card with an Acknowledge button', async () => {
    const teams = body(await sent({ type: 'teams', url: `${receiver.origin}/teams` }));
    expect(teams).toMatchObject({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: { type: 'AdaptiveCard', actions: [{ type: 'Action.OpenUrl', title: 'Acknowledge' }] },
        },
      ],
    });
  });

  it('telegram and matrix: their APIs, with token and room in the path', async () => {
    const telegram = await sent({
      type: 'telegram',
      'bot-token': '123:abc',
      'chat-id': -42,
      'api-url': receiver.origin,
    });
    expect(telegram.path).toBe('/bot123:abc/sendMessage');
    expect(body(telegram)).toMatchObject({ chat_id: -42, text: expect.stringContaining('shop is down') });
    const matrix = await sent({
      type: 'matrix',
      homeserver: receiver.origin,
      'room-id': '!r:example.org',
      'access-token': 'tok',
    });
    expect(matrix.method).toBe('PUT');
    expect(matrix.path).toMatch(/^\/_matrix\/client\/v3\/rooms\/!r%3Aexample.org\/send\/m.room.message\/[\w-]+$/);
    expect(matrix.headers.authorization).toBe('Bearer tok');
    expect(body(matrix)).toMatchObject({ msgtype: 'm.text', body: expect.stringContaining('shop is down') });
  });

  it('ntfy, gotify, pushover: title, message, priority (lower for a recovery)', async () => {
    const ntfy = await sent({ type: 'ntfy', url: receiver.origin, topic: 'alerts', token: 'tk' });
    expect(ntfy.headers.authorization).toBe('Bearer tk');
    expect(body(ntfy)).toMatchObject({
      topic: 'alerts',
      title: '🔴 shop is down: HTTP request failed: status 500',
      priority: 4,
    });
    const gotify = await sent({ type: 'gotify', url: receiver.origin, token: 'gk' }, 'resolved');
    expect(gotify.path).toBe('/message');
    expect(gotify.headers['x-gotify-key']).toBe('gk');
    expect(body(gotify)).toMatchObject({ title: expect.stringContaining('up again'), priority: 4 });
    const pushover = await sent({
      type: 'pushover',
      token: 'app',
      user: 'usr',
      'api-url': `${receiver.origin}/1/messages.json`,
    });
    expect(body(pushover)).toMatchObject({ token: 'app', user: 'usr', priority: 1, url_title: 'Acknowledge' });
  });

  it('opsgenie: creates the alert by its alias, closes it on recovery; pagerduty: trigger, resolve', async () => {
    const create = await sent({ type: 'opsgenie', 'api-key': 'key', 'api-url': receiver.origin });
    expect(create.path).toBe('/v2/alerts');
    expect(create.headers.authorization).toBe('GenieKey key');
    expect(body(create)).toMatchObject({ alias: 'check\nshop\nops', source: 'vigie', priority: 'P3' });
    const close = await sent({ type: 'opsgenie', 'api-key': 'key', 'api-url': receiver.origin }, 'resolved');
    expect(close.url).toBe('/v2/alerts/check%0Ashop%0Aops/close?identifierType=alias');
    const trigger = await sent({ type: 'pagerduty', 'service-key': 'sk', url: `${receiver.origin}/v2/enqueue` });
    expect(body(trigger)).toMatchObject({
      event_action: 'trigger',
      dedup_key: 'check\nshop\nops',
      payload: { severity: 'critical' },
    });
    const resolve = await sent(
      { type: 'pagerduty', 'service-key': 'sk', url: `${receiver.origin}/v2/enqueue` },
      'resolved',
    );
    expect(body(resolve)).toMatchObject({ event_action: 'resolve', dedup_key: 'check\nshop\nops' });
  });

  it('webhook: the notification as JSON', async () => {
    const hook = body(await sent({ type: 'webhook', url: `${receiver.origin}/hook` }));
    expect(hook).toMatchObject({
      status: 'firing',
      group: {},
      checks: [{ name: 'shop', state: 'down', labels: { team: 'web' } }],
    });
    expect(hook.ack_url).toMatch(/ack\?token=t$/);
  });
});
