/**
 * The stream API (Mirabelle-compatible, docs/http-api.md): streams, pushes, index search, Prometheus remote write and
 * OTLP traces. Each URL prefix is a scope with the part's error handling: stream domain errors map to statuses
 * by reason, errors are `{"error": ...}`, and a JSON body that fails its schema is worded as Mirabelle words it
 * (`field config is missing`). Push bodies are checked as an envelope only (`events` present); the events are
 * checked by the decoder as it reads them, so that a push costs no per-event schema validation (Fluent Bit's records
 * are validated by their schema, each refusal naming the record; the decoder reads their dates). Remote write and
 * OTLP take the raw body whatever its content type (their scopes swap the body parsers) and keep their
 * hand-written decoders.
 */
import type { Static } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Base64Error, decodeBase64Text } from '../../common/base64.ts';
import type { ErrorAnswer, PartErrors } from '../../server/error-answer.ts';
import { registerPartScope } from '../../server/errors.ts';
import { type NameParams, typed } from '../../server/typed-scope.ts';
import { routeSchemas } from './api-schemas.ts';
import { StreamError, type StreamErrorReason } from '../errors.ts';
import { type Event, nowNs } from '../event.ts';
import { eventsFromFluentBit } from '../ingest/fluentbit.ts';
import { acceptGzipBodies } from '../ingest/fluentbit-gzip.ts';
import { eventsFromJsonBody, JSON_PUSH_INPUT } from '../ingest/json.ts';
import { PushWarnings } from '../ingest/push-warnings.ts';
import { decodeOtlpTraces, encodeOtlpResponse } from '../ingest/otlp.ts';
import { decodeRemoteWrite } from '../ingest/remote-write.ts';
import { replyRefused, submitOrRefuse } from './submit.ts';
import type { LogRecord } from '../durability/event-log.ts';
import { jsonBodyRecord } from '../durability/journal-records.ts';
import { jsonBodyParser } from '../../server/json-body.ts';
import type { StreamService } from '../service.ts';

const STATUS_BY_REASON: Record<StreamErrorReason, number> = {
  invalid: 400,
  'not-found': 404,
  'too-large': 413,
  unsupported: 415,
  'action-failed': 500,
  owned: 409,
  unavailable: 503,
};

/** How the stream routes answer errors: Mirabelle's body shape, statuses by domain reason. */
export const streamErrors: PartErrors = {
  body: (error) => ({ error }),
  fromDomainError: (error) =>
    error instanceof StreamError ? { statusCode: STATUS_BY_REASON[error.reason], message: error.message } : undefined,
  fromValidationError: describeValidationError,
};

type NameRequest = FastifyRequest<{ Params: Static<typeof NameParams> }>;

