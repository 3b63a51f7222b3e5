/**
 * The healthcheck API as a fastify plugin handed its service, on both path forms: `/api/v1/...` (lists wrapped
 * as `{"result": [...]}`) and upstream's v1 short form `/healthcheck...`, `/result...` (lists as bare arrays).
 * Statuses and messages are docs/http-api.md's; errors answer `{"message": ...}`.
 *
 * Params, query and responses are declared with TypeBox (src/healthcheck/admission/api-schemas.ts, wire.ts); a
 * definition is checked once, by its kind's parse in the service (the config file's rules and wording), so the creation
 * routes only document their bodies (the kinds' own schemas) rather than have fastify check them a first time. Creation
 * has one static route per kind (`POST /healthcheck/http`, ..., `/healthcheck/bulk`), which find-my-way prefers to the
 * parametric `/healthcheck/:name` for POST only: `GET` and `DELETE /healthcheck/http` still reach a check named `http`,
 * as upstream allows, and `POST /healthcheck/<anything else>` is an unknown kind.
 */
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { holdsScope, principalOf } from '../../server/credentials.ts';
import type { ApiCaller } from '../admission/api-check-policy.ts';
import { registerPartScope, SHADOWS_PARAMETRIC } from '../../server/errors.ts';
import { NameParams, typed } from '../../server/typed-scope.ts';
import { invalidBody, messageError, type Operation, operation } from '../../server/openapi.ts';
import { ref } from '../../common/wire.ts';
import { addWireSchemas } from '../../server/wire-schemas.ts';
import { BulkBody, Created, History, HistoryQuery, listOf, Message, Uptime } from '../admission/api-schemas.ts';
import { CHECK_KINDS, type CheckJson, KIND_NAMES } from '../kinds/index.ts';
import { CheckDefinition, CheckResult, HEALTHCHECK_WIRE_TYPES } from '../wire.ts';
import { unknownKind } from '../admission/api-input.ts';
import { healthcheckErrors } from '../errors.ts';
import type { HealthcheckService } from '../service.ts';

export interface RouteOptions {
  healthcheckApi: boolean;
  resultApi: boolean;
}

export function healthcheckRoutes(service: HealthcheckService, options: RouteOptions): FastifyPluginAsync {
  return async (app) => {
    addWireSchemas(app, HEALTHCHECK_WIRE_TYPES);
    for (const [prefix, wrap] of [
      ['/api/v1', true],
      ['', false],
    ] as const) {
      if (options.healthcheckApi) {
        await registerPartScope(app, `${prefix}/healthcheck`, healthcheckErrors, (scope) =>
          registerHealthcheckRoutes(scope, service, wrap),
        );
      }
      if (options.resultApi)
        await registerPartScope(app, `${prefix}/result`, healthcheckErrors, (scope) =>
          registerResultRoutes(scope, service, wrap),
        );
    }
  };
}

/**
 * The OpenAPI documentation of a route (src/server/openapi.ts): the answers' bodies are the routes' own
 * `response` schemas, the errors `{"message": ...}`. `wrap` tells the form: the short one is said in the summary.
 */
function documented(
  wrap: boolean,
  summary: string,
  responses: Operation['responses'],
  description?: string,
  body?: TSchema,
) {
  const form = wrap ? undefined : "The short form (Cabourotte's v1 path) of the same route under `/api/v1`.";
  return operation({
    summary: wrap ? summary : `${summary} (short form)`,
    description: [description, form].filter(Boolean).join(' ') || undefined,
    tags: ['healthchecks'],
    responses,
    ...(body ? { body: { schema: body } } : {}),
  });
}

/** Said of the list routes: their answer's shape is the only difference between the two forms. */
const listForm = (wrap: boolean) =>
  wrap ? 'The short form answers a bare array.' : 'A bare array, where `/api/v1` answers `{"result": [...]}`.';

