/**
 * The healthcheck API as a fastify plugin handed its service, on both path forms: `/api/v1/...` (lists wrapped
 * as `{"result": [...]}`) and upstream's v1 short form `/healthcheck...`, `/result...` (lists as bare arrays).
 * Statuses and messages are docs/http-api.md's; errors answer `{"message": ...}`.
 *
 * Params, query, bodies and responses are declared with TypeBox (src/healthcheck/api-schemas.ts) and checked by
 * TypeBox's compiler, so a body is refused on exactly the rules the config file applies. Creation has one static
 * route per kind (`POST /healthcheck/http`, ..., `/healthcheck/bulk`), which find-my-way prefers to the
 * parametric `/healthcheck/:name` for POST only: `GET` and `DELETE /healthcheck/http` still reach a check named
 * `http`, as upstream allows, and `POST /healthcheck/<anything else>` is an unknown kind.
 */
import { type TypeBoxTypeProvider, TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { type ErrorAnswer, type PartErrors, registerPartScope, SHADOWS_PARAMETRIC } from '../server/errors.ts';
import { BulkBody, CheckListing, CheckResultSchema, Created, History, HistoryQuery, listOf, Message, NameParams, Uptime } from './api-schemas.ts';
import { CHECK_KINDS, KIND_NAMES, type KindName } from './kinds/index.ts';
import { HealthcheckError, type HealthcheckErrorReason, type HealthcheckService, parseApiCheck, parseBulk, unknownKind } from './service.ts';

export interface RouteOptions {
  healthcheckApi: boolean;
  resultApi: boolean;
  /** Null when the API may create command checks, else why not (src/healthcheck/command-policy.ts); read per
   *  request so that a reload applies. */
  commandChecksRefusal: () => string | null;
}

const STATUS: Record<HealthcheckErrorReason, number> = {
  invalid: 400,
  forbidden: 403,
  'unknown-kind': 404,
  'not-found': 404,
  'result-not-found': 404,
  'start-failed': 500,
  owned: 409,
};

/** Which definition a creation route takes: a kind, or the bulk lists. */
interface CreateRouteConfig {
  definition: KindName | 'bulk';
}

/** Cabourotte's body shape; the service's refusals carry their reason, mapped to a status here. */
export const healthcheckErrors: PartErrors = {
  body: (message) => ({ message }),
  fromDomainError: (error) => (error instanceof HealthcheckError ? { statusCode: STATUS[error.reason], message: error.message } : undefined),
  fromValidationError: (error, request): ErrorAnswer => {
    if (error.validationContext === 'querystring') {
      return { statusCode: 400, message: `Invalid limit ${JSON.stringify((request.query as { limit?: unknown }).limit)}: expected a positive integer` };
    }
    const definition = (request.routeOptions.config as Partial<CreateRouteConfig>).definition;
    if (error.validationContext === 'body' && definition !== undefined) {
      // The compiler's errors carry a path and a terse message only: the kind's own parse words the refusal
      // the way the config file does (the field, the problem, "did you mean").
      try {
        if (definition === 'bulk') parseBulk(request.body);
        else parseApiCheck(definition, request.body);
      } catch (refusal) {
        if (refusal instanceof HealthcheckError) return { statusCode: STATUS[refusal.reason], message: refusal.message };
        throw refusal;
      }
    }
    return { statusCode: 400, message: `Invalid healthcheck configuration: ${error.message}` };
  },
};

export function healthcheckRoutes(service: HealthcheckService, options: RouteOptions): FastifyPluginAsync {
  return async (app) => {
    for (const [prefix, wrap] of [
      ['/api/v1', true],
      ['', false],
    ] as const) {
      if (options.healthcheckApi) {
        await registerPartScope(app, `${prefix}/healthcheck`, healthcheckErrors, (scope) => registerHealthcheckRoutes(scope, service, wrap, options.commandChecksRefusal));
      }
      if (options.resultApi) await registerPartScope(app, `${prefix}/result`, healthcheckErrors, (scope) => registerResultRoutes(scope, service, wrap));
    }
  };
}

function typed(scope: FastifyInstance) {
  scope.setValidatorCompiler(TypeBoxValidatorCompiler);
  return scope.withTypeProvider<TypeBoxTypeProvider>();
}

function registerHealthcheckRoutes(scope: FastifyInstance, service: HealthcheckService, wrap: boolean, commandChecksRefusal: () => string | null): void {
  const app = typed(scope);
  // Only JSON bodies: anything else is a 415 naming the expected type (fastify would take text/plain as is).
  app.removeContentTypeParser(['text/plain']);
  app.get('', { schema: { response: { 200: listOf(CheckListing, wrap) } } }, async () => list(service.list(), wrap));

  for (const kind of KIND_NAMES) {
    const config: CreateRouteConfig & typeof SHADOWS_PARAMETRIC = { definition: kind, ...SHADOWS_PARAMETRIC };
    app.post(`/${kind}`, { config, schema: { body: CHECK_KINDS[kind].schema, response: { 201: Created, 500: Created } } }, async (request, reply) => {
      if (kind === 'command') refuseCommandChecks(commandChecksRefusal);
      const outcome = await service.create(kind, request.body);
      if (!outcome.oneOff) return reply.code(201).send({ message: 'Healthcheck successfully added' });
      return reply.code(outcome.success ? 201 : 500).send({ message: outcome.message, result: outcome.result });
    });
  }
  const bulkConfig: CreateRouteConfig & typeof SHADOWS_PARAMETRIC = { definition: 'bulk', ...SHADOWS_PARAMETRIC };
  app.post('/bulk', { config: bulkConfig, schema: { body: BulkBody, response: { 201: Message } } }, async (request, reply) => {
    const commands = (request.body as { 'command-checks'?: unknown[] | null })['command-checks'];
    if (commands !== undefined && commands !== null && commands.length > 0) refuseCommandChecks(commandChecksRefusal);
    await service.bulk(request.body);
    return reply.code(201).send({ message: 'Healthchecks successfully added' });
  });
  app.post('/:name', { schema: { params: NameParams } }, async (request) => {
    throw unknownKind(request.params.name);
  });

  app.get('/:name', { schema: { params: NameParams, response: { 200: CheckListing } } }, async (request) => service.get(request.params.name));

  app.delete('/:name', { schema: { params: NameParams, response: { 200: Message } } }, async (request) => {
    const { name } = request.params;
    await service.delete(name);
    return { message: `Successfully deleted healthcheck ${name}` };
  });
}

function refuseCommandChecks(refusal: () => string | null): void {
  const message = refusal();
  if (message !== null) throw new HealthcheckError('forbidden', message);
}

function registerResultRoutes(scope: FastifyInstance, service: HealthcheckService, wrap: boolean): void {
  const app = typed(scope);
  app.get('', { schema: { response: { 200: listOf(CheckResultSchema, wrap) } } }, async () => list(service.results(), wrap));

  app.get('/:name', { schema: { params: NameParams, response: { 200: CheckResultSchema } } }, async (request) => service.result(request.params.name));

  app.get('/:name/history', { schema: { params: NameParams, querystring: HistoryQuery, response: { 200: History } } }, async (request) => {
    const { limit } = request.query;
    const max = service.historySize;
    return { result: service.history(request.params.name, limit === undefined || limit === '' ? max : Math.min(Number(limit), max)) };
  });

  app.get('/:name/uptime', { schema: { params: NameParams, response: { 200: Uptime } } }, async (request) => {
    const { name } = request.params;
    return { name, uptime: service.uptime(name) };
  });
}

function list<T>(items: T[], wrap: boolean): T[] | { result: T[] } {
  return wrap ? { result: items } : items;
}
