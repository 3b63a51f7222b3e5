/**
 * The stream part of the process: builds the service (and with it the outputs), loads the streams (API streams, stream
 * files, index snapshots) before the server listens, and starts the file watcher and snapshot timer after.
 */
import type { PartFactory } from '../server/lifecycle.ts';
import type { Part } from '../server/part.ts';
import { StreamRepository } from './repository.ts';
import { streamOverviewRoutes } from './overview-routes.ts';
import { streamRoutes } from './routes.ts';
import { StreamService } from './service.ts';

export const createStreamPart: PartFactory = ({ config, db, metrics, logger }): Part => {
  const log = logger.child({ part: 'streams' });
  const service = new StreamService({
    settings: config.streams,
    configFile: config.file,
    repository: new StreamRepository(db),
    registry: metrics.registry,
    logger: log,
  });
  service.load();
  return {
    name: 'streams',
    routes: async (app) => {
      await app.register(streamRoutes(service, { bodyLimit: config.http.bodyLimit }));
      await app.register(streamOverviewRoutes(service));
    },
    start: () => service.start(),
    reload: (next) => service.reload(next),
    stop: () => service.stop(),
  };
};
