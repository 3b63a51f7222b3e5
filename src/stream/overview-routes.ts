/**
 * The dashboard's stream read (docs/dashboard.md "Endpoints the page uses"): `GET /api/v1/overview/streams`, every stream with its
 * source, indented config, index size and current time, and its event and error counters, in one answer
 * (compressed when the client accepts it).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { compressAnswers } from '../server/compression.ts';
import { registerPartRoutes } from '../server/errors.ts';
import { json, operation } from '../server/openapi.ts';
import { streamErrors } from './routes.ts';
import type { StreamService } from './service.ts';

// The answer's shape, for the OpenAPI document only (src/server/openapi.ts): the route declares no response
// schema, so its answer is written by JSON.stringify as it always was.
const Summaries = Type.Object({
  now: Type.Integer({ description: 'Unix milliseconds' }),
  streams: Type.Array(
    Type.Object({
      name: Type.String(),
      source: Type.Union([Type.Literal('api'), Type.Literal('file'), Type.Literal('persisted')]),
      config: Type.String({ description: 'the config printed back as indented EDN' }),
      description: Type.Union([Type.String(), Type.Null()]),
      default: Type.Boolean(),
      'index-size': Type.Integer(),
      'current-time': Type.Number({ description: 'epoch nanoseconds of the newest event the index saw (0 before any)' }),
      events: Type.Integer({ description: 'events pushed since the service started' }),
      errors: Type.Integer({ description: 'action errors since the service started' }),
    }),
  ),
});

const summariesDoc = operation({
  summary: 'Every stream with its config, index size and counters',
  description: 'A read of the dashboard (docs/dashboard.md "Endpoints the page uses"), compressed (br, gzip) over 1 KiB when the client accepts it.',
  tags: ['streams'],
  responses: { 200: json('every stream', Summaries) },
});

export function streamOverviewRoutes(service: StreamService): FastifyPluginAsync {
  return async (root) => {
    await compressAnswers(root);
    await registerPartRoutes(root, streamErrors, (app) => {
      app.get('/api/v1/overview/streams', { schema: summariesDoc }, async () => ({ now: Date.now(), streams: await service.summaries() }));
    });
  };
}
