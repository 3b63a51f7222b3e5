/**
 * The healthcheck part: its service (checks, scheduler, results), its routes, and the lifecycle steps the
 * process drives. Stored API checks and the latest results are loaded when the part is built, so the result
 * API shows them as soon as the server listens; checks start running at `start`.
 */
import type { PartFactory } from '../server/lifecycle.ts';
import type { Part } from '../server/part.ts';
import { healthcheckOverviewRoutes } from './overview-routes.ts';
import { healthcheckRoutes } from './routes.ts';
import { HealthcheckService } from './service.ts';

export const createHealthcheckPart: PartFactory = async ({ config, db, metrics, logger }): Promise<Part> => {
  const service = await HealthcheckService.create({ config, db, registry: metrics.registry, logger: logger.child({ part: 'healthchecks' }) });
  return {
    name: 'healthchecks',
    routes: async (app) => {
      await app.register(healthcheckRoutes(service, { healthcheckApi: !config.http.disableHealthcheckApi, resultApi: !config.http.disableResultApi }));
      if (!config.http.disableResultApi) await app.register(healthcheckOverviewRoutes(service));
    },
    start: async () => service.start(),
    reload: (next) => service.reload(next),
    stop: () => service.stop(),
  };
};
