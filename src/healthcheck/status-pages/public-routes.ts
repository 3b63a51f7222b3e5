/**
 * The readers' routes of status pages (docs/status-pages.md): `/status/<slug>` (HTML), its `summary.json`, its
 * `feed.atom`, and the images it serves (`logo`, `favicon`). `read`, or nothing when `http.public` lists
 * `status-pages`; a page of `visibility: internal` answers a `read` credential only (a 401 without one, as the
 * dashboard does). Served to anyone then, so never sniffed, and the CSP forbids everything but the inline style, the
 * page's own images and the form posting to its subscribe route.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { compressAnswers } from '../../server/compression.ts';
import { authenticatedWith, holdsScope } from '../../server/credentials.ts';
import { HttpError } from '../../server/errors.ts';
import { messageError, operation } from '../../server/openapi.ts';
import { HealthcheckError } from '../errors.ts';
import { atomFeed } from './atom.ts';
import { renderPage } from './html.ts';
import { isPublic, type StatusPage } from './page.ts';
import type { RenderCache } from './render-cache.ts';
import type { StatusPages } from './service.ts';
import { summaryJson } from './summary.ts';
import type { Subscriptions } from './subscriptions/service.ts';
import { subscriptionRoutes } from './subscriptions/routes.ts';

export interface PublicOptions {
  /** The pages' subscribers (subscriptions/): the page's form, and the routes of subscribe links. */
  subscriptions: Subscriptions;
}

const tags = ['healthchecks'] as const;
const slugParams = Type.Object({ slug: Type.String({ description: 'the page' }) });

/** The origins of a page's images given as URLs, which its CSP must let the browser load. */
function imageOrigins(page: StatusPage): string {
  const origins = new Set<string>(["'self'"]);
  for (const url of [page.logo, page.favicon]) if (url?.startsWith('https://')) origins.add(new URL(url).origin);
  return [...origins].join(' ');
}

function headers(page: StatusPage): Record<string, string> {
  return {
    'x-content-type-options': 'nosniff',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; img-src ${imageOrigins(page)}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`,
    'referrer-policy': 'no-referrer',
  };
}

/** The page's address: `/` of a host name it claims, else `/status/<slug>` of the request's host. */
function pageUrl(request: FastifyRequest, page: StatusPage): string {
  const authority = request.host.toLowerCase();
  const host = authority.replace(/:\d+$/, '');
  const base = `${request.protocol}://${authority}`;
  return page.hostnames?.includes(host) ? base : `${base}/status/${page.slug}`;
}

/**
 * The page, when this request may read it, and whether it may see the checks' failure messages: an internal page
 * needs `read` (and shows them to its readers); a public one shows them with `show-messages` or to a credential.
 */
function readable(status: StatusPages, request: FastifyRequest, slug: string): { page: StatusPage; messages: boolean } {
  const page = status.page(slug);
  if (isPublic(page)) return { page, messages: page['show-messages'] === true || authenticatedWith(request, 'read') };
  if (!holdsScope(request, 'read'))
    throw new HttpError(401, `Status page ${slug} is internal: it needs a credential of scope "read"`, {
      'WWW-Authenticate': 'Basic realm="vigie", charset="UTF-8"',
    });
  return { page, messages: true };
}

function send(reply: FastifyReply, page: StatusPage, type: string, body: string | Buffer): FastifyReply {
  return reply.type(type).header('cache-control', 'no-cache').headers(headers(page)).send(body);
}

export async function publicRoutes(
  scope: FastifyInstance,
  status: StatusPages,
  cache: RenderCache,
  options: PublicOptions,
): Promise<void> {
  await compressAnswers(scope);
  const notFound = messageError('`Status page <slug> not found`');
  const doc = (summary: string, description: string, contentType: string) =>
    operation({
      summary,
      description: `${description} Public with \`http.public: [status-pages]\` (docs/http-api.md "Credentials"), unless the page is internal.`,
      tags,
      params: slugParams,
      responses: {
        200: { description: summary, schema: Type.String(), contentTypes: [contentType] },
        401: messageError('an internal page, without a `read` credential'),
        404: notFound,
      },
    });
  scope.get<{ Params: { slug: string } }>(
    '/:slug',
    {
      schema: doc(
        'A status page',
        'HTML without JavaScript, light and dark, reloading itself every minute (docs/status-pages.md). The failure messages of its checks are shown to a `read` credential, or to anyone with `show-messages: true`.',
        'text/html',
      ),
    },
    async (request, reply) => {
      const { page, messages } = readable(status, request, request.params.slug);
      const subscribe = options.subscriptions.channels(page).email;
      // Kept apart: what a credential sees is never served to a reader without one.
      const key = `${page.slug}\n${messages}\n${subscribe}`;
      const body = cache.get('page', key, () => renderPage(status.view(page.slug, messages), subscribe));
      return send(reply, page, 'text/html; charset=utf-8', body);
    },
  );
  scope.get<{ Params: { slug: string } }>(
    '/:slug/summary.json',
    {
      schema: doc(
        "A status page's summary.json",
        "In the shape and meaning of Atlassian Statuspage's v2 `summary.json`; also at `/api/v2/summary.json` of the page's `hostnames`.",
        'application/json',
      ),
    },
    async (request, reply) => {
      const { page } = readable(status, request, request.params.slug);
      const url = pageUrl(request, page);
      const body = cache.get('summary.json', url, () => JSON.stringify(summaryJson(status.view(page.slug), url)));
      return send(reply, page, 'application/json; charset=utf-8', body);
    },
  );
  scope.get<{ Params: { slug: string } }>(
    '/:slug/feed.atom',
    {
      schema: doc(
        "A status page's incidents as an Atom feed",
        'The newest 50 incidents, most recently updated first.',
        'application/atom+xml',
      ),
    },
    async (request, reply) => {
      const { page } = readable(status, request, request.params.slug);
      const url = pageUrl(request, page);
      const body = cache.get('feed.atom', url, () => {
        const { incidents } = status.feed(page.slug);
        return atomFeed(page, incidents, url, Date.now());
      });
      return send(reply, page, 'application/atom+xml; charset=utf-8', body);
    },
  );
  subscriptionRoutes(scope, (slug) => status.page(slug), options.subscriptions, headers);
  for (const field of ['logo', 'favicon'] as const) {
    scope.get<{ Params: { slug: string } }>(
      `/:slug/${field}`,
      {
        schema: operation({
          summary: `A status page's ${field}`,
          description: `The image file its \`${field}\` names, as read when the page was written (PNG, JPEG, GIF, WebP or ICO).`,
          tags,
          params: slugParams,
          responses: {
            200: { description: 'the image', schema: Type.String(), contentTypes: ['image/png'] },
            404: messageError(`no such page, or it names no ${field} file`),
          },
        }),
      },
      async (request, reply) => {
        const { page } = readable(status, request, request.params.slug);
        const image = status.pages.assets(page.slug)[field];
        if (image === undefined)
          throw new HealthcheckError('not-found', `Status page ${page.slug} has no ${field} file`);
        return reply
          .type(image.type)
          .header('cache-control', 'public, max-age=300')
          .headers({ ...headers(page), 'content-security-policy': "default-src 'none'; sandbox" })
          .send(image.bytes);
      },
    );
  }
}
