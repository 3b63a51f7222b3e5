/**
 * The fastify composition shared by both parts: TLS (mutual when `cacert` is set), basic auth, the body limit,
 * the error and not-found handlers, 405 with `Allow` for a wrong method on a known path, `/healthz`, `/health`
 * and `/metrics`, and the HTTP metrics.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import Fastify, { LogController, type FastifyError, type FastifyInstance, type HTTPMethods, type onRequestAsyncHookHandler } from 'fastify';
import type { Logger } from 'pino';
import type { VigieConfig } from '../config/load.ts';
import { connectionOptions, limitConnections } from './connections.ts';
import { describeError, sendError } from './errors.ts';
import type { ServerMetrics } from './metrics.ts';
import type { Part } from './part.ts';

export interface ServerOptions {
  config: VigieConfig;
  metrics: ServerMetrics;
  parts: readonly Part[];
  logger: Logger;
}

const ROUTABLE_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export async function buildServer({ config, metrics, parts, logger }: ServerOptions): Promise<FastifyInstance> {
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

  const routesByUrl = collectRoutes(app);

  app.addHook('onResponse', async (request, reply) => {
    const route = reply.statusCode === 404 && !request.routeOptions.url ? '?' : (request.routeOptions.url ?? '?');
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
    metrics.responses.inc(labels);
  });

  if (http.basicAuth) app.addHook('onRequest', basicAuthHook(http.basicAuth));
  if (http.tls?.ca && http.allowedCn.length > 0) {
    const allowed = new Set(http.allowedCn);
    app.addHook('onRequest', async (request, reply) => {
      const peer = (request.raw.socket as TLSSocket).getPeerCertificate?.();
      const cn = peer?.subject?.CN;
      if (typeof cn !== 'string' || !allowed.has(cn)) {
        return sendError(request, reply, 403, `Client certificate CN ${JSON.stringify(cn ?? '')} is not in http.allowed-cn`);
      }
    });
  }

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { statusCode, message } = describeError(error, request, http.bodyLimit);
    if (statusCode >= 500) request.log.error({ err: error }, 'request failed');
    const extra = (error as { body?: Record<string, unknown> }).body ?? {};
    return sendError(request, reply, statusCode, message, extra);
  });
  app.setNotFoundHandler((request, reply) => sendError(request, reply, 404, `Route ${request.method} ${request.url.split('?')[0]} not found`));

  const ok = async () => ({ message: 'ok' });
  app.get('/healthz', ok);
  app.get('/health', ok);
  app.get('/metrics', async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  for (const part of parts) await app.register(part.routes);
  addMethodNotAllowedRoutes(app, routesByUrl);
  return app;
}

/** Records the methods of every route as it is registered, keyed by its URL template. */
function collectRoutes(app: FastifyInstance): Map<string, { methods: Set<string>; errorShape?: 'message' | 'error' }> {
  const routes = new Map<string, { methods: Set<string>; errorShape?: 'message' | 'error' }>();
  app.addHook('onRoute', (route) => {
    const entry = routes.get(route.url) ?? { methods: new Set<string>() };
    for (const method of [route.method].flat()) entry.methods.add(method);
    const shape = (route.config as { errorShape?: 'message' | 'error' } | undefined)?.errorShape;
    if (shape) entry.errorShape = shape;
    routes.set(route.url, entry);
  });
  return routes;
}

/** A wrong method on a known path answers 405 with `Allow` (OPTIONS answers 204 with it), not 404. */
function addMethodNotAllowedRoutes(app: FastifyInstance, routes: Map<string, { methods: Set<string>; errorShape?: 'message' | 'error' }>): void {
  for (const [url, { methods, errorShape }] of [...routes]) {
    const missing = ROUTABLE_METHODS.filter((method) => !methods.has(method));
    if (missing.length === 0) continue;
    const allow = [...methods].sort().join(', ');
    app.route({
      method: missing,
      url,
      config: errorShape ? { errorShape } : {},
      handler: async (request, reply) => {
        reply.header('Allow', allow);
        if (request.method === 'OPTIONS') return reply.code(204).send();
        return sendError(request, reply, 405, `Method ${request.method} not allowed on ${url}; allowed: ${allow}`);
      },
    });
  }
}

function basicAuthHook(credentials: { username: string; password: string }): onRequestAsyncHookHandler {
  // Comparing digests keeps the comparison constant-time whatever the lengths of the inputs.
  const digest = (value: string) => createHash('sha256').update(value).digest();
  const expectedUser = digest(credentials.username);
  const expectedPassword = digest(credentials.password);
  return async (request, reply) => {
    const header = request.headers.authorization ?? '';
    const match = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header);
    const decoded = match ? Buffer.from(match[1] as string, 'base64').toString('utf8') : '';
    const separator = decoded.indexOf(':');
    const user = digest(separator >= 0 ? decoded.slice(0, separator) : '');
    const password = digest(separator >= 0 ? decoded.slice(separator + 1) : '');
    // Both comparisons always run so the timing does not tell which half was wrong.
    const userOk = timingSafeEqual(user, expectedUser);
    const passwordOk = timingSafeEqual(password, expectedPassword);
    if (separator < 0 || !userOk || !passwordOk) {
      reply.header('WWW-Authenticate', 'Basic realm="vigie", charset="UTF-8"');
      return sendError(request, reply, 401, 'Unauthorized');
    }
  };
}
