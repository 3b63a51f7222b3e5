/**
 * The stream part of the process: builds the service (and with it the outputs), loads the streams (API streams, stream
 * files, index snapshots) before the server listens, and starts the file watcher, snapshot timer and Riemann TCP
 * input after.
 */
import type { PartFactory } from '../server/lifecycle.ts';
import type { Part } from '../server/part.ts';
import { RiemannTcpServer } from './ingest/riemann-tcp.ts';
import { StreamRepository } from './repository.ts';
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
  const tcpSettings = config.streams.tcp;
  const tcp = tcpSettings
    ? new RiemannTcpServer({
        ...tcpSettings,
        registry: metrics.registry,
        logger: log,
        ingest: async (target, events) => {
          service.requirePushTarget(target);
          return service.ingest('riemann-tcp', target, events);
        },
      })
    : null;
  return {
    name: 'streams',
    routes: streamRoutes(service, { bodyLimit: config.http.bodyLimit }),
    start: async () => {
      await service.start();
      if (tcp) {
        const address = await tcp.listen();
        log.info({ riemannTcp: address, tls: tcpSettings?.tls !== undefined }, `Riemann TCP input listening on ${address.host}:${address.port}`);
      }
    },
    reload: async (next) => {
      if (JSON.stringify(next.streams.tcp) !== JSON.stringify(tcpSettings)) log.warn('changes to streams.tcp take effect at the next restart');
      await service.reload(next);
    },
    stop: async () => {
      await tcp?.close();
      await service.stop();
    },
  };
};
