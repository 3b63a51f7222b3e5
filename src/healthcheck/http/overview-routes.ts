/**
 * The dashboard's healthcheck reads (docs/dashboard.md "Endpoints the page uses"), under `/api/v1/overview/` so that
 * they cannot shadow a check name in the parametric result routes:
 * - `GET  /api/v1/overview/healthchecks`: every check with its latest result and uptime ratios, in one answer;
 * - `POST /api/v1/overview/recent-results` `{"names": [...], "limit": n}`: the last results of the checks on
 *   screen, in one query (a page of the list, not one request per check);
 * - `GET  /api/v1/overview/durations/:name?window=24h|7d|30d`: response-time buckets from the aggregates.
 * Registered with the result API, and removed with it (`http.disable-result-api`). Answers are serialized with
 * their wire types (src/healthcheck/wire.ts) and compressed when the client accepts it (the overview of 12,000
 * checks is megabytes of JSON).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { compressAnswers } from '../../server/compression.ts';
import { HttpError, registerPartRoutes } from '../../server/errors.ts';
import { messageError, nameParams, operation } from '../../server/openapi.ts';
import { addWireSchemas } from '../../server/wire-schemas.ts';
import { healthcheckErrors } from '../errors.ts';
import type { SeriesWindow } from '../result-types.ts';
import type { HealthcheckService } from '../service.ts';
import { Durations, HEALTHCHECK_WIRE_TYPES, HealthcheckOverview, RecentResults } from '../wire.ts';

/** A page of the list asks for its strips at once; more names than this is a client bug, not a page. */
const MAX_RECENT_NAMES = 500;
const WINDOWS: readonly SeriesWindow[] = ['24h', '7d', '30d'];

const recentBody = Type.Object(
  {
    names: Type.Array(Type.String(), { maxItems: MAX_RECENT_NAMES }),
    limit: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

const DASHBOARD =
  'A read of the dashboard (docs/dashboard.md "Endpoints the page uses"), compressed (br, gzip) over 1 KiB when the client accepts it.';

export function healthcheckOverviewRoutes(service: HealthcheckService): FastifyPluginAsync {
  return async (root) => {
    await compressAnswers(root);
    addWireSchemas(root, HEALTHCHECK_WIRE_TYPES);
    await registerPartRoutes(root, healthcheckErrors, (app) => {
      const overviewDoc = operation({
        summary: 'Every check with its latest result and uptime ratios',
        description: DASHBOARD,
        tags: ['healthchecks'],
        responses: { 200: 'every check, sorted by name' },
      });
      app.get(
        '/api/v1/overview/healthchecks',
        { schema: { response: { 200: HealthcheckOverview }, ...overviewDoc } },
        async () => ({ now: Math.floor(Date.now() / 1000), checks: service.overview() }),
      );

      const recentDoc = operation({
        summary: 'The last results of the named checks',
        description: `${DASHBOARD} Unknown names are left out.`,
        tags: ['healthchecks'],
        responses: {
          200: 'the last `limit` results of each check, in one query',
          400: messageError(`an invalid body, or more than ${MAX_RECENT_NAMES} names`),
        },
      });
      app.post<{ Body: { names: string[]; limit?: number } }>(
        '/api/v1/overview/recent-results',
        { schema: { body: recentBody, response: { 200: RecentResults }, ...recentDoc } },
        async (request) => {
          const { names, limit } = request.body;
          const recent = service.recentResults(names, Math.min(limit ?? service.historySize, service.historySize));
          return { result: Object.fromEntries(recent) };
        },
      );

      const durationsDoc = operation({
        summary: 'Response-time buckets of a check',
        description: `${DASHBOARD} Hourly buckets for 24h and 7d, daily ones for 30d.`,
        tags: ['healthchecks'],
        params: nameParams('the check'),
        querystring: Type.Object({
          window: Type.Optional(Type.Unsafe<SeriesWindow>({ type: 'string', enum: [...WINDOWS], default: '24h' })),
        }),
        responses: {
          200: 'the buckets of the window',
          400: messageError('another window: `Invalid window "<text>": expected one of 24h, 7d, 30d`'),
          404: messageError('unknown check: `Healthcheck <name> not found`'),
        },
      });
      app.get<{ Params: { name: string }; Querystring: { window?: string } }>(
        '/api/v1/overview/durations/:name',
        { schema: { response: { 200: Durations }, ...durationsDoc } },
        async (request) => {
          const { name } = request.params;
          const window = (request.query.window ?? '24h') as SeriesWindow;
          if (!WINDOWS.includes(window))
            throw new HttpError(
              400,
              `Invalid window ${JSON.stringify(request.query.window)}: expected one of ${WINDOWS.join(', ')}`,
            );
          return { name, window, buckets: service.durationSeries(name, window) };
        },
      );
    });
  };
}
