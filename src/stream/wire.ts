/**
 * The stream part's HTTP wire types (docs/dashboard.md "Endpoints the page uses"): a stream's summary, which
 * `GET /api/v1/overview/streams` serializes with (src/stream/http/overview-routes.ts) and the dashboard imports as a
 * type (src/frontend/app/api.ts), so this file imports nothing but TypeBox.
 */
import { Type } from '@sinclair/typebox';
import { ref, wire } from '../common/wire.ts';

export const StreamSummary = wire(
  'StreamSummary',
  Type.Object({
    name: Type.String(),
    source: Type.Union([Type.Literal('api'), Type.Literal('file'), Type.Literal('persisted')]),
    config: Type.String({ description: 'the config printed back as indented EDN' }),
    description: Type.Unsafe<string | null>({ type: 'string', nullable: true }),
    default: Type.Boolean(),
    'index-size': Type.Integer(),
    'current-time': Type.Number({ description: 'epoch nanoseconds of the newest event the index saw (0 before any)' }),
    events: Type.Integer({ description: 'events pushed since the service started' }),
    errors: Type.Integer({ description: 'action errors since the service started' }),
  }),
);

/** `GET /api/v1/overview/streams`. */
export const StreamSummaries = Type.Object({
  now: Type.Integer({ description: 'Unix milliseconds' }),
  streams: Type.Array(ref(StreamSummary)),
});

/** The wire types to add to fastify (src/server/wire-schemas.ts). */
export const STREAM_WIRE_TYPES = [StreamSummary];
