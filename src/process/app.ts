/**
 * The fastify composition shared by both parts: TLS (mutual when `cacert` is set), credentials and their scopes
 * (src/server/credentials.ts) with the token and sign-in session routes, the body limit,
 * the error and not-found handlers, 405 with `Allow` for a wrong method on a known path, `/healthz`, `/health`,
 * `/metrics` and the OpenAPI document of every route (src/server/openapi.ts), the HTTP metrics, and the audit log
 * of the API changes (src/server/audit-routes.ts).
 */
import type { TLSSocket } from 'node:tls';
import { Readable } from 'node:stream';
import type {} from '@fastify/rate-limit';
import { Type } from '@sinclair/typebox';
import Fastify, { LogController, type FastifyInstance, type RouteOptions } from 'fastify';
import type { Logger } from 'pino';
import type { VigieConfig } from '../config/load.ts';
import type { RuntimeState } from '../common/runtime-state.ts';
import type { Db } from '../db/client.ts';
import { AuditLog } from '../server/audit-log.ts';
import { auditChanges, auditRoutes } from '../server/audit-routes.ts';
import { schemasCompiledOnFirstUse } from '../server/compiled-on-first-use.ts';
import { credentialCheck, credentialsHook, needsCredentials } from '../server/credentials.ts';
import { closeRefusedUpgrades, connectionOptions, limitConnections } from '../server/connections.ts';
import {
  answerFrameworkError,
  HttpError,
  installRootErrorHandlers,
  ROOT_ERRORS,
  routePatternOf,
  withMethodNotAllowed,
} from '../server/errors.ts';
import { renderMetrics, type ServerMetrics } from '../server/metrics.ts';
import { jsonBodyParser } from '../server/json-body.ts';
import { json, messageError, openApiRoute, operation, registerOpenApi } from '../server/openapi.ts';
import type { Part } from '../server/part.ts';
import { type SignIn, sessionRoutes } from '../server/session-routes.ts';
import { SESSION_KIND, Sessions } from '../server/sessions.ts';
import { tokenRoutes } from '../server/token-routes.ts';
import { TokenStore, tokenKind } from '../server/tokens.ts';

export interface ServerOptions {
  config: VigieConfig;
  /** Holds the tokens created through the API and the audit log. */
  db: Db;
  metrics: ServerMetrics;
  parts: readonly Part[];
  logger: Logger;
  /** Where the server's own runtime state lives (src/common/runtime-state.ts). */
  state: RuntimeState;
  /** Called with every route the server registers, before any is (tests list them: test/e2e/openapi.test.ts). */
  onRoute?: (route: RouteOptions) => void;
}

/** A part's rewrite of the URL for the request's Host, or the URL itself. */
function rewriteUrl(parts: readonly Part[], hostHeader: string | undefined, url: string): string {
  if (hostHeader === undefined) return url;
  const host = hostHeader.replace(/:\d+$/, '').toLowerCase();
  for (const part of parts) {
    const rewritten = part.rewriteUrl?.(host, url);
    if (rewritten !== undefined) return rewritten;
  }
  return url;
}

