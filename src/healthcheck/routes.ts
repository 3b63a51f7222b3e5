/**
 * The healthcheck API as a fastify plugin handed its service, on both path forms: `/api/v1/...` (lists wrapped
 * as `{"result": [...]}`) and upstream's v1 short form `/healthcheck...`, `/result...` (lists as bare arrays).
 * Statuses and messages are SPEC §1's table; errors answer `{"message": ...}`.
 *
 * Creation is one parametric route, `POST /healthcheck/:name` with the kind (or `bulk`) as the name, so that
 * `GET` and `DELETE /healthcheck/http` still reach a check named `http`, as upstream allows.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { HttpError, type PartErrors, registerPartScope } from '../server/errors.ts';
import { HealthcheckError, type HealthcheckErrorReason, type HealthcheckService } from './service.ts';

export interface RouteOptions {
  healthcheckApi: boolean;
  resultApi: boolean;
}

const STATUS: Record<HealthcheckErrorReason, number> = {
  invalid: 400,
  'unknown-kind': 404,
  'not-found': 404,
  'result-not-found': 404,
  'start-failed': 500,
};

/** Cabourotte's body shape; the service's refusals carry their reason, mapped to a status here. */
const errors: PartErrors = {
  body: (message) => ({ message }),
  fromDomainError: (error) => (error instanceof HealthcheckError ? { statusCode: STATUS[error.reason], message: error.message } : undefined),
};

type NameRequest = FastifyRequest<{ Params: { name: string } }>;

export function healthcheckRoutes(service: HealthcheckService, options: RouteOptions): FastifyPluginAsync {
  return async (app) => {
    for (const [prefix, wrap] of [
      ['/api/v1', true],
      ['', false],
    ] as const) {
      if (options.healthcheckApi) await registerPartScope(app, `${prefix}/healthcheck`, errors, (scope) => registerHealthcheckRoutes(scope, service, wrap));
      if (options.resultApi) await registerPartScope(app, `${prefix}/result`, errors, (scope) => registerResultRoutes(scope, service, wrap));
    }
  };
}

function registerHealthcheckRoutes(app: FastifyInstance, service: HealthcheckService, wrap: boolean): void {
  // Only JSON bodies: anything else is a 415 naming the expected type (fastify would take text/plain as is).
  app.removeContentTypeParser(['text/plain']);
  app.get('', async () => list(service.list(), wrap));

  app.post('/:name', async (request: NameRequest, reply) => {
    const what = request.params.name;
    if (what === 'bulk') {
      await service.bulk(request.body);
      return reply.code(201).send({ message: 'Healthchecks successfully added' });
    }
    const outcome = await service.create(what, request.body);
    if (!outcome.oneOff) return reply.code(201).send({ message: 'Healthcheck successfully added' });
    return reply.code(outcome.success ? 201 : 500).send({ message: outcome.message, result: outcome.result });
  });

  app.get('/:name', async (request: NameRequest) => service.get(request.params.name));

  app.delete('/:name', async (request: NameRequest) => {
    const { name } = request.params;
    await service.delete(name);
    return { message: `Successfully deleted healthcheck ${name}` };
  });
}

function registerResultRoutes(app: FastifyInstance, service: HealthcheckService, wrap: boolean): void {
  app.get('', async () => list(service.results(), wrap));

  app.get('/:name', async (request: NameRequest) => service.result(request.params.name));

  app.get('/:name/history', async (request: FastifyRequest<{ Params: { name: string }; Querystring: { limit?: string } }>) => {
    const limit = parseLimit(request.query.limit, service.historySize);
    return { result: service.history(request.params.name, limit) };
  });

  app.get('/:name/uptime', async (request: NameRequest) => {
    const { name } = request.params;
    return { name, uptime: service.uptime(name) };
  });
}

function list<T>(items: T[], wrap: boolean): T[] | { result: T[] } {
  return wrap ? { result: items } : items;
}

function parseLimit(text: string | undefined, max: number): number {
  if (text === undefined || text === '') return max;
  const limit = Number(text);
  if (!Number.isInteger(limit) || limit < 1) throw new HttpError(400, `Invalid limit ${JSON.stringify(text)}: expected a positive integer`);
  return Math.min(limit, max);
}
