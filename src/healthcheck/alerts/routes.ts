/**
 * The routes of the alerts (docs/alerting.md, "Acknowledging"; docs/http-api.md), with the healthcheck API:
 * - `GET /api/v1/alerts?state=firing|acknowledged|suppressed|resolving&check=<name>` (scope `read`);
 * - `POST /api/v1/alerts/<id>/ack` `{comment?}` and `POST .../unack` (scope `write`, audited);
 * - the acknowledge link of a notification, `GET /api/v1/alerts/<id>/ack?token=`: a page with one button, whose
 *   `&confirm=1` acknowledges (a link preview of a chat service opens the page, never acknowledges). Its token is an
 *   HMAC of that alert, good until it resolves, and opens nothing else.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ownTokenRoute, principalOf } from '../../server/credentials.ts';
import { registerPartRoutes } from '../../server/errors.ts';
import { json, messageError, operation } from '../../server/openapi.ts';
import { sha256Hex } from '../../server/tokens.ts';
import { HealthcheckError } from '../errors.ts';
import { healthcheckErrors } from '../errors.ts';
import type { AlertApi } from './alert-api.ts';
import { ALERT_STATES } from './alert-wire.ts';

const idParams = Type.Object({ id: Type.String({ description: 'the alert id (16 hex digits)' }) });
const unknownAlert = messageError('`Alert <id> not found (unknown, or resolved)`');

export function alertRoutes(api: AlertApi): FastifyPluginAsync {
  return async (root) => {
    await registerPartRoutes(root, healthcheckErrors, (app) => {
      app.get<{ Querystring: { state?: string; check?: string } }>(
        '/api/v1/alerts',
        {
          schema: operation({
            summary: 'The open alerts',
            description:
              'Firing, acknowledged, suppressed (held back by `depends-on`) and resolving (recovery not told yet) alerts, oldest first, with how many notifications each made.',
            tags: ['healthchecks'],
            querystring: Type.Object({
              state: Type.Optional(Type.String({ description: ALERT_STATES.join(', ') })),
              check: Type.Optional(Type.String({ description: "only this check's alert" })),
            }),
            responses: {
              200: json('the alerts', Type.Object({ result: Type.Array(Type.Unknown()) })),
              400: messageError('`Invalid alerts query: state: ...`'),
            },
          }),
        },
        async (request) => ({ result: api.list(request.query.state, request.query.check) }),
      );
      const token = ownTokenRoute((request) => {
        const expected = api.linkToken((request.params as { id: string }).id);
        return expected === undefined ? undefined : sha256Hex(expected);
      }, 'ack-link');
      app.post<{ Params: { id: string } }>(
        '/api/v1/alerts/:id/ack',
        {
          config: token,
          schema: operation({
            summary: 'Acknowledge an alert',
            description: 'It is told no more until it resolves (its recovery is told). Body: `{comment?}`.',
            tags: ['healthchecks'],
            params: idParams,
            responses: {
              200: json('acknowledged', Type.Unknown()),
              404: unknownAlert,
              409: messageError('`Alert <id> is resolved`'),
            },
          }),
        },
        async (request) => ({
          message: 'Alert acknowledged',
          result: await api.ack(request.params.id, principalOf(request), request.body),
        }),
      );
      app.get<{ Params: { id: string }; Querystring: { token?: string; confirm?: string } }>(
        '/api/v1/alerts/:id/ack',
        {
          config: token,
          schema: operation({
            summary: 'The acknowledge link of a notification',
            description: "A page with one button; `confirm=1` acknowledges. Needs the link's `token`.",
            tags: ['healthchecks'],
            params: idParams,
            responses: {
              200: { description: 'an HTML page' },
              403: messageError("not this alert's link"),
              404: unknownAlert,
            },
          }),
        },
        async (request, reply) => {
          const { id } = request.params;
          checkLink(api, request, id);
          reply.type('text/html; charset=utf-8');
          if (request.query.confirm !== '1') {
            const href = `?token=${encodeURIComponent(request.query.token ?? '')}&confirm=1`;
            return page(`Acknowledge alert ${id}?`, `<a href="${href}"><button>Acknowledge</button></a>`);
          }
          const alert = await api.ack(id, principalOf(request), {});
          return page(`Alert acknowledged`, `${escapeHtml(alert.check)}: no more reminders until it resolves.`);
        },
      );
      app.post<{ Params: { id: string } }>(
        '/api/v1/alerts/:id/unack',
        {
          schema: operation({
            summary: 'Unacknowledge an alert',
            description: 'Its repeats go on.',
            tags: ['healthchecks'],
            params: idParams,
            responses: { 200: json('unacknowledged', Type.Unknown()), 404: unknownAlert },
          }),
        },
        async (request) => ({ message: 'Alert unacknowledged', result: await api.unack(request.params.id) }),
      );
    });
  };
}

/** Without credentials in the config the hook checks no token: the page does, so that a link acts for its alert
 *  only. */
function checkLink(api: AlertApi, request: FastifyRequest, id: string): void {
  const given = (request.query as { token?: string }).token;
  const expected = api.linkToken(id);
  if (expected === undefined) throw new HealthcheckError('not-found', `Alert ${id} not found (unknown, or resolved)`);
  if (request.principal === `ack-link:${id}`) return;
  if (given !== expected) throw new HealthcheckError('forbidden', 'This link does not acknowledge this alert');
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${body}</p></body></html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