const unknownCheck = messageError('unknown check: `Healthcheck <name> not found`');
const owned = messageError(
  'a check of the config file or of a discovery source, which the API may not change: `healthcheck <name> comes from ...`',
);
const invalidDefinition = invalidBody(
  'invalid definition: `Invalid healthcheck configuration: <field>: <problem>` (docs/checks.md "Validation messages"), every problem in `errors`',
);
const commandRefused = messageError(
  'command checks refused by `healthchecks.command-checks-api`, or to a credential without the scope `admin` (docs/hardening.md)',
);
const networkRefused = messageError('network checks refused by `healthchecks.checks-api` (docs/hardening.md)');
const bulkRefused = messageError(
  'command or network checks refused by `healthchecks.command-checks-api` or `healthchecks.checks-api`, or command checks to a credential without the scope `admin` (docs/hardening.md); nothing is applied',
);

function registerHealthcheckRoutes(scope: FastifyInstance, service: HealthcheckService, wrap: boolean): void {
  const app = typed(scope);
  // Only JSON bodies: anything else is a 415 naming the expected type (fastify would take text/plain as is).
  app.removeContentTypeParser(['text/plain']);
  app.get(
    '',
    {
      schema: {
        response: { 200: listOf(ref(CheckDefinition), wrap) },
        ...documented(
          wrap,
          'List the check definitions',
          { 200: 'every check definition, sorted by name' },
          listForm(wrap),
        ),
      },
    },
    async (request) => list(service.list().map(shownTo(request)), wrap),
  );

  for (const kind of KIND_NAMES) {
    const config = SHADOWS_PARAMETRIC;
    const doc = documented(
      wrap,
      `Create or replace a ${kind} check`,
      {
        201: 'created or replaced (`Healthcheck successfully added`); for `"one-off": true`, the run succeeded and `result` is its result',
        400: invalidDefinition,
        403: kind === 'command' ? commandRefused : kind === 'heartbeat' ? undefined : networkRefused,
        409: owned,
        500: 'for `"one-off": true`, the run failed (`result` is its result); or the check cannot be prepared (a TLS file unreadable)',
      },
      `Body: one ${kind} check definition, with the fields of its kind (docs/checks.md). A check with the name of an API check replaces it; \`"one-off": true\` runs it once at once and answers its result instead.`,
      CHECK_KINDS[kind].schema,
    );
    app.post(
      `/${kind}`,
      { config, schema: { response: { 201: Created, 500: Created }, ...doc } },
      async (request, reply) => {
        const outcome = await service.create(kind, request.body, callerOf(request));
        if (!outcome.oneOff) return reply.code(201).send({ message: 'Healthcheck successfully added' });
        return reply.code(outcome.success ? 201 : 500).send({ message: outcome.message, result: outcome.result });
      },
    );
  }
  const bulkDoc = documented(
    wrap,
    'Replace the whole set of API checks',
    {
      201: 'applied (`Healthchecks successfully added`)',
      400: invalidBody(
        'an invalid body or check, a one-off check, a name used twice: `Invalid healthcheck configuration: ...`, every problem of every check in `errors`; nothing is applied',
      ),
      403: bulkRefused,
      409: owned,
      500: messageError('a check cannot be prepared; nothing is applied'),
    },
    `Body: any of the lists ${KIND_NAMES.map((kind) => `\`${kind}-checks\``).join(', ')}, as in the config file. API checks missing from it are deleted, unchanged ones keep running; atomically.`,
    BulkBody,
  );
  app.post(
    '/bulk',
    { config: SHADOWS_PARAMETRIC, schema: { response: { 201: Message }, ...bulkDoc } },
    async (request, reply) => {
      await service.bulk(request.body, callerOf(request));
      return reply.code(201).send({ message: 'Healthchecks successfully added' });
    },
  );
  const unknownKindDoc = documented(
    wrap,
    'Create a check of an unknown kind',
    { 404: messageError(`always: \`Unknown healthcheck kind "<kind>": expected ${KIND_NAMES.join(', ')} or bulk\``) },
    'The kinds have their own routes (`/healthcheck/http`, ...); any other last segment is an unknown kind.',
  );
  app.post('/:name', { schema: { params: NameParams, ...unknownKindDoc } }, async (request) => {
    throw unknownKind(request.params.name);
  });

  const getDoc = documented(wrap, 'Get a check definition', {
    200: 'the definition as Cabourotte lists it, with `source` and `kind`; it can be posted back as is',
    404: unknownCheck,
  });
  app.get(
    '/:name',
    { schema: { params: NameParams, response: { 200: ref(CheckDefinition) }, ...getDoc } },
    async (request) => shownTo(request)(service.get(request.params.name)),
  );

  const deleteDoc = documented(wrap, 'Delete an API check', {
    200: 'deleted, with its result, history and uptime (`Successfully deleted healthcheck <name>`)',
    404: unknownCheck,
    409: owned,
  });
  app.delete(
    '/:name',
    { schema: { params: NameParams, response: { 200: Message }, ...deleteDoc } },
    async (request) => {
      const { name } = request.params;
      await service.delete(name);
      return { message: `Successfully deleted healthcheck ${name}` };
    },
  );
}