export async function buildServer({
  config,
  db,
  metrics,
  parts,
  logger,
  state,
  onRoute,
}: ServerOptions): Promise<FastifyInstance> {
  const { http } = config;
  const app = Fastify({
    loggerInstance: logger,
    // One log line per request would cost more than the ingestion it logs; metrics count requests instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: http.bodyLimit,
    ...connectionOptions(http),
    // Keep-alive sockets must not hold a SIGTERM shutdown open.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    frameworkErrors: answerFrameworkError,
    rewriteUrl: (request) => rewriteUrl(parts, request.headers.host, request.url ?? '/'),
    schemaController: schemasCompiledOnFirstUse,
    ...(http.tls
      ? {
          https: {
            key: http.tls.key,
            cert: http.tls.cert,
            ...(http.tls.ca ? { ca: http.tls.ca, requestCert: true, rejectUnauthorized: true } : {}),
          },
        }
      : {}),
  }) as unknown as FastifyInstance;
  limitConnections(app.server, http);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser);
  // First of the onRequest hooks: it must see the upgrade requests that basic auth or a client certificate refuses.
  closeRefusedUpgrades(app);
  if (onRoute) app.addHook('onRoute', onRoute);
  // Before any route, so that the document sees every one.
  await registerOpenApi(app, { basicAuth: http.basicAuth !== undefined, bearer: http.tokens.length > 0 });

  app.addHook('onResponse', async (request, reply) => {
    // `?` for a URL of no known path: a label per URL would let any client grow the series without bound.
    const route = routePatternOf(request) ?? '?';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
    metrics.responses.inc(labels);
  });
  const replication = parts.find((part) => part.audit !== undefined)?.audit;
  const audit = new AuditLog(db, http.audit, {
    registry: metrics.registry,
    warn: (message) => logger.warn(message),
    node: replication?.node ?? null,
  });
  replication?.attach(audit);
  app.addHook('onResponse', auditChanges(audit));
  app.addHook('onClose', async () => audit.close());

  // Refusals of these hooks are HttpErrors: the scope of the matched route answers them in its part's shape.
  const tokens = new TokenStore(state.collection(tokenKind(db)), http.tokens, http.maxApiTokens);
  let signIn: SignIn | null = null;
  if (needsCredentials(http)) {
    // Imported only when credentials are configured: its store and address parsing cost 1.1 MB of heap that an
    // open API never uses (bench/JOURNAL.md, "Memory").
    const { default: rateLimit } = await import('@fastify/rate-limit');
    await app.register(rateLimit, { global: false });
    const limiter = app.createRateLimit({ max: http.maxAuthFailures, timeWindow: http.authFailureWindowMs });
    const counting = { limiter, failures: metrics.authFailures, limited: metrics.authLimited };
    const credentials = credentialCheck(http, tokens);
    const sessions = new Sessions({
      collection: state.collection(SESSION_KIND),
      tokens,
      basicAuth: http.basicAuth,
      ttlMs: http.sessionTtlMs,
      maxSessions: http.maxSessions,
      registry: metrics.registry,
      warn: (message) => logger.warn(message),
    });
    app.addHook('onClose', async () => sessions.close());
    signIn = { sessions, credentials, counting };
    app.addHook('onRequest', credentialsHook(http, credentials, tokens, counting, sessions));
  }
  if (http.tls?.ca && http.allowedCn.length > 0) {
    const allowed = new Set(http.allowedCn);
    app.addHook('onRequest', async (request) => {
      const peer = (request.raw.socket as TLSSocket).getPeerCertificate?.();
      const cn = peer?.subject?.CN;
      if (typeof cn !== 'string' || !allowed.has(cn)) {
        throw new HttpError(403, `Client certificate CN ${JSON.stringify(cn ?? '')} is not in http.allowed-cn`);
      }
    });
  }

  installRootErrorHandlers(app);
  await app.register(async (scope) =>
    withMethodNotAllowed(scope, ROOT_ERRORS, (root) => {
      const ok = async () => ({ message: 'ok' });
      const probe = (summary: string) =>
        operation({
          summary,
          description:
            'Answers 200 as long as the server takes requests (a 503 or a refused connection while it stops).',
          tags: ['service'],
          responses: {
            200: json('the server is up', Type.Object({ message: Type.Literal('ok') })),
            503: messageError('the server is shutting down'),
          },
        });
      root.get('/healthz', { schema: probe('Liveness probe') }, ok);
      root.get('/health', { schema: probe('Liveness probe (alias of /healthz)') }, ok);
      const readyDoc = operation({
        summary: 'Readiness probe',
        description:
          'Answers 200 once every store this node writes through can be written (a single node: once it serves; a cluster node: joined, its buckets bound), 503 with the reason before; no credentials needed (docs/http-api.md "Shared routes").',
        tags: ['service'],
        responses: {
          200: json('ready', Type.Object({ message: Type.Literal('ready') })),
          503: messageError('not ready, and why'),
        },
      });
      root.get('/readyz', { schema: readyDoc }, async (_request, reply) => {
        for (const part of parts) {
          const why = part.notReady?.() ?? null;
          if (why !== null) return reply.code(503).send({ message: why });
        }
        return { message: 'ready' as const };
      });
      const metricsSchema = operation({
        summary: 'Prometheus metrics',
        description: 'The Prometheus text exposition of every metric of the service (docs/http-api.md "Metrics").',
        tags: ['service'],
        responses: {
          200: { description: 'the metrics', schema: Type.String(), contentTypes: [metrics.registry.contentType] },
        },
      });
      root.get('/metrics', { schema: metricsSchema }, async (_request, reply) => {
        reply.type(metrics.registry.contentType);
        return Readable.from(renderMetrics(metrics.registry), { objectMode: false });
      });
      openApiRoute(root);
    }),
  );

  await app.register(async (scope) => tokenRoutes(scope, tokens));
  await app.register(async (scope) => sessionRoutes(scope, signIn));
  await app.register(async (scope) => auditRoutes(scope, audit));
  for (const part of parts) await app.register(part.routes);
  return app;
}
