/**
 * The error model of the HTTP layer. The server itself only refuses requests for HTTP reasons (credentials, a
 * client certificate, a wrong method, a body it cannot parse): those are `HttpError`s and fastify's own errors.
 * Each part (healthchecks, streams) throws its own domain errors and registers its routes in scopes
 * (`registerPartScope`) that carry the part's error handler and body shape (`{"message": ...}` for healthchecks
 * as Cabourotte, `{"error": ...}` for streams as Mirabelle); a URL under a part's prefix that matches no route is
 * answered by the root in that part's shape (`installRootErrorHandlers`). So the server
 * knows no part's URLs, and no stack trace ever reaches a client. An `UnavailableError` (src/common/unavailable.ts:
 * the cluster cannot serve now) is a 503 in every scope.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from '@sinclair/typebox';
import { type FieldProblem, problemSentence, schemaProblems, wireProblems } from '../common/schema-errors.ts';
import { UnavailableError } from '../common/unavailable.ts';
import type { ErrorAnswer, PartErrors } from './error-answer.ts';
import { knownPathsOf } from './method-not-allowed.ts';

/** A refusal for an HTTP reason, answered with `statusCode` in the body shape of the scope that handles it. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    /** Headers sent with the error answer (`WWW-Authenticate`, `Allow`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * A body refused for what it holds: 400 with every problem found (`errors`, docs/http-api.md "Validation errors"),
 * beside the first, worded in `message`.
 */
export class InvalidBodyError extends HttpError {
  constructor(
    message: string,
    readonly problems: readonly FieldProblem[],
  ) {
    super(400, message);
  }
}

/** `body` if `schema` takes it; else an InvalidBodyError of every problem, worded `<what>: <first problem>`. */
export function validBody<S extends TSchema>(schema: S, body: unknown, what: string): Static<S> {
  const problems = schemaProblems(schema, body);
  if (problems.length > 0)
    throw new InvalidBodyError(`${what}: ${problemSentence(problems[0] as FieldProblem)}`, problems);
  return body as Static<S>;
}

/** The root scope's shape (routes of no part, URLs of no part): Cabourotte's, the default of both originals'
 *  clients. */
export const ROOT_ERRORS: PartErrors = {
  body: (message) => ({ message }),
  fromDomainError: () => undefined,
};

/** The methods a known path answers 405 (or 204, OPTIONS) for; any other method of a known path is a 404. */
const ROUTABLE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Registers a part's routes under `prefix` in their own fastify scope: the part's error handler and body shape
 * apply to everything under the prefix, and a wrong method on one of its URLs answers 405 with `Allow`
 * (OPTIONS answers 204 with it). Route URLs given to `routes` are relative to the prefix.
 */
export async function registerPartScope(
  app: FastifyInstance,
  prefix: string,
  errors: PartErrors,
  routes: (scope: FastifyInstance) => void | Promise<void>,
): Promise<void> {
  partPrefixesOf(app).push({ prefix: `${app.prefix}${prefix}`, errors });
  await app.register(
    async (scope) => {
      installErrorHandler(scope, () => errors);
      await withMethodNotAllowed(scope, errors, routes);
    },
    { prefix },
  );
}

/**
 * Runs `routes` on `scope`, and records the paths they registered, so that a wrong method on one of them is
 * answered with 405 and `Allow` (OPTIONS with 204 and `Allow`) in the shape of `errors`.
 */
export async function withMethodNotAllowed(
  scope: FastifyInstance,
  errors: PartErrors,
  routes: (scope: FastifyInstance) => void | Promise<void>,
): Promise<void> {
  const known = knownPathsOf(scope.server);
  scope.addHook('onRoute', (route) => {
    if ((route.config as { shadowsParametric?: boolean } | undefined)?.shadowsParametric === true) return;
    known.add(route.url, [route.method].flat(), errors);
  });
  await routes(scope);
}

/**
 * Registers a part's routes that share a URL prefix with another part (so the prefix cannot carry a part's
 * not-found handler): the part's error handler and 405s apply to them; unknown URLs fall to the root's 404.
 */
export async function registerPartRoutes(
  app: FastifyInstance,
  errors: PartErrors,
  routes: (scope: FastifyInstance) => void | Promise<void>,
): Promise<void> {
  await app.register(async (scope) => {
    installErrorHandler(scope, () => errors);
    await withMethodNotAllowed(scope, errors, routes);
  });
}

/** The URL prefixes of the part scopes and their error shapes, one table per server. */
const partPrefixes = new WeakMap<object, { prefix: string; errors: PartErrors }[]>();

function partPrefixesOf(app: FastifyInstance): { prefix: string; errors: PartErrors }[] {
  let table = partPrefixes.get(app.server);
  if (table === undefined) {
    table = [];
    partPrefixes.set(app.server, table);
  }
  return table;
}

/** A request URL without its query. */
function pathOf(url: string): string {
  return url.split('?')[0] as string;
}

/** The errors of the part whose prefix (a whole path segment, the longest) `path` is under, else the root's. */
function errorsOfPath(app: FastifyInstance, path: string): PartErrors {
  let found: { prefix: string; errors: PartErrors } | undefined;
  for (const entry of partPrefixesOf(app)) {
    const under = path === entry.prefix || path.startsWith(`${entry.prefix}/`);
    if (under && entry.prefix.length > (found?.prefix.length ?? -1)) found = entry;
  }
  return found?.errors ?? ROOT_ERRORS;
}

