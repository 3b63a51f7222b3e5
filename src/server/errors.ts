/**
 * The one error type of the HTTP layer, and the one function that turns any error into a response body.
 * Each part answers in its own shape: healthchecks `{"message": ...}` (Cabourotte), streams `{"error": ...}`
 * (Mirabelle). A route says which through `config.errorShape`; no stack trace ever reaches a client.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

export type ErrorShape = 'message' | 'error';

export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    /** Extra fields merged into the body (e.g. the one-off result). */
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    errorShape?: ErrorShape;
  }
}

const STREAM_PREFIXES = ['/api/v1/stream', '/api/v1/index', '/api/v1/prometheus', '/api/v1/opentelemetry'];

/** The body shape for a request: the route's own, or by path for requests that matched no route. */
export function errorShapeOf(request: FastifyRequest): ErrorShape {
  const configured = request.routeOptions.config?.errorShape;
  if (configured) return configured;
  const path = request.url.split('?')[0] ?? '';
  return STREAM_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`)) ? 'error' : 'message';
}

export function sendError(request: FastifyRequest, reply: FastifyReply, statusCode: number, message: string, extra: Record<string, unknown> = {}): FastifyReply {
  const key = errorShapeOf(request);
  return reply.code(statusCode).type('application/json').send({ [key]: message, ...extra });
}

/** Maps fastify's own errors (body parsing, limits, content types) to messages naming the problem. */
export function describeError(error: FastifyError, request: FastifyRequest, bodyLimit: number): { statusCode: number; message: string } {
  if (error instanceof AppError) return { statusCode: error.statusCode, message: error.message };
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
