/**
 * The healthcheck API as a fastify plugin handed its service, on both path forms: `/api/v1/...` (lists wrapped
 * as `{"result": [...]}`) and upstream's v1 short form `/healthcheck...`, `/result...` (lists as bare arrays).
 * Statuses and messages are SPEC §1's table; errors answer `{"message": ...}`.
 *
 * Creation is one parametric route, `POST /healthcheck/:name` with the kind (or `bulk`) as the name, so that
 * `GET` and `DELETE /healthcheck/http` still reach a check named `http`, as upstream allows.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { AppError } from '../server/errors.ts';
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

const config = { errorShape: 'message' as const };

type NameRequest = FastifyRequest<{ Params: { name: string } }>;

export function healthcheckRoutes(service: HealthcheckService, options: RouteOptions): FastifyPluginAsync {
  return async (app) => {
    // Only JSON bodies: anything else is a 415 naming the expected type (fastify would take text/plain as is).
    app.removeContentTypeParser(['text/plain']);
    for (const [prefix, wrap] of [
      ['/api/v1', true],
      ['', false],
    ] as const) {
      if (options.healthcheckApi) registerHealthcheckRoutes(app, service, prefix, wrap);
      if (options.resultApi) registerResultRoutes(app, service, prefix, wrap);
    }
  };
}

function registerHealthcheckRoutes(app: FastifyInstance, service: HealthcheckService, prefix: string, wrap: boolean): void {
  app.get(`${prefix}/healthcheck`, { config }, async () => list(service.list(), wrap));

  app.post(`${prefix}/healthcheck/:name`, { config }, async (request: NameRequest, reply) => {
    const what = request.params.name;
    if (what === 'bulk') {
      await guard(() => service.bulk(request.body));
      return reply.code(201).send({ message: 'Healthchecks successfully added' });
    }
    const outcome = await guard(() => service.create(what, request.body));
    if (!outcome.oneOff) return reply.code(201).send({ message: 'Healthcheck successfully added' });
    return reply.code(outcome.success ? 201 : 500).send({ message: outcome.message, result: outcome.result });
  });

  app.get(`${prefix}/healthcheck/:name`, { config }, async (request: NameRequest) => guard(() => service.get(request.params.name)));

  app.delete(`${prefix}/healthcheck/:name`, { config }, async (request: NameRequest) => {
    const { name } = request.params;
    await guard(() => service.delete(name));
    return { message: `Successfully deleted healthcheck ${name}` };
  });
}

function registerResultRoutes(app: FastifyInstance, service: HealthcheckService, prefix: string, wrap: boolean): void {
  app.get(`${prefix}/result`, { config }, async () => list(service.results(), wrap));

  app.get(`${prefix}/result/:name`, { config }, async (request: NameRequest) => guard(() => service.result(request.params.name)));

  app.get(`${prefix}/result/:name/history`, { config }, async (request: FastifyRequest<{ Params: { name: string }; Querystring: { limit?: string } }>) => {
    const limit = parseLimit(request.query.limit, service.historySize);
    return { result: guard(() => service.history(request.params.name, limit)) };
  });

  app.get(`${prefix}/result/:name/uptime`, { config }, async (request: NameRequest) => {
    const { name } = request.params;
    return { name, uptime: guard(() => service.uptime(name)) };
  });
}

function list<T>(items: T[], wrap: boolean): T[] | { result: T[] } {
  return wrap ? { result: items } : items;
}

function parseLimit(text: string | undefined, max: number): number {
  if (text === undefined || text === '') return max;
  const limit = Number(text);
  if (!Number.isInteger(limit) || limit < 1) throw new AppError(400, `Invalid limit ${JSON.stringify(text)}: expected a positive integer`);
  return Math.min(limit, max);
}

/** Runs a service call, turning its refusals into HTTP errors. */
function guard<T>(work: () => T): T {
  try {
    const value = work();
    if (value instanceof Promise) return value.catch(rethrowAsHttp) as T;
    return value;
  } catch (error) {
    return rethrowAsHttp(error);
  }
}

function rethrowAsHttp(error: unknown): never {
  if (error instanceof HealthcheckError) throw new AppError(STATUS[error.reason], error.message);
  throw error;
}