export function streamRoutes(service: StreamService, options: { bodyLimit: number }): FastifyPluginAsync {
  const { metrics } = service;

  /** Hands the events to the gateway; when it refuses them for now, answers 503 (senders retry) and returns false. */
  const ingest = async (
    reply: FastifyReply,
    input: string,
    name: string,
    events: Event[],
    record?: LogRecord,
  ): Promise<boolean> => {
    const refusal = await submitOrRefuse(service.ingest, name, events, input, record);
    if (refusal !== null) replyRefused(reply, refusal);
    return refusal === null;
  };
  // A push to an unknown stream is a 404 whatever its body, as before bodies had schemas.
  const requirePushTarget = async (request: NameRequest) => service.requirePushTarget(request.params.name);

  return async (app) => {
    await registerPartScope(app, '/api/v1/stream', streamErrors, (base) => {
      keepRawJsonBodies(base);
      const scope = typed(base);
      scope.get('', { schema: routeSchemas.list }, async () => ({ streams: service.streamNames() }));

      scope.post('/:name', { schema: routeSchemas.add }, async (request) => {
        const warnings = await service.addStream(request.params.name, decodeBase64Edn(request.body.config, 'config'));
        // Clients that read only `message` keep working; `warnings` is there only when there is one.
        return warnings.length > 0 ? { message: 'stream added', warnings: [...warnings] } : { message: 'stream added' };
      });

      scope.get('/:name', { schema: routeSchemas.describe }, async (request) => {
        const { configText, currentTime } = await service.describeStream(request.params.name);
        return { config: Buffer.from(configText, 'utf8').toString('base64'), 'current-time': currentTime };
      });

      scope.delete('/:name', { schema: routeSchemas.remove }, async (request) => {
        await service.removeStream(request.params.name);
        return { message: 'stream removed' };
      });

      scope.put('/:name', { schema: routeSchemas.push, preValidation: requirePushTarget }, async (request, reply) => {
        const warnings = new PushWarnings();
        const name = request.params.name;
        const receivedAtNs = nowNs();
        const events = eventsFromJsonBody(request.body, service.nesting.eventDepth, warnings, receivedAtNs);
        // The journal keeps the body as received: encoding the events again would cost more than the push.
        const raw = rawJsonBodies.get(request);
        if (
          !(await ingest(
            reply,
            JSON_PUSH_INPUT,
            name,
            events,
            raw && jsonBodyRecord(name, raw, events.length, receivedAtNs),
          ))
        )
          return reply;
        const { time, metric } = warnings.counts;
        if (time + metric === 0) return { message: 'ok' };
        if (time > 0) metrics.ingestWarnings.inc({ field: 'time' }, time);
        if (metric > 0) metrics.ingestWarnings.inc({ field: 'metric' }, metric);
        return { message: 'ok', warnings: warnings.messages() };
      });
    });

    await registerPartScope(app, '/api/v1/index', streamErrors, (base) => {
      const scope = typed(base);
      // `events` as Mirabelle answers; `truncated` says that more entries matched than `limit`.
      scope.post('/:name/search', { schema: routeSchemas.search }, async (request) =>
        service.searchIndex(request.params.name, decodeBase64Edn(request.body.query, 'query'), request.body.limit),
      );

      scope.get('/:name/current-time', { schema: routeSchemas.currentTime }, async (request) => ({
        'current-time': await service.currentTime(request.params.name),
      }));
    });

    // A decompressed body may be several times its compressed size; past this it is refused, not buffered.
    const maxDecompressedBytes = options.bodyLimit * 8;
    await registerPartScope(app, '/api/v1/prometheus', streamErrors, (base) => {
      const scope = typed(base);
      acceptRawBodies(scope);
      scope.post('/remote-write/:name', { schema: routeSchemas.remoteWrite }, async (request, reply) => {
        const { name } = request.params;
        service.requirePushTarget(name);
        const events = decodeRemoteWrite(rawBody(request), { maxDecompressedBytes });
        metrics.remoteWriteSamples.inc(events.length);
        if (!(await ingest(reply, 'remote-write', name, events))) return reply;
        return reply.code(204).send();
      });
    });
    await registerPartScope(app, '/api/v1/opentelemetry', streamErrors, (base) => {
      const scope = typed(base);
      acceptRawBodies(scope);
      scope.post('/v1/traces/:name', { schema: routeSchemas.otlp }, async (request, reply) => {
        const { name } = request.params;
        service.requirePushTarget(name);
        const contentType = request.headers['content-type'] ?? '';
        const events = decodeOtlpTraces(rawBody(request), contentType, request.headers['content-encoding'], {
          maxDecompressedBytes,
          eventDepth: service.nesting.eventDepth,
        });
        metrics.otlpSpans.inc(events.length);
        if (!(await ingest(reply, 'otlp', name, events))) return reply;
        const response = encodeOtlpResponse(contentType);
        return reply.code(200).type(response.contentType).send(response.body);
      });
    });

    // Fluent Bit's `http` output with `format json`: a JSON array of records, gzip-compressed with `compress gzip`
    // (inflated within the body limit itself: the records are parsed as JSON in memory).
    await registerPartScope(app, '/api/v1/fluentbit', streamErrors, (base) => {
      const scope = typed(base);
      acceptGzipBodies(scope, {
        maxBytes: options.bodyLimit,
        refused: (reason) => metrics.refusedBodies.inc({ route: 'fluentbit', reason }),
      });
      scope.post(
        '/:name',
        { schema: routeSchemas.fluentbit, preValidation: requirePushTarget },
        async (request, reply) => {
          if (
            !(await ingest(
              reply,
              'fluentbit',
              request.params.name,
              eventsFromFluentBit(request.body, service.nesting.eventDepth),
            ))
          )
            return reply;
          return reply.code(200).send();
        },
      );
    });
  };
}