/**
 * The root's error and not-found handlers. A URL that matches no route is answered here, in the shape of the part
 * whose prefix it is under, with the errors of its request (a body that does not parse, refused credentials). One
 * not-found handler per part scope would do the same, but fastify registers each for all 34 of Node's methods,
 * twice, in a router of its own: 1,260 routes for the 18 part scopes, 2.2 MB of a small service's heap
 * (bench/JOURNAL.md, "One not-found handler").
 *
 * A URL of a known path with a method it does not serve is answered here too, from the table of known paths
 * (src/server/method-not-allowed.ts): 405 with `Allow`, or 204 with `Allow` to OPTIONS, in the shape of the part
 * that registered the path, and counted and audited under its route pattern (`routePatternOf`).
 */
export function installRootErrorHandlers(app: FastifyInstance): void {
  const known = knownPathsOf(app.server);
  const errorsOfUnrouted = (path: string) => {
    const match = known.match(path);
    return match !== undefined && 'known' in match ? match.known.errors : errorsOfPath(app, path);
  };
  installErrorHandler(app, (request) => (request.is404 ? errorsOfUnrouted(pathOf(request.url)) : ROOT_ERRORS));
  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request.url);
    const match = ROUTABLE_METHODS.has(request.method) ? known.match(path) : undefined;
    // As fastify's router refuses the path for a method it serves.
    if (match !== undefined && 'refused' in match) return sendAnswer(reply, errorsOfPath(app, path), match.refused);
    if (match !== undefined && !match.known.methods.has(request.method)) {
      const { pattern, allow, errors } = match.known;
      patternsOfUnrouted.set(request, pattern);
      // The parameters fastify would have given the route, for the audit log's name of the object.
      request.params = match.params;
      reply.header('Allow', allow);
      if (request.method === 'OPTIONS') return reply.code(204).send();
      return sendAnswer(reply, errors, {
        statusCode: 405,
        message: `Method ${request.method} not allowed on ${pattern}; allowed: ${allow}`,
      });
    }
    return sendAnswer(reply, errorsOfPath(app, path), {
      statusCode: 404,
      message: `Route ${request.method} ${path} not found`,
    });
  });
}

/** The route patterns of the requests answered 405 or 204 from the table of known paths, which matched no route. */
const patternsOfUnrouted = new WeakMap<FastifyRequest, string>();

/** The route pattern of a request (`/api/v1/stream/:name`), that of a wrong method on a known path included;
 *  `undefined` for a URL of no known path. */
export function routePatternOf(request: FastifyRequest): string | undefined {
  return request.routeOptions.url || patternsOfUnrouted.get(request);
}

/**
 * fastify's refusals of a request before any routing (a URL that does not decode, a parameter past its length), as
 * its `frameworkErrors` option: in the shape of the part whose prefix the URL is under, like every other answer.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const statusCode = error.statusCode ?? 400;
  if (statusCode >= 500) request.log.error({ err: error }, 'request failed');
  sendAnswer(reply, errorsOfPath(request.server, pathOf(request.url)), { statusCode, message: error.message });
}

/** Answers the errors of the routes of `scope` in the shape `errorsOf` gives for the request. */
function installErrorHandler(scope: FastifyInstance, errorsOf: (request: FastifyRequest) => PartErrors): void {
  const bodyLimit = scope.initialConfig.bodyLimit ?? 1024 * 1024;
  scope.setErrorHandler((error: FastifyError, request, reply) => {
    const errors = errorsOf(request);
    const answer =
      errors.fromDomainError(error) ??
      (error instanceof UnavailableError ? { statusCode: 503, message: error.message } : undefined) ??
      (error.code === 'FST_ERR_VALIDATION' && errors.fromValidationError
        ? errors.fromValidationError(error, request)
        : undefined) ??
      describeHttpError(error, request, bodyLimit);
    if (answer.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    if (error instanceof HttpError) reply.headers(error.headers);
    return sendAnswer(reply, errors, answer);
  });
}

function sendAnswer(reply: FastifyReply, errors: PartErrors, answer: ErrorAnswer): FastifyReply {
  return reply
    .code(answer.statusCode)
    .type('application/json')
    .send({ ...errors.body(answer.message), ...answer.extra });
}

/** HTTP errors and fastify's own (body parsing, limits, content types) as a status and a message naming the problem. */
function describeHttpError(error: FastifyError, request: FastifyRequest, bodyLimit: number): ErrorAnswer {
  if (error instanceof InvalidBodyError)
    return { statusCode: 400, message: error.message, extra: { errors: wireProblems(error.problems) } };
  if (error instanceof HttpError) return { statusCode: error.statusCode, message: error.message };
  // SQLite refused the write of the change (its transaction rolled back): the route changed nothing.
  if (error.code === 'SQLITE_FULL') {
    return {
      statusCode: 507,
      message: 'Insufficient storage: the disk of the data directory is full; nothing was written',
    };
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { statusCode: 413, message: `Request body is larger than the limit of ${bodyLimit} bytes` };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        statusCode: 415,
        message: `Unsupported Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')}: expected application/json`,
      };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { statusCode: 400, message: 'Invalid JSON: the body is empty' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { statusCode: 400, message: 'Invalid Content-Length header' };
    case 'FST_ERR_VALIDATION':
      return { statusCode: 400, message: `Invalid request: ${error.message}` };
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { statusCode: 400, message: `Invalid JSON: ${error.message}` };
  }
  const statusCode = error.statusCode ?? 500;
  if (statusCode >= 400 && statusCode < 500) return { statusCode, message: error.message };
  return { statusCode: 500, message: 'Internal error' };
}

/**
 * Route config of a static route that shadows a parametric one for its own methods only (`POST
 * /healthcheck/http` beside `/healthcheck/:name`): a wrong method there must be answered as on the parametric
 * route, so the table of known paths leaves it out.
 */
export const SHADOWS_PARAMETRIC = { shadowsParametric: true } as const;
