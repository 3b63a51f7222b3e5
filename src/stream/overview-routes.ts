/**
 * The dashboard's stream read (docs/dashboard.md "Endpoints the page uses"): `GET /api/v1/overview/streams`, every stream with its
 * source, indented config, index size and current time, and its event and error counters, in one answer.
 */
import type { FastifyPluginAsync } from 'fastify';
import { registerPartRoutes } from '../server/errors.ts';
import { streamErrors } from './routes.ts';
import type { StreamService } from './service.ts';

export function streamOverviewRoutes(service: StreamService): FastifyPluginAsync {
  return async (root) =>
    registerPartRoutes(root, streamErrors, (app) => {
      app.get('/api/v1/overview/streams', async () => ({ now: Date.now(), streams: service.summaries() }));
    });
}