/** The bytes of each JSON body, parsed as every other route's are (src/stream/durability/journal-records.ts keeps
 *  them). */
const rawJsonBodies = new WeakMap<FastifyRequest, Buffer>();

function keepRawJsonBodies(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    rawJsonBodies.set(request, body as Buffer);
    jsonBodyParser(request, body, done);
  });
}

/** Remote write and OTLP take binary bodies of any content type (Prometheus sends `application/x-protobuf`). */
function acceptRawBodies(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
}

function rawBody(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

interface BodySchema {
  type?: string;
  title?: string;
  description?: string;
  required?: string[];
  properties?: Record<string, { description?: string }>;
  items?: BodySchema;
}

/** `records[2].date must be <the field's description>, got true`: the element and field at the issue's path. */
function describeArrayIssue(body: BodySchema, instancePath: string, received: unknown): string {
  const [index, field] = instancePath.slice(1).split('/');
  if (index === undefined || index === '' || !Array.isArray(received))
    return `the body must be ${body.description ?? 'an array'}`;
  const element: unknown = received[Number(index)];
  if (field === undefined)
    return `${body.title ?? 'items'}[${index}] must be ${body.items?.description ?? 'valid'}, got ${describeJson(element)}`;
  const value: unknown =
    typeof element === 'object' && element !== null ? (element as Record<string, unknown>)[field] : undefined;
  return `${body.title ?? 'items'}[${index}].${field} must be ${body.items?.properties?.[field]?.description ?? 'valid'}, got ${describeJson(value)}`;
}

function describeJson(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : JSON.stringify(value);
}

interface SchemaIssue {
  keyword?: string;
  instancePath?: string;
  params?: { requiredProperties?: string[] };
}

/**
 * A body schema failure in Mirabelle's words: `field x is missing` (also for a body that is not an object: its
 * first required field is missing), `field x is incorrect: expected <the field's description>`.
 */
function describeValidationError(error: FastifyError, request: FastifyRequest): ErrorAnswer {
  const issue = (error.validation?.[0] ?? {}) as SchemaIssue;
  const body = request.routeOptions.schema?.body as BodySchema | undefined;
  if (error.validationContext !== 'body' || body === undefined)
    return { statusCode: 400, message: `Invalid request: ${error.message}` };
  if (body.type === 'array')
    return { statusCode: 400, message: describeArrayIssue(body, issue.instancePath ?? '', request.body) };
  // Read the body itself rather than the validator's report: validators word a missing property differently.
  const fields =
    request.body !== null && typeof request.body === 'object' ? (request.body as Record<string, unknown>) : {};
  const missing = body.required?.find((name) => fields[name] === undefined);
  if (missing !== undefined) return { statusCode: 400, message: `field ${missing} is missing` };
  const field = (issue.instancePath ?? '').slice(1).split('/')[0] ?? '';
  const expected = body.properties?.[field]?.description;
  return { statusCode: 400, message: `field ${field} is incorrect${expected ? `: expected ${expected}` : ''}` };
}

/** Decodes a base64 field holding EDN text (src/common/base64.ts), a 400 naming the field when it holds none. */
function decodeBase64Edn(value: string, name: string): string {
  try {
    return decodeBase64Text(value, name);
  } catch (error) {
    if (error instanceof Base64Error) throw new StreamError('invalid', `field ${name} is incorrect: ${error.problem}`);
    throw error;
  }
}
