/**
 * The audit log over HTTP (docs/http-api.md, "Audit log"): the `onResponse` hook that records every API change
 * (src/server/scopes.ts, `isApiChange`), refused ones included, since an attacker's failed attempts are what an
 * audit must show; and `GET /api/v1/audit`, scope `admin`.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest, onResponseAsyncHookHandler } from 'fastify';
import type { AuditLog } from './audit-log.ts';
import { AuditPage } from './audit-wire.ts';
import { principalOf } from './credentials.ts';
import { registerPartScope, ROOT_ERRORS, routePatternOf } from './errors.ts';
import { json, messageError, operation } from './openapi.ts';
import { isApiChange } from './scopes.ts';

/** The hook recording the changes in `log`. Requests that matched no route (404 `Route ... not found`) are not
 *  changes of anything: `http_responses_total{route="?"}` counts them. */
export function auditChanges(log: AuditLog): onResponseAsyncHookHandler {
  // The hook runs for every request, event pushes included: the answer per route pattern and method (a set as
  // finite as the routes) is worked out once.
  const changes = new Map<string, boolean>();
  return async (request, reply) => {
    const route = routePatternOf(request);
    if (route === undefined) return;
    const key = `${request.method} ${route}`;
    let change = changes.get(key);
    if (change === undefined) changes.set(key, (change = isApiChange(request.method, route)));
    if (!change) return;
    // One row per refusal at the failure limit would let one address push the history out (docs/hardening.md).
    if (request.authLimited === true) return log.skip('auth_limited');
    log.record({
      principal: principalOf(request),
      address: request.ip,
      method: request.method,
      route,
      path: request.url.split('?', 1)[0] ?? request.url,
      name: nameOf(request),
      outcome: reply.statusCode,
      // Stamped when received, not when answered: a client that waits for one node's answer before asking the
      // next sees its changes listed in that order, however late the first node's hook runs.
      receivedAtMs: Math.round(Date.now() - reply.elapsedTime),
    });
  };
}

/** The object the route names (`:name`, a status page's `:slug`, an incident's `:id`), else the body's `name` or
 *  `slug` (a check, a window, a token, a page); null for bulk bodies, a new incident, and for requests refused
 *  before their body was read. */
function nameOf(request: FastifyRequest): string | null {
  const params = request.params as Record<string, unknown> | undefined;
  const param = params?.name ?? params?.slug ?? params?.id;
  if (typeof param === 'string') return param;
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const name = (body as Record<string, unknown>).name ?? (body as Record<string, unknown>).slug;
  return typeof name === 'string' ? name : null;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

const Query = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_LIMIT,
      default: DEFAULT_LIMIT,
      description: `rows per page, at most ${MAX_LIMIT}`,
    }),
  ),
  before: Type.Optional(
    Type.Integer({ minimum: 1, description: 'only rows older than this id: the `next` of the previous page' }),
  ),
  principal: Type.Optional(
    Type.String({ description: 'only the changes of this principal (`token:ci`, `basic:ops`, `anonymous`...)' }),
  ),
  name: Type.Optional(Type.String({ description: 'only the changes naming this object' })),
});

export async function auditRoutes(app: FastifyInstance, log: AuditLog): Promise<void> {
  await registerPartScope(app, '/api/v1/audit', ROOT_ERRORS, (scope) => {
    const doc = operation({
      summary: 'Read the audit log',
      description:
        'Every API change (checks, streams, maintenance windows, tokens), refused ones included: who, from where, what and the status answered (docs/http-api.md "Audit log"). A bad parameter is a 400 naming it.',
      tags: ['service'],
      responses: {
        200: json('a page of rows', AuditPage),
        400: messageError('a bad parameter, named: `Invalid request: querystring/limit must be <= 1000`'),
      },
    });
    scope.get<{ Querystring: Static<typeof Query> }>('', { schema: { querystring: Query, ...doc } }, async (request) =>
      log.list({ ...request.query, limit: request.query.limit ?? DEFAULT_LIMIT }),
    );
  });
}
