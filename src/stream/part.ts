/**
 * The stream part of the process: builds the service (and with it the outputs), loads the streams (API streams, stream
 * files, index snapshots) before the server listens, and starts the file watcher and snapshot timer after.
 */
import type { PartFactory } from '../server/lifecycle.ts';
import type { Part } from '../server/part.ts';
import { createAsyncQueues } from './async-queues.ts';
import { createPubSub, pubsubRoutes } from './pubsub/routes.ts';
import { StreamRepository } from './repository.ts';
import { streamRoutes } from './routes.ts';
import { StreamService } from './service.ts';

export const createStreamPart: PartFactory = ({ config, db, metrics, logger }): Part => {
  const log = logger.child({ part: 'streams' });
  // Built once, like the outputs: changes to streams.async-queues and streams.websocket apply at restart.
  const pubsub = createPubSub(config.streams.websocketMaxBufferedBytes, metrics.registry);
  const asyncQueues = createAsyncQueues(config.streams.asyncQueues, metrics.registry);
  const service = new StreamService({
    settings: config.streams,
    repository: new StreamRepository(db),
    registry: metrics.registry,
    logger: log,
    pubsub,
    asyncQueues,
  });
  service.load();
  return {
    name: 'streams',
    routes: async (app) => {
      await app.register(streamRoutes(service, { bodyLimit: config.http.bodyLimit }));
      await app.register(pubsubRoutes(pubsub, metrics.registry, { maxConnections: config.streams.websocketMaxConnections }));
    },
    start: () => service.start(),
    reload: (next) => {
      const { asyncQueues: queues, websocketMaxBufferedBytes, websocketMaxConnections } = config.streams;
      const changed =
        JSON.stringify(next.streams.asyncQueues) !== JSON.stringify(queues) ||
        next.streams.websocketMaxBufferedBytes !== websocketMaxBufferedBytes ||
        next.streams.websocketMaxConnections !== websocketMaxConnections;
      if (changed) log.warn('changes to streams.async-queues and streams.websocket take effect at the next restart');
      return service.reload(next);
    },
    stop: async () => {
      // What async queues still hold reaches the outputs before they flush.
      asyncQueues.drain();
      await service.stop();
    },
  };
};
