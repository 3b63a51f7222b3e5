/**
 * The dashboard's stream read (docs/dashboard.md "Endpoints the page uses"): `GET /api/v1/overview/streams`, every
 * stream with its source, indented config, index size and current time, and its event and error counters, in one answer
 * (serialized with its wire type, src/stream/wire.ts, and compressed when the client accepts it).
 */
import type { FastifyPluginAsync } from 'fastify';
import { compressAnswers } from '../../server/compression.ts';
import { registerPartRoutes } from '../../server/errors.ts';
import { operation } from '../../server/openapi.ts';
import { addWireSchemas } from '../../server/wire-schemas.ts';
import { streamErrors } from './routes.ts';
import type { StreamService } from '../service.ts';
import { STREAM_WIRE_TYPES, StreamSummaries } from '../wire.ts';

const summariesDoc = operation({
  summary: 'Every stream with its config, index size and counters',
  description:
    'A read of the dashboard (docs/dashboard.md "Endpoints the page uses"), compressed (br, gzip) over 1 KiB when the client accepts it.',
  tags: ['streams'],
  responses: { 200: 'every stream' },
});

export function streamOverviewRoutes(service: StreamService): FastifyPluginAsync {
  return async (root) => {
    await compressAnswers(root);
    addWireSchemas(root, STREAM_WIRE_TYPES);
    await registerPartRoutes(root, streamErrors, (app) => {
      app.get(
        '/api/v1/overview/streams',
        { schema: { response: { 200: StreamSummaries }, ...summariesDoc } },
        async () => ({ now: Date.now(), streams: await service.summaries() }),
      );
    });
  };
}
