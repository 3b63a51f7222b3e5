/**
 * The stream part of the process: builds the service (and with it the outputs), loads the streams (API streams, stream
 * files, index snapshots) before the server listens, and starts the file watcher and snapshot timer after.
 */
import type { PartFactoryContext } from '../server/lifecycle.ts';
import type { Part } from '../server/part.ts';
import type { IngestGateway } from './ingest-gateway.ts';
import { StreamRepository } from './repository.ts';
import { streamRoutes } from './routes.ts';
import { StreamService } from './service.ts';

export interface StreamSeams {
  /** Receives the ingest gateway, the seam through which other parts push events (src/parts.ts). */
  onIngest?: (gateway: IngestGateway) => void;
}

export function createStreamPart({ config, db, metrics, logger }: PartFactoryContext, seams: StreamSeams = {}): Part {
  const log = logger.child({ part: 'streams' });
  const service = new StreamService({
    settings: config.streams,
    repository: new StreamRepository(db),
    registry: metrics.registry,
    logger: log,
  });
  service.load();
  seams.onIngest?.(service.gateway);
  return {
    name: 'streams',
    routes: streamRoutes(service, { bodyLimit: config.http.bodyLimit }),
    start: () => service.start(),
    reload: (next) => service.reload(next),
    stop: () => service.stop(),
  };
}
