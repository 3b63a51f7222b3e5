/**
 * `GET /api/v1/badge/<name>/status.svg` and `/api/v1/badge/<name>/uptime-<24h|7d|30d>.svg` (docs/http-api.md,
 * "Badges"): SVG images of a check's results, cacheable for 60 s so that a page embedding them does not ask again
 * on every view. Registered with the result API and removed with it (`http.disable-result-api`); an unknown check
 * is the API's 404.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { holdsScope } from '../../server/credentials.ts';
import { registerPartRoutes } from '../../server/errors.ts';
import { messageError, nameParams, operation } from '../../server/openapi.ts';
import { statusBadge, UPTIME_BADGE_WINDOWS, uptimeBadge } from './badges.ts';
import { healthcheckErrors } from '../errors.ts';
import type { CheckResult } from '../result-types.ts';
import { HealthcheckError, notFound } from '../errors.ts';
import type { CheckDefinition } from '../kinds/index.ts';
import type { HealthcheckService } from '../service.ts';

const CACHE_SECONDS = 60;
/** Badges may be public (`http.public: [badges]`): an SVG opened on its own must not run anything nor be sniffed
 *  into another type (docs/http-api.md "Credentials"). */
const SVG_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
};

function sendSvg(reply: FastifyReply, svg: string): FastifyReply {
  return reply
    .type('image/svg+xml; charset=utf-8')
    .header('cache-control', `public, max-age=${CACHE_SECONDS}`)
    .headers(SVG_HEADERS)
    .send(svg);
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

/** The OpenAPI documentation of a badge route (src/server/openapi.ts); the SVG is a string, never serialized. */
function badgeDoc(summary: string, description: string) {
  return operation({
    summary,
    description: `${description} Drawn as shields.io draws its badges (docs/http-api.md "Badges").`,
    tags: ['healthchecks'],
    params: nameParams('the check'),
    responses: {
      200: {
        description: 'the badge',
        schema: Type.String(),
        contentTypes: ['image/svg+xml'],
        headers: { 'Cache-Control': `\`public, max-age=${CACHE_SECONDS}\`: cacheable for ${CACHE_SECONDS} s` },
      },
      404: messageError('unknown check: `Healthcheck <name> not found`'),
    },
  });
}

/**
 * Refuses, as an unknown check, a badge a reader without the scope `read` may not see: those answer under
 * `http.public: [badges]` only for the checks that `isPublic` says (a public status page shows it, or it says
 * `badge: public`), so that a name guessed is no way to learn that a check exists or how it fares
 * (docs/hardening.md, "Public pages and badges").
 */
function mayShow(
  service: HealthcheckService,
  isPublic: (def: CheckDefinition) => boolean,
  request: FastifyRequest,
  name: string,
): void {
  if (holdsScope(request, 'read')) return;
  const def = service.registry.get(name)?.def;
  if (def === undefined || !isPublic(def)) throw notFound(name);
}

export function badgeRoutes(
  service: HealthcheckService,
  isPublic: (def: CheckDefinition) => boolean,
): FastifyPluginAsync {
  return async (root) => {
    await registerPartRoutes(root, healthcheckErrors, (app) => {
      const statusDoc = badgeDoc(
        'Status badge of a check',
        'The check\'s name and its state (docs/checks.md "States"): `up` (green; a pending check too), `degraded` (yellow), `down` (red), `maintenance` (blue), `paused` (grey); `not run yet` (grey) before its first result.',
      );
      app.get<{ Params: { name: string } }>(
        '/api/v1/badge/:name/status.svg',
        { schema: statusDoc },
        async (request, reply) => {
          const { name } = request.params;
          mayShow(service, isPublic, request, name);
          service.get(name);
          const state = service.stateApi.stateOf(name)?.state ?? 'pending';
          return sendSvg(reply, await statusBadge(name, latestResult(service, name), state));
        },
      );
      for (const window of UPTIME_BADGE_WINDOWS) {
        const uptimeDoc = badgeDoc(
          `Uptime badge of a check over ${window}`,
          `The share of successful runs over ${window}, coloured from green (>= 99.9 %) to red (< 90 %); \`no data\` (grey) without runs.`,
        );
        app.get<{ Params: { name: string } }>(
          `/api/v1/badge/:name/uptime-${window}.svg`,
          { schema: uptimeDoc },
          async (request, reply) => {
            mayShow(service, isPublic, request, request.params.name);
            return sendSvg(reply, await uptimeBadge(window, service.uptime(request.params.name)[window]));
          },
        );
      }
    });
  };
}
