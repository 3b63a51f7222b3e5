/**
 * The status pages' routes (docs/http-api.md, "Status pages and incidents"):
 * - `/api/v1/status-page` (create or replace, list, get, delete) and `/api/v1/incident` (create, list, get, append
 *   an update, delete): changes need `write`, and the audit log records them (src/server/scopes.ts);
 * - `/status/<slug>` (HTML), `/status/<slug>/feed.atom`, `/status/<slug>/summary.json`: `read`, or nothing when
 *   `http.public` lists `status-pages`. Served to anyone then, so never sniffed, and the CSP forbids everything but
 *   the inline style.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { registerPartScope } from '../../server/errors.ts';
import { invalidBody, json, messageError, operation } from '../../server/openapi.ts';
import { HealthcheckError } from '../errors.ts';
import { healthcheckErrors } from '../errors.ts';
import type { RenderCache } from './render-cache.ts';
import { IncidentInput, incidentToJson, UpdateInput } from './incidents.ts';
import { StatusPageSchema } from './page.ts';
import type { ListedPage as ListedPageDefinition } from './pages.ts';
import { type PublicOptions, publicRoutes } from './public-routes.ts';
import type { StatusPages } from './service.ts';
import { Incident, IncidentList } from './wire.ts';

const tags = ['healthchecks'] as const;
const slugParams = Type.Object({ slug: Type.String({ description: 'the page' }) });
const idParams = Type.Object({ id: Type.String({ description: 'the incident (an integer)' }) });

const ListedPage = Type.Composite(
  [
    Type.Omit(StatusPageSchema, ['source', 'shows']),
    Type.Object({
      source: Type.Union([Type.Literal('configuration'), Type.Literal('api')]),
      shows: Type.Array(Type.Object({ group: Type.String(), checks: Type.Array(Type.String()) }), {
        description:
          'the checks each group shows now, by name: a group by labels takes every check that has them, new ones too',
      }),
    }),
  ],
  { title: 'StatusPage' },
);

/** A page as the API lists it: its definition, where it comes from, and the checks it shows now. */
function listed(status: StatusPages, page: ListedPageDefinition) {
  const members = status.members(page);
  return { ...page, shows: page.groups.map((group, i) => ({ group: group.name, checks: members[i] ?? [] })) };
}
const Message = Type.Object({ message: Type.String() });

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
          'Served at `/status/<slug>` (docs/status-pages.md). Durable before the answer; the same on every node of a cluster.',
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
      const page = await status.pages.put(request.body);
      return reply
        .code(201)
        .send({ message: `Status page ${page.slug} successfully added`, result: listed(status, page) });
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
      result: status.pages.list().map((page) => listed(status, page)),
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
    async (request) => listed(status, status.pages.get(request.params.slug)),
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
      await status.pages.delete(request.params.slug);
      return { message: `Successfully deleted status page ${request.params.slug}` };
    },
  );
}

function incidentRoutes(scope: FastifyInstance, status: StatusPages, options: PublicOptions): void {
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
      const incident = await status.incidents.create(request.body);
      options.subscriptions.incident(incident);
      const internal =
        incident.pages.length === 0 ? ' (internal: it names no status page, so only the dashboard shows it)' : '';
      return reply
        .code(201)
        .send({ message: `Incident ${incident.id} successfully created${internal}`, result: incidentToJson(incident) });
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
      const incident = await status.incidents.update(incidentId(request.params.id), request.body);
      options.subscriptions.incident(incident);
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
      await status.incidents.delete(id);
      return { message: `Successfully deleted incident ${id}` };
    },
  );
}

export function statusPageRoutes(status: StatusPages, cache: RenderCache, options: PublicOptions): FastifyPluginAsync {
  return async (app) => {
    // A change through the API shows at once on the public answers.
    app.addHook('onResponse', async (request, reply) => {
      if (request.method !== 'GET' && reply.statusCode < 300) cache.invalidate();
    });
    await registerPartScope(app, '/api/v1/status-page', healthcheckErrors, (scope) => pageRoutes(scope, status));
    await registerPartScope(app, '/api/v1/incident', healthcheckErrors, (scope) =>
      incidentRoutes(scope, status, options),
    );
    await registerPartScope(app, '/status', healthcheckErrors, (scope) => publicRoutes(scope, status, cache, options));
  };
}
