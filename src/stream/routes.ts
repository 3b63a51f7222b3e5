/**
 * The stream API (SPEC §2, Mirabelle-compatible): streams, pushes, index search, Prometheus remote write and
 * OTLP traces. A fastify plugin handed its service; errors are `{"error": ...}`. Remote write and OTLP take the
 * raw body whatever its content type (their own child plugin swaps the body parsers), the other routes JSON.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, type PartErrors, registerPartScope } from '../server/errors.ts';
import type { Event } from './event.ts';
import { eventsFromJsonBody } from './ingest/json.ts';
import { decodeOtlpTraces, encodeOtlpResponse } from './ingest/otlp.ts';
import { decodeRemoteWrite } from './ingest/remote-write.ts';
import type { StreamService } from './service.ts';

/** Mirabelle's body shape. */
const errors: PartErrors = {
  body: (error) => ({ error }),
  fromDomainError: () => undefined,
};

interface NameParams {
  name: string;
}

export function streamRoutes(service: StreamService, options: { bodyLimit: number }): FastifyPluginAsync {
  return async (app) => {
    await registerPartScope(app, '/api/v1/stream', errors, (scope) => {
      scope.get('', async () => ({ streams: service.streamNames() }));

      scope.post<{ Params: NameParams }>('/:name', async (request) => {
        const text = decodeBase64Edn(field(request.body, 'config'), 'config');
        service.addStream(request.params.name, text);
        return { message: 'stream added' };
      });

      scope.get<{ Params: NameParams }>('/:name', async (request) => {
        const { configText, currentTime } = service.describeStream(request.params.name);
        return { config: Buffer.from(configText, 'utf8').toString('base64'), 'current-time': currentTime };
      });

      scope.delete<{ Params: NameParams }>('/:name', async (request) => {
        service.removeStream(request.params.name);
        return { message: 'stream removed' };
      });

      scope.put<{ Params: NameParams }>('/:name', async (request, reply) => {
        const { name } = request.params;
        service.requirePushTarget(name);
        field(request.body, 'events');
        if (!(await ingest(service, reply, 'stream', name, eventsFromJsonBody(request.body)))) return reply;
        return { message: 'ok' };
      });
    });

    await registerPartScope(app, '/api/v1/index', errors, (scope) => {
      scope.post<{ Params: NameParams }>('/:name/search', async (request) => {
        const query = decodeBase64Edn(field(request.body, 'query'), 'query');
        return { events: service.searchIndex(request.params.name, query) };
      });

      scope.get<{ Params: NameParams }>('/:name/current-time', async (request) => ({
        'current-time': service.currentTime(request.params.name),
      }));
    });

    // A decompressed body may be several times its compressed size; past this it is refused, not buffered.
    const maxDecompressedBytes = options.bodyLimit * 8;
    await registerPartScope(app, '/api/v1/prometheus', errors, (scope) => {
      acceptRawBodies(scope);
      scope.post<{ Params: NameParams }>('/remote-write/:name', async (request, reply) => {
        const { name } = request.params;
        service.requirePushTarget(name);
        const events = decodeRemoteWrite(rawBody(request), { maxDecompressedBytes });
        service.metrics.remoteWriteSamples.inc(events.length);
        if (!(await ingest(service, reply, 'remote-write', name, events))) return reply;
        return reply.code(204).send();
      });
    });
    await registerPartScope(app, '/api/v1/opentelemetry', errors, (scope) => {
      acceptRawBodies(scope);
      scope.post<{ Params: NameParams }>('/v1/traces/:name', async (request, reply) => {
        const { name } = request.params;
        service.requirePushTarget(name);
        const contentType = request.headers['content-type'] ?? '';
        const events = decodeOtlpTraces(rawBody(request), contentType, request.headers['content-encoding'], { maxDecompressedBytes });
        service.metrics.otlpSpans.inc(events.length);
        if (!(await ingest(service, reply, 'otlp', name, events))) return reply;
        const response = encodeOtlpResponse(contentType);
        return reply.code(200).type(response.contentType).send(response.body);
      });
    });
  };
}

/** Remote write and OTLP take binary bodies of any content type (Prometheus sends `application/x-protobuf`). */
function acceptRawBodies(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
}

function rawBody(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

/** Hands the events to the service; when its backlog is full, answers 503 (senders retry) and returns false. */
async function ingest(service: StreamService, reply: FastifyReply, route: string, name: string, events: Event[]): Promise<boolean> {
  if (await service.ingest(route, name, events)) return true;
  reply
    .code(503)
    .header('Retry-After', '1')
    .send({ error: `Too many events waiting to be processed (limit ${service.maxPendingEvents}), retry later` });
  return false;
}

/** A required field of a JSON object body (Mirabelle's messages: `field x is missing`). */
function field(body: unknown, name: string): unknown {
  const value = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>)[name] : undefined;
  if (value === undefined) throw new HttpError(400, `field ${name} is missing`);
  return value;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes a base64 field holding EDN text; Node's decoder skips bad characters silently, so check first. */
function decodeBase64Edn(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new HttpError(400, `field ${name} is incorrect: expected a non-blank base64 string`);
  const compact = value.replace(/\s+/g, '');
  if (!BASE64.test(compact)) throw new HttpError(400, `field ${name} is incorrect: invalid base64`);
  try {
    return utf8.decode(Buffer.from(compact, 'base64'));
  } catch {
    throw new HttpError(400, `field ${name} is incorrect: the base64 does not decode to UTF-8 text`);
  }
}
