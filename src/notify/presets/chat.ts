/**
 * The chat presets (docs/alerting.md, "Presets"), each with its service's documented payload:
 * - `discord`: an execute-webhook POST, `{"content"}` (at most 2,000 characters), mentions turned off so that a
 *   message cannot ping `@everyone`;
 * - `teams`: a Workflows ("When a Teams webhook request is received") POST of an Adaptive Card in a `message`
 *   (Microsoft 365 connectors are retired; Workflows take Adaptive Cards only), with an "Acknowledge" button;
 * - `mattermost` and `google-chat`: their incoming webhooks' `{"text"}` (Mattermost also `channel`, `username`);
 * - `telegram`: the Bot API's `sendMessage`, `{"chat_id", "text"}` (at most 4,096 characters);
 * - `matrix`: the client-server API's `PUT /_matrix/client/v3/rooms/<room>/send/m.room.message/<txn>` with an access
 *   token, `{"msgtype": "m.text", "body"}`; the transaction id is the notification's, so a retry posts once.
 */
import { Type } from '@sinclair/typebox';
import { capText } from '../notification.ts';
import { joinUrl, postJson, type Preset } from './preset.ts';

const url = Type.String({ pattern: '^https?://' });
const name = Type.String({ minLength: 1, maxLength: 80 });

const discord: Preset = {
  fields: { url, username: Type.Optional(name) },
  request: (entry, notification) =>
    postJson(entry.url as string, {
      content: capText(notification.text, 2000),
      ...(entry.username !== undefined ? { username: entry.username } : {}),
      allowed_mentions: { parse: [] },
    }),
};

const teams: Preset = {
  fields: { url },
  request: (entry, notification) => {
    const rest = notification.text.slice(notification.title.length).trim();
    const card = {
      $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
      type: 'AdaptiveCard',
      version: '1.4',
      body: [
        { type: 'TextBlock', text: notification.title, weight: 'Bolder', size: 'Medium', wrap: true },
        ...(rest === '' ? [] : [{ type: 'TextBlock', text: capText(rest, 20_000), wrap: true }]),
      ],
      ...(notification.link
        ? { actions: [{ type: 'Action.OpenUrl', title: notification.link.label, url: notification.link.url }] }
        : {}),
    };
    return postJson(entry.url as string, {
      type: 'message',
      attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }],
    });
  },
};

const mattermost: Preset = {
  fields: { url, channel: Type.Optional(Type.String({ minLength: 1 })), username: Type.Optional(name) },
  request: (entry, notification) =>
    postJson(entry.url as string, {
      text: capText(notification.text, 16_000),
      ...(entry.channel !== undefined ? { channel: entry.channel } : {}),
      ...(entry.username !== undefined ? { username: entry.username } : {}),
    }),
};

const googleChat: Preset = {
  fields: { url },
  request: (entry, notification) => postJson(entry.url as string, { text: capText(notification.text, 4096) }),
};

const telegram: Preset = {
  fields: {
    'bot-token': Type.String({ minLength: 1, pattern: '^[^/?#\\s]+$' }),
    'chat-id': Type.Union([Type.String({ minLength: 1 }), Type.Integer()]),
    'api-url': Type.Optional(url),
  },
  request: (entry, notification) =>
    postJson(
      joinUrl(
        (entry['api-url'] as string | undefined) ?? 'https://api.telegram.org',
        `/bot${entry['bot-token'] as string}/sendMessage`,
      ),
      {
        chat_id: entry['chat-id'],
        text: capText(notification.text, 4096),
        disable_web_page_preview: true,
      },
    ),
};

const matrix: Preset = {
  fields: {
    homeserver: url,
    'room-id': Type.String({ minLength: 1 }),
    'access-token': Type.String({ minLength: 1 }),
  },
  request: (entry, notification) => {
    const room = encodeURIComponent(entry['room-id'] as string);
    const path = `/_matrix/client/v3/rooms/${room}/send/m.room.message/${encodeURIComponent(notification.id)}`;
    const request = postJson(
      joinUrl(entry.homeserver as string, path),
      { msgtype: 'm.text', body: notification.text },
      { authorization: `Bearer ${entry['access-token'] as string}` },
    );
    return { ...request, method: 'PUT' };
  },
};

export const CHAT_PRESETS = {
  discord,
  teams,
  mattermost,
  'google-chat': googleChat,
  telegram,
  matrix,
} as const;
