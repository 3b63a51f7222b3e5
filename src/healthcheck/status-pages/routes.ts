/**
 * The status pages' routes (docs/http-api.md, "Status pages and incidents"):
 * - `/api/v1/status-page` (create or replace, list, get, delete) and `/api/v1/incident` (create, list, get, append
 *   an update, delete): changes need `write`, and the audit log records them (src/server/scopes.ts);
 * - `/status/<slug>` (HTML), `/status/<slug>/feed.atom`, `/status/<slug>/summary.json`: `read`, or nothing when
 *   `http.public` lists `status-pages`. Served to anyone then, so never sniffed, and the CSP forbids everything but
 *   the inline style.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { compressAnswers } from '../../server/compression.ts';
import { authenticatedWith } from '../../server/credentials.ts';
import { registerPartScope } from '../../server/errors.ts';
import { invalidBody, json, messageError, operation } from '../../server/openapi.ts';
import { HealthcheckError } from '../api-input.ts';
import { healthcheckErrors } from '../routes.ts';
import { atomFeed } from './atom.ts';
import { renderPage } from './html.ts';
import type { RenderCache } from './render-cache.ts';
import { IncidentInput, incidentToJson, UpdateInput } from './incidents.ts';
import { StatusPageSchema } from './page.ts';
import type { StatusPages } from './service.ts';
import { summaryJson } from './summary.ts';
import { Incident, IncidentList } from './wire.ts';

const PUBLIC_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};
const tags = ['healthchecks'] as const;
const slugParams = Type.Object({ slug: Type.String({ description: 'the page' }) });
const idParams = Type.Object({ id: Type.String({ description: 'the incident (an integer)' }) });

const ListedPage = Type.Composite(
  [
    Type.Omit(StatusPageSchema, ['source']),
    Type.Object({ source: Type.Union([Type.Literal('configuration'), Type.Literal('api')]) }),
  ],
  { title: 'StatusPage' },
);
const Message = Type.Object({ message: Type.String() });

function pageUrl(request: FastifyRequest, slug: string): string {
  return `${request.protocol}://${request.host}/status/${slug}`;
}

function incidentId(raw: string): number {
  const id = Number(raw);
  if (!/^[1-9]\d{0,15}$/.test(raw) || !Number.isSafeInteger(id))
    throw new HealthcheckError('not-found', `Incident ${raw} not found`);
  return id;
}

function pageRoutes(scope: FastifyInstance, status: StatusPages): void {
  scope.removeContentTypeParser(['text/plain']);
  const notFound = messageError('`Status page <slug> not found`');
  scope.post(
    '',
    {
      schema: operation({
        summary: 'Create or replace a status page',
        description:
          'Served at `/status/<slug>` (docs/status-pages.md). Committed to SQLite before the answer; per node in a cluster.',
        tags,
        body: { schema: StatusPageSchema },
        responses: {
          201: json('created (or replaced)', Type.Object({ message: Type.String(), result: ListedPage })),
          400: invalidBody('`Invalid status page: <field>: <problem>`, or past a cap (`healthchecks.max-status-*`)'),
          409: messageError('a page of the configuration file has that slug'),
        },
      }),
    },
    async (request, reply) => {
      const page = status.pages.put(request.body);
      return reply.code(201).send({ message: `Status page ${page.slug} successfully added`, result: page });
    },
  );
  scope.get(
    '',
    {
      schema: operation({
        summary: 'List the status pages',
        description: 'Those of the config file and of the API, by slug.',
        tags,
        responses: { 200: json('the pages', Type.Object({ result: Type.Array(ListedPage) })) },
      }),
    },
    async () => ({
      result: status.pages.list(),
    }),
  );
  scope.get<{ Params: { slug: string } }>(
    '/:slug',
    {
      schema: operation({
        summary: 'Get a status page',
        tags,
        params: slugParams,
        responses: { 200: json('the page', ListedPage), 404: notFound },
      }),
    },
    async (request) => status.pages.get(request.params.slug),
  );
  scope.delete<{ Params: { slug: string } }>(
    '/:slug',
    {
      schema: operation({
        summary: 'Delete a status page',
        tags,
        params: slugParams,
        responses: {
          200: json('deleted', Message),
          404: notFound,
          409: messageError('a page of the configuration file: change it there'),
        },
      }),
    },
    async (request) => {
      status.pages.delete(request.params.slug);
      return { message: `Successfully deleted status page ${request.params.slug}` };
    },
  );
}

function incidentRoutes(scope: FastifyInstance, status: StatusPages): void {
  scope.removeContentTypeParser(['text/plain']);
  const notFound = messageError('`Incident <id> not found`');
  const invalid = invalidBody(
    '`Invalid incident: <field>: <problem>`, or past a cap (`healthchecks.max-incidents`, `max-incident-updates`, `max-status-*-bytes`)',
  );
  const created = json('the incident', Type.Object({ message: Type.String(), result: Incident }));
  scope.post(
    '',
    {
      schema: operation({
        summary: 'Create an incident',
        description:
          'Its first update is `status` and `message`; shown on the pages it names and on every page showing one of its checks.',
        tags,
        body: { schema: IncidentInput },
        responses: { 201: created, 400: invalid },
      }),
    },
    async (request, reply) => {
      const incident = status.incidents.create(request.body);
      return reply
        .code(201)
        .send({ message: `Incident ${incident.id} successfully created`, result: incidentToJson(incident) });
    },
  );
  const ListQuery = Type.Object({
    page: Type.Optional(Type.String({ description: 'only the incidents shown on this page' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, description: 'at most this many (100)' })),
  });
  scope.get<{ Querystring: { page?: string; limit?: string } }>(
    '',
    {
      schema: operation({
        summary: 'List the incidents',
        description: 'Newest first.',
        tags,
        querystring: ListQuery,
        responses: {
          200: json('the incidents', IncidentList),
          400: messageError('`Invalid limit ...`'),
          404: messageError('`Status page <slug> not found`'),
        },
      }),
    },
    async (request) => {
      const { page, limit = '100' } = request.query;
      if (!/^[1-9]\d{0,8}$/.test(limit))
        throw new HealthcheckError('invalid', `Invalid limit ${JSON.stringify(limit)}: expected a positive integer`);
      return { result: status.listIncidents(Number(limit), page).map(incidentToJson) };
    },
  );
  scope.get<{ Params: { id: string } }>(
    '/:id',
    {
      schema: operation({
        summary: 'Get an incident',
        tags,
        params: idParams,
        responses: { 200: json('the incident', Incident), 404: notFound },
      }),
    },
    async (request) => incidentToJson(status.incidents.get(incidentId(request.params.id))),
  );
  scope.post<{ Params: { id: string } }>(
    '/:id/update',
    {
      schema: operation({
        summary: 'Append an update to an incident',
        description: 'The incident takes its status; `resolved` sets `resolved-at`, another status reopens it.',
        tags,
        params: idParams,
        body: { schema: UpdateInput },
        responses: { 201: created, 400: invalid, 404: notFound },
      }),
    },
    async (request, reply) => {
      const incident = status.incidents.update(incidentId(request.params.id), request.body);
      return reply
        .code(201)
        .send({ message: `Incident ${incident.id} successfully updated`, result: incidentToJson(incident) });
    },
  );
  scope.delete<{ Params: { id: string } }>(
    '/:id',
    {
      schema: operation({
        summary: 'Delete an incident',
        description: 'With its timeline.',
        tags,
        params: idParams,
        responses: { 200: json('deleted', Message), 404: notFound },
      }),
    },
    async (request) => {
      const id = incidentId(request.params.id);
      status.incidents.delete(id);
      return { message: `Successfully deleted incident ${id}` };
    },
  );
}

function send(reply: FastifyReply, type: string, body: string | Buffer): FastifyReply {
  return reply.type(type).header('cache-control', 'no-cache').headers(PUBLIC_HEADERS).send(body);
}

async function publicRoutes(scope: FastifyInstance, status: StatusPages, cache: RenderCache): Promise<void> {
  await compressAnswers(scope);
  const notFound = messageError('`Status page <slug> not found`');
  const doc = (summary: string, description: string, contentType: string) =>
    operation({
      summary,
      description: `${description} Public with \`http.public: [status-pages]\` (docs/http-api.md "Credentials").`,
      tags,
      params: slugParams,
      responses: { 200: { description: summary, schema: Type.String(), contentTypes: [contentType] }, 404: notFound },
    });
  // The page names no host; summary.json and the feed hold absolute URLs, so they are kept per host.
  scope.get<{ Params: { slug: string } }>(
    '/:slug',
    {
      schema: doc(
        'A status page',
        'HTML without JavaScript, light and dark (docs/status-pages.md). The failure messages of its checks are shown to a `read` credential, or to anyone with `show-messages: true`.',
        'text/html',
      ),
    },
    async (request, reply) => {
      const { slug } = request.params;
      const messages = status.showsMessages(slug) || authenticatedWith(request, 'read');
      // Kept apart: what a credential sees is never served to a reader without one.
      const key = messages ? `${slug}\nmessages` : slug;
      return send(
        reply,
        'text/html; charset=utf-8',
        cache.get('page', key, () => renderPage(status.view(slug, messages))),
      );
    },
  );
  scope.get<{ Params: { slug: string } }>(
    '/:slug/summary.json',
    {
      schema: doc(
        "A status page's summary.json",
        "In the shape of Atlassian Statuspage's `summary.json`.",
        'application/json',
      ),
    },
    async (request, reply) => {
      const url = pageUrl(request, request.params.slug);
      return send(
        reply,
        'application/json; charset=utf-8',
        cache.get('summary.json', url, () => JSON.stringify(summaryJson(status.view(request.params.slug), url))),
      );
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
      const url = pageUrl(request, request.params.slug);
      return send(
        reply,
        'application/atom+xml; charset=utf-8',
        cache.get('feed.atom', url, () => {
          const { page, incidents } = status.feed(request.params.slug);
          return atomFeed(page, incidents, url, Date.now());
        }),
      );
    },
  );
}

export function statusPageRoutes(status: StatusPages, cache: RenderCache): FastifyPluginAsync {
  return async (app) => {
    // A change through the API shows at once on the public answers.
    app.addHook('onResponse', async (request, reply) => {
      if (request.method !== 'GET' && reply.statusCode < 300) cache.invalidate();
    });
    await registerPartScope(app, '/api/v1/status-page', healthcheckErrors, (scope) => pageRoutes(scope, status));
    await registerPartScope(app, '/api/v1/incident', healthcheckErrors, (scope) => incidentRoutes(scope, status));
    await registerPartScope(app, '/status', healthcheckErrors, (scope) => publicRoutes(scope, status, cache));
  };
}
