/**
 * The subscription routes of a status page (docs/status-pages.md, "Subscriptions"), in the `/status` scope:
 * - `POST /status/<slug>/subscribe` `{email}` or `{webhook}` (JSON, or the page's form): 202, a confirmation sent;
 * - `GET /status/<slug>/subscription?id&token&action=confirm|unsubscribe`: a page with one button, because mail
 *   scanners open links (a GET changes nothing);
 * - `POST /status/<slug>/subscription` (that button, or a mail client's one-click unsubscribe, RFC 8058): does it.
 * Public as the page is (`http.public: [status-pages]`); refused with 4xx naming the problem.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../../../server/errors.ts';
import { messageError, operation } from '../../../server/openapi.ts';
import { escapeHtml as e } from '../escape.ts';
import type { StatusPage } from '../page.ts';
import type { Subscriptions } from './service.ts';

const tags = ['healthchecks'] as const;
const slugParams = Type.Object({ slug: Type.String({ description: 'the page' }) });
const MAX_FORM_BYTES = 4096;

type Fields = Record<string, unknown>;

function wantsHtml(request: FastifyRequest): boolean {
  return !/^application\/json\b/i.test(request.headers['content-type'] ?? '');
}

/** A small page in the page's colours-less style: the answer to a browser's form. */
function answerPage(page: StatusPage, title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><title>${e(title)} · ${e(page.title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}button{font:inherit;padding:.4rem 1rem}</style></head><body><h1>${e(title)}</h1>${body}<p><a href="/status/${e(page.slug)}">${e(page.title)}</a></p></body></html>`;
}

function link(fields: Fields): { id: string; token: string; action: string } {
  const text = (key: string) => (typeof fields[key] === 'string' ? (fields[key] as string) : '');
  return { id: text('id'), token: text('token'), action: text('action') };
}

export function subscriptionRoutes(
  scope: FastifyInstance,
  page: (slug: string) => StatusPage,
  subscriptions: Subscriptions,
  headers: (page: StatusPage) => Record<string, string>,
): void {
  scope.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: MAX_FORM_BYTES },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );
  const html = (reply: FastifyReply, one: StatusPage, status: number, title: string, body: string) =>
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .headers(headers(one))
      .send(answerPage(one, title, body));

  scope.post<{ Params: { slug: string }; Body: Fields }>(
    '/:slug/subscribe',
    {
      schema: operation({
        summary: 'Subscribe to a status page',
        description:
          "`{email}` or `{webhook}` (JSON or a form): a confirmation link is sent to it; once confirmed, it is told of incidents, their updates and maintenance starting. Limited per address and per client each hour, and to the page's `max-subscribers`.",
        tags,
        params: slugParams,
        responses: {
          202: messageError('a confirmation was sent'),
          400: messageError('neither or both of email and webhook, or not one'),
          404: messageError('no such public page, or subscriptions are not configured'),
          409: messageError('the page has its `max-subscribers`'),
          429: messageError('too many requests for this address or from this client this hour'),
        },
      }),
    },
    async (request, reply) => {
      const one = page(request.params.slug);
      const body = typeof request.body === 'object' && request.body !== null ? request.body : {};
      // A form's empty field is no field.
      const fields = Object.fromEntries(Object.entries(body).filter(([, value]) => value !== ''));
      await subscriptions.subscribe(one.slug, fields, request.ip);
      const said = 'A confirmation link was sent: nothing is sent to this address until it is opened.';
      if (wantsHtml(request)) return html(reply, one, 202, 'Check your inbox', `<p>${said}</p>`);
      return reply.code(202).send({ message: said });
    },
  );

  scope.get<{ Params: { slug: string }; Querystring: Fields }>(
    '/:slug/subscription',
    {
      schema: operation({
        summary: 'A subscription link',
        description:
          'The page of a confirmation or unsubscribe link: one button that posts it (a GET changes nothing).',
        tags,
        params: slugParams,
        responses: {
          200: { description: 'a page with the button', schema: Type.String(), contentTypes: ['text/html'] },
          404: messageError('the link names no subscription (any more)'),
        },
      }),
    },
    async (request, reply) => {
      const one = page(request.params.slug);
      const { id, token, action } = link(request.query);
      const subscription = subscriptions.find(one.slug, { id, token });
      const unsubscribe = action === 'unsubscribe' || subscription.confirmed;
      const verb = unsubscribe ? 'Unsubscribe' : 'Confirm the subscription';
      const form = `<form method="post" action="/status/${e(one.slug)}/subscription"><input type="hidden" name="id" value="${e(id)}"><input type="hidden" name="token" value="${e(token)}"><input type="hidden" name="action" value="${unsubscribe ? 'unsubscribe' : 'confirm'}"><button type="submit">${verb}</button></form>`;
      return html(reply, one, 200, verb, `<p>${e(subscription.address)} on ${e(one.title)}.</p>${form}`);
    },
  );

  scope.post<{ Params: { slug: string }; Querystring: Fields; Body: Fields }>(
    '/:slug/subscription',
    {
      schema: operation({
        summary: 'Confirm or end a subscription',
        description:
          "`id`, `token`, `action` (`confirm` or `unsubscribe`) from the form or the query string; a mail client's one-click unsubscribe (RFC 8058) posts to the link itself.",
        tags,
        params: slugParams,
        responses: {
          200: { description: 'done', schema: Type.String(), contentTypes: ['text/html'] },
          400: messageError('no such action'),
          404: messageError('the link names no subscription (any more)'),
          409: messageError('confirmed already: the link was used'),
        },
      }),
    },
    async (request, reply) => {
      const one = page(request.params.slug);
      const body = typeof request.body === 'object' && request.body !== null ? request.body : {};
      const given = link({ ...request.query, ...body });
      if (body['List-Unsubscribe'] === 'One-Click') given.action = 'unsubscribe';
      if (given.action === 'confirm') {
        await subscriptions.confirm(one.slug, given);
        return html(
          reply,
          one,
          200,
          'Subscribed',
          `<p>You will be told of incidents and maintenance on ${e(one.title)}.</p>`,
        );
      }
      if (given.action !== 'unsubscribe') throw new HttpError(400, 'action: must be confirm or unsubscribe');
      await subscriptions.unsubscribe(one.slug, given);
      return html(reply, one, 200, 'Unsubscribed', `<p>Nothing more will be sent from ${e(one.title)}.</p>`);
    },
  );
}
