/**
 * The schemas of the stream API (routes.ts): what fastify validates (params, the envelopes of the bodies it
 * checks) and, through `operation()`, the OpenAPI documentation of every route, answers and errors included.
 * They are data the routes are registered with, apart from how the routes answer.
 */
import { Type } from '@fastify/type-provider-typebox';
import { type Answer, operation, StreamErrorBody, streamError } from '../../server/openapi.ts';
import { NameParams } from '../../server/typed-scope.ts';

const Base64Edn = Type.String({ pattern: '\\S', description: 'a non-blank base64 string' });
const Message = Type.Object({ message: Type.String() });
/** An answer that may carry warnings: what was accepted but is likely a mistake (docs/http-api.md). */
const MessageWithWarnings = Type.Object({ message: Type.String(), warnings: Type.Optional(Type.Array(Type.String())) });

/*
 * The OpenAPI documentation of the routes (src/server/openapi.ts) sits beside their schemas: `operation()` adds
 * only keys fastify ignores. The bodies that the ingest routes read by hand (events, protobuf, records) are
 * documented there too, never declared as `body`: a body schema would validate them, and refuse in other words.
 * Fluent Bit's records are the exception: their schema is the route's `body`, worded by `describeArrayIssue`
 * (routes.ts).
 */
const unknownStream = streamError('unknown stream: `Stream <name> not found`');
const owned = streamError(
  'a stream of a stream file, which the API may not change: `stream <name> comes from the file <path>; change it there`',
);
const backlogFull: Answer = {
  description:
    'too many events waiting to be processed (`streams.max-pending-events`), or the journal cannot be written: retry later',
  schema: StreamErrorBody,
  headers: { 'Retry-After': '1 (seconds)' },
};
const actionFailed = streamError(
  'an action threw on an event: `Stream <stream>: <error message>`; the other events were processed',
);
const DEFAULT_STREAM = 'The name `default` always exists: it sends to every stream whose config has `:default true`.';

/** An event as pushed: free-form keys, of which these have a meaning (docs/stream-language.md "Events"). */
const PushedEvent = Type.Object(
  {
    time: Type.Optional(
      Type.Union([Type.Number(), Type.String(), Type.Null(), Type.Boolean()], {
        description: 'epoch nanoseconds, or an RFC 3339 date; missing, null or false: now',
      }),
    ),
    ttl: Type.Optional(Type.Number({ description: 'seconds it stays valid (default 120)' })),
    metric: Type.Optional(Type.Number()),
    host: Type.Optional(Type.String()),
    service: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    state: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    tags: Type.Optional(Type.Array(Type.String())),
    attributes: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true, title: 'Event' },
);
const Binary = Type.String({ format: 'binary' });
/** Fluent Bit's `http` output with `format json`: validated by fastify, each refusal naming the record
 *  (`records[2] must be an object, got a string`, see `describeValidationError` in routes.ts). */
const FluentBitRecords = Type.Array(
  Type.Object(
    {
      date: Type.Optional(
        Type.Union([Type.Number(), Type.String(), Type.Null()], {
          description: 'epoch seconds (json_date_format double or epoch) or an ISO 8601 date',
        }),
      ),
    },
    { additionalProperties: true, description: 'an object (one Fluent Bit record)' },
  ),
  { title: 'records', description: 'a JSON array of Fluent Bit records (http output, format json)' },
);