function registerResultRoutes(scope: FastifyInstance, service: HealthcheckService, wrap: boolean): void {
  const app = typed(scope);
  const listDoc = documented(
    wrap,
    'The latest result of every check',
    { 200: 'the latest results, sorted by name' },
    listForm(wrap),
  );
  app.get('', { schema: { response: { 200: listOf(ref(CheckResult), wrap) }, ...listDoc } }, async () =>
    list(service.results(), wrap),
  );

  const noResult = messageError('unknown check, or no run finished yet: `Result not found for healthcheck <name>`');
  const resultDoc = documented(wrap, 'The latest result of a check', { 200: 'the latest result', 404: noResult });
  app.get(
    '/:name',
    { schema: { params: NameParams, response: { 200: ref(CheckResult) }, ...resultDoc } },
    async (request) => service.result(request.params.name),
  );

  const historyDoc = documented(
    wrap,
    'The last raw results of a check',
    {
      200: 'the last results, newest first',
      400: messageError('`limit` not a positive integer: `Invalid limit "<text>": expected a positive integer`'),
      404: unknownCheck,
    },
    '`limit` defaults to, and is capped at, `healthchecks.history-size`.',
  );
  app.get(
    '/:name/history',
    { schema: { params: NameParams, querystring: HistoryQuery, response: { 200: History }, ...historyDoc } },
    async (request) => {
      const { limit } = request.query;
      const max = service.historySize;
      return {
        result: service.history(
          request.params.name,
          limit === undefined || limit === '' ? max : Math.min(Number(limit), max),
        ),
      };
    },
  );

  const uptimeDoc = documented(wrap, 'The uptime of a check over 1 h, 24 h, 7 d and 30 d', {
    200: 'runs, successes, ratio and durations per window (hourly buckets)',
    404: unknownCheck,
  });
  app.get(
    '/:name/uptime',
    { schema: { params: NameParams, response: { 200: Uptime }, ...uptimeDoc } },
    async (request) => {
      const { name } = request.params;
      return { name, uptime: service.uptime(name) };
    },
  );
}

/**
 * A listed definition as `request` may read it: a heartbeat check's `token-sha256` is an unsalted digest that a
 * reader could match against tokens guessed offline, so only `admin` sees it (and can post the listing back whole).
 */
function shownTo(request: FastifyRequest): (json: CheckJson) => CheckJson {
  if (holdsScope(request, 'admin')) return (json) => json;
  return (json) => {
    if (json['token-sha256'] !== undefined) delete json['token-sha256'];
    return json;
  };
}

/** Who asks, for what the route's scope does not decide alone (a command check needs `admin`). */
function callerOf(request: FastifyRequest): ApiCaller {
  return { principal: principalOf(request), admin: holdsScope(request, 'admin') };
}

function list<T>(items: T[], wrap: boolean): T[] | { result: T[] } {
  return wrap ? { result: items } : items;
}
