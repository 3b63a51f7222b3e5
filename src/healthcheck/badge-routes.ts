/**
 * `GET /api/v1/badge/<name>/status.svg` and `/api/v1/badge/<name>/uptime-<24h|7d|30d>.svg` (docs/http-api.md,
 * "Badges"): SVG images of a check's results, cacheable for 60 s so that a page embedding them does not ask again
 * on every view. Registered with the result API and removed with it (`http.disable-result-api`); an unknown check
 * is the API's 404.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { registerPartRoutes } from '../server/errors.ts';
import { statusBadge, UPTIME_BADGE_WINDOWS, uptimeBadge } from './badges.ts';
import { healthcheckErrors } from './routes.ts';
import type { CheckResult } from './result-types.ts';
import { HealthcheckError, type HealthcheckService } from './service.ts';

const CACHE_SECONDS = 60;

function sendSvg(reply: FastifyReply, svg: string): FastifyReply {
  return reply.type('image/svg+xml; charset=utf-8').header('cache-control', `public, max-age=${CACHE_SECONDS}`).send(svg);
}

/** The latest result of a check that exists; undefined before its first run. */
function latestResult(service: HealthcheckService, name: string): CheckResult | undefined {
  try {
    return service.result(name);
  } catch (error) {
    if (error instanceof HealthcheckError && error.reason === 'result-not-found') return undefined;
    throw error;
  }
}

export function badgeRoutes(service: HealthcheckService): FastifyPluginAsync {
  return async (root) => {
    await registerPartRoutes(root, healthcheckErrors, (app) => {
      app.get<{ Params: { name: string } }>('/api/v1/badge/:name/status.svg', async (request, reply) => {
        const { name } = request.params;
        service.get(name);
        return sendSvg(reply, statusBadge(name, latestResult(service, name)));
      });
      for (const window of UPTIME_BADGE_WINDOWS) {
        app.get<{ Params: { name: string } }>(`/api/v1/badge/:name/uptime-${window}.svg`, async (request, reply) =>
          sendSvg(reply, uptimeBadge(window, service.uptime(request.params.name)[window])),
        );
      }
    });
  };
}
