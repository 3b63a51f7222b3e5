/**
 * The push and on-call presets (docs/alerting.md, "Presets"), each with its service's documented payload:
 * - `ntfy`: a JSON publish to the server's root, `{"topic", "title", "message", "priority", "tags", "actions"}`, with
 *   a bearer token for a protected topic;
 * - `gotify`: `POST <server>/message` with `X-Gotify-Key`, `{"title", "message", "priority"}`;
 * - `pushover`: `POST https://api.pushover.net/1/messages.json`, `{"token", "user", "title", "message", "priority",
 *   "url", "url_title"}`;
 * - `opsgenie`: the Alert API with `Authorization: GenieKey <key>`: a firing notification creates an alert
 *   (`POST /v2/alerts`, `{"message", "alias", "description", "priority", "source"}`), a resolved one closes it by its
 *   alias (`POST /v2/alerts/<alias>/close?identifierType=alias`), an `info` adds a note to it.
 */
import { Type } from '@sinclair/typebox';
import { capText, type Notification } from '../notification.ts';
import { joinUrl, postJson, type Preset } from './preset.ts';

const url = Type.String({ pattern: '^https?://' });

/** Firing is urgent; what tells of a recovery is not. */
const calm = (notification: Notification) => notification.kind !== 'firing';

const ntfy: Preset = {
  fields: {
    url: Type.Optional(url),
    topic: Type.String({ minLength: 1, maxLength: 64, pattern: '^[-_A-Za-z0-9]+$' }),
    token: Type.Optional(Type.String({ minLength: 1 })),
    priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
  },
  request: (entry, notification) =>
    postJson(
      (entry.url as string | undefined) ?? 'https://ntfy.sh',
      {
        topic: entry.topic,
        title: capText(notification.title, 250),
        message: capText(notification.text, 4096),
        priority: calm(notification) ? 3 : ((entry.priority as number | undefined) ?? 4),
        tags: [notification.kind === 'firing' ? 'rotating_light' : 'white_check_mark'],
        ...(notification.link
          ? { actions: [{ action: 'view', label: notification.link.label, url: notification.link.url }] }
          : {}),
      },
      entry.token !== undefined ? { authorization: `Bearer ${entry.token as string}` } : {},
    ),
};

const gotify: Preset = {
  fields: {
    url,
    token: Type.String({ minLength: 1 }),
    priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
  },
  request: (entry, notification) =>
    postJson(
      joinUrl(entry.url as string, '/message'),
      {
        title: capText(notification.title, 250),
        message: notification.text,
        priority: calm(notification) ? 4 : ((entry.priority as number | undefined) ?? 8),
      },
      { 'x-gotify-key': entry.token as string },
    ),
};

const pushover: Preset = {
  fields: {
    token: Type.String({ minLength: 1 }),
    user: Type.String({ minLength: 1 }),
    device: Type.Optional(Type.String({ minLength: 1 })),
    /** 2 (emergency) needs `retry` and `expire`, which an alert's repeats already are. */
    priority: Type.Optional(Type.Integer({ minimum: -2, maximum: 1 })),
    'api-url': Type.Optional(url),
  },
  request: (entry, notification) =>
    postJson((entry['api-url'] as string | undefined) ?? 'https://api.pushover.net/1/messages.json', {
      token: entry.token,
      user: entry.user,
      title: capText(notification.title, 250),
      message: capText(notification.text, 1024),
      priority: calm(notification) ? 0 : ((entry.priority as number | undefined) ?? 1),
      ...(entry.device !== undefined ? { device: entry.device } : {}),
      ...(notification.link ? { url: notification.link.url, url_title: notification.link.label } : {}),
    }),
};

const opsgenie: Preset = {
  fields: {
    'api-key': Type.String({ minLength: 1 }),
    /** `https://api.eu.opsgenie.com` for an account in the EU. */
    'api-url': Type.Optional(url),
    priority: Type.Optional(Type.Union(['P1', 'P2', 'P3', 'P4', 'P5'].map((level) => Type.Literal(level)))),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 20 })),
  },
  request: (entry, notification) => {
    const base = joinUrl((entry['api-url'] as string | undefined) ?? 'https://api.opsgenie.com', '/v2/alerts');
    const auth = { authorization: `GenieKey ${entry['api-key'] as string}` };
    const alias = capText(notification.key, 512);
    if (notification.kind === 'firing')
      return postJson(
        base,
        {
          message: capText(notification.title, 130),
          alias,
          description: capText(notification.text, 15_000),
          priority: (entry.priority as string | undefined) ?? 'P3',
          source: 'vigie',
          ...(entry.tags !== undefined ? { tags: entry.tags } : {}),
        },
        auth,
      );
    const action = notification.kind === 'resolved' ? 'close' : 'notes';
    return postJson(
      `${base}/${encodeURIComponent(alias)}/${action}?identifierType=alias`,
      { source: 'vigie', note: capText(notification.text, 25_000) },
      auth,
    );
  },
};

export const PUSH_PRESETS = { ntfy, gotify, pushover, opsgenie } as const;
