/**
 * The stream API (SPEC §2, Mirabelle-compatible): streams, pushes, index search, Prometheus remote write and
 * OTLP traces. A fastify plugin handed its service; errors are `{"error": ...}`. Remote write and OTLP take the
 * raw body whatever its content type (their own child plugin swaps the body parsers), the other routes JSON.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../server/errors.ts';
import type { Event } from './event.ts';
import { eventsFromJsonBody } from './ingest/json.ts';
import { decodeOtlpTraces, encodeOtlpResponse } from './ingest/otlp.ts';
import { decodeRemoteWrite } from './ingest/remote-write.ts';
import type { StreamService } from './service.ts';

const config = { errorShape: 'error' } as const;

interface NameParams {
  name: string;
}

export function streamRoutes(service: StreamService, options: { bodyLimit: number }): FastifyPluginAsync {
  return async (app) => {
    app.get('/api/v1/stream', { config }, async () => ({ streams: service.streamNames() }));

    app.post<{ Params: NameParams }>('/api/v1/stream/:name', { config }, async (request) => {
      const text = decodeBase64Edn(field(request.body, 'config'), 'config');
      service.addStream(request.params.name, text);
      return { message: 'stream added' };
    });

    app.get<{ Params: NameParams }>('/api/v1/stream/:name', { config }, async (request) => {
      const { configText, currentTime } = service.describeStream(request.params.name);
      return { config: Buffer.from(configText, 'utf8').toString('base64'), 'current-time': currentTime };
    });

    app.delete<{ Params: NameParams }>('/api/v1/stream/:name', { config }, async (request) => {
      service.removeStream(request.params.name);
      return { message: 'stream removed' };
    });

    app.put<{ Params: NameParams }>('/api/v1/stream/:name', { config }, async (request, reply) => {
      const { name } = request.params;
      service.requirePushTarget(name);
      field(request.body, 'events');
      if (!(await ingest(service, reply, 'stream', name, eventsFromJsonBody(request.body)))) return reply;
      return { message: 'ok' };
    });

    app.post<{ Params: NameParams }>('/api/v1/index/:name/search', { config }, async (request) => {
      const query = decodeBase64Edn(field(request.body, 'query'), 'query');
      const limit = (request.body as { limit?: unknown }).limit;
      if (limit !== undefined && typeof limit !== 'number') throw new AppError(400, 'field limit is incorrect: expected an integer');
      // `events` as Mirabelle answers; `truncated` says that more entries matched than `limit`.
      return service.searchIndex(request.params.name, query, limit);
    });

    app.get<{ Params: NameParams }>('/api/v1/index/:name/current-time', { config }, async (request) => ({
      'current-time': service.currentTime(request.params.name),
    }));

    await app.register(rawIngestRoutes(service, options));
  };
}

/** Remote write and OTLP: binary bodies of any content type (Prometheus sends `application/x-protobuf`). */
function rawIngestRoutes(service: StreamService, options: { bodyLimit: number }): FastifyPluginAsync {
  // A decompressed body may be several times its compressed size; past this it is refused, not buffered.
  const maxDecompressedBytes = options.bodyLimit * 8;
  return async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    app.post<{ Params: NameParams }>('/api/v1/prometheus/remote-write/:name', { config }, async (request, reply) => {
      const { name } = request.params;
      service.requirePushTarget(name);
      const events = decodeRemoteWrite(rawBody(request), { maxDecompressedBytes });
      service.metrics.remoteWriteSamples.inc(events.length);
      if (!(await ingest(service, reply, 'remote-write', name, events))) return reply;
      return reply.code(204).send();
    });

    app.post<{ Params: NameParams }>('/api/v1/opentelemetry/v1/traces/:name', { config }, async (request, reply) => {
      const { name } = request.params;
      service.requirePushTarget(name);
      const contentType = request.headers['content-type'] ?? '';
      const events = decodeOtlpTraces(rawBody(request), contentType, request.headers['content-encoding'], { maxDecompressedBytes });
      service.metrics.otlpSpans.inc(events.length);
      if (!(await ingest(service, reply, 'otlp', name, events))) return reply;
      const response = encodeOtlpResponse(contentType);
      return reply.code(200).type(response.contentType).send(response.body);
    });
  };
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
  if (value === undefined) throw new AppError(400, `field ${name} is missing`);
  return value;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes a base64 field holding EDN text; Node's decoder skips bad characters silently, so check first. */
function decodeBase64Edn(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new AppError(400, `field ${name} is incorrect: expected a non-blank base64 string`);
  const compact = value.replace(/\s+/g, '');
  if (!BASE64.test(compact)) throw new AppError(400, `field ${name} is incorrect: invalid base64`);
  try {
    return utf8.decode(Buffer.from(compact, 'base64'));
  } catch {
    throw new AppError(400, `field ${name} is incorrect: the base64 does not decode to UTF-8 text`);
  }
}