export const routeSchemas = {
  list: {
    response: { 200: Type.Object({ streams: Type.Array(Type.String()) }) },
    ...operation({ summary: 'List the streams', tags: ['streams'], responses: { 200: 'the stream names' } }),
  },
  add: {
    params: NameParams,
    body: Type.Object({ config: Base64Edn }),
    response: { 200: MessageWithWarnings },
    ...operation({
      summary: 'Add or replace a stream',
      description:
        "Body: `config`, the base64 of the stream's EDN config (docs/stream-language.md). The same config again keeps the stream's state; another replaces it.",
      tags: ['streams'],
      responses: {
        200: '`stream added`, with `warnings` when the config has likely mistakes',
        400: streamError(
          "an invalid name, `config` missing or not base64 EDN text, not a valid stream config (the compiler's message)",
        ),
        409: owned,
      },
    }),
  },
  describe: {
    params: NameParams,
    response: { 200: Type.Object({ config: Type.String(), 'current-time': Type.Number() }) },
    ...operation({
      summary: 'Get a stream',
      tags: ['streams'],
      responses: { 200: 'the base64 of its EDN config, and its index clock (epoch nanoseconds)', 404: unknownStream },
    }),
  },
  remove: {
    params: NameParams,
    response: { 200: Message },
    ...operation({
      summary: 'Remove a stream',
      tags: ['streams'],
      responses: { 200: '`stream removed`', 404: unknownStream, 409: owned },
    }),
  },
  push: {
    params: NameParams,
    body: Type.Object({ events: Type.Unknown({ description: 'an array of event objects' }) }),
    response: { 200: MessageWithWarnings },
    ...operation({
      summary: 'Push events into a stream',
      description: `The answer waits until the events have been processed. ${DEFAULT_STREAM}`,
      tags: ['ingest'],
      body: { schema: Type.Object({ events: Type.Array(PushedEvent) }) },
      responses: {
        200: '`ok`, with `warnings` for likely mistakes (a time in epoch seconds or milliseconds, a numeric string metric)',
        400: streamError(
          '`events` missing or not an array of objects, a bad `time` or `ttl` (the message names the event)',
        ),
        404: unknownStream,
        500: actionFailed,
        503: backlogFull,
      },
    }),
  },
  search: {
    params: NameParams,
    body: Type.Object({ query: Base64Edn, limit: Type.Optional(Type.Integer({ description: 'an integer' })) }),
    response: { 200: Type.Object({ events: Type.Array(Type.Unknown()), truncated: Type.Boolean() }) },
    ...operation({
      summary: "Search a stream's index",
      description:
        'Body: `query`, the base64 of an EDN where-condition such as `[:= :service "api"]`; `limit` caps the answer.',
      tags: ['streams'],
      responses: {
        200: 'the matching events of the index, in no particular order; `truncated` when more matched than `limit`',
        400: streamError(
          '`query` missing or not base64 text (`field query is ...`), not EDN or not a condition (`Invalid query: ...`)',
        ),
        404: unknownStream,
      },
    }),
  },
  currentTime: {
    params: NameParams,
    response: { 200: Type.Object({ 'current-time': Type.Number() }) },
    ...operation({
      summary: "A stream's index clock",
      tags: ['streams'],
      responses: { 200: 'the newest `:time` the index has seen, epoch nanoseconds (0 before any)', 404: unknownStream },
    }),
  },
  remoteWrite: {
    params: NameParams,
    ...operation({
      summary: 'Prometheus remote write',
      description: `Prometheus remote-write 1.0: a snappy-compressed (block format) protobuf \`WriteRequest\`, whatever the Content-Type. One event per sample (docs/stream-language.md "Remote-write samples"). ${DEFAULT_STREAM}`,
      tags: ['ingest'],
      body: { schema: Binary, contentTypes: ['application/x-protobuf'] },
      responses: {
        204: 'processed',
        400: streamError('not snappy, or not a `WriteRequest`'),
        404: unknownStream,
        413: streamError('inflates past 8 x `http.body-limit`'),
        500: actionFailed,
        503: backlogFull,
      },
    }),
  },
  otlp: {
    params: NameParams,
    ...operation({
      summary: 'OTLP/HTTP traces',
      description: `An OTLP \`ExportTraceServiceRequest\`, as protobuf or OTLP/JSON, optionally \`Content-Encoding: gzip\`. One event per span (docs/stream-language.md "OTLP spans"). ${DEFAULT_STREAM}`,
      tags: ['ingest'],
      body: {
        content: {
          'application/x-protobuf': Binary,
          'application/protobuf': Binary,
          'application/json': Type.Object(
            {},
            { additionalProperties: true, description: 'an ExportTraceServiceRequest in OTLP/JSON' },
          ),
        },
      },
      responses: {
        200: {
          description: "processed: an empty `ExportTraceServiceResponse` in the request's encoding (`{}` for JSON)",
          content: { 'application/x-protobuf': Binary, 'application/json': Type.Object({}) },
        },
        400: streamError('malformed: bad gzip, protobuf or JSON'),
        404: unknownStream,
        413: streamError('over 8 x `http.body-limit`, raw or inflated'),
        415: streamError('another content type or content encoding'),
        500: actionFailed,
        503: backlogFull,
      },
    }),
  },
  fluentbit: {
    params: NameParams,
    body: FluentBitRecords,
    ...operation({
      summary: 'Fluent Bit records',
      description: `What Fluent Bit's \`http\` output sends with \`format json\`, optionally \`Content-Encoding: gzip\` (\`compress gzip\`). Each record becomes an event; its \`date\` becomes \`time\`. ${DEFAULT_STREAM}`,
      tags: ['ingest'],
      responses: {
        200: 'processed (empty body)',
        400: streamError(
          'not a JSON array of objects, a `date` that is not a time (the message names the record), or broken gzip',
        ),
        404: unknownStream,
        413: streamError('inflates past `http.body-limit`'),
        415: streamError('another content encoding'),
        500: actionFailed,
        503: backlogFull,
      },
    }),
  },
} as const;
