/**
 * The stream part of the process: builds the service (and with it the outputs), loads the streams (API streams, stream
 * files, index snapshots) before the server listens, and starts the file watcher, snapshot timer and Riemann TCP
 * input after.
 */
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Part, PartContext } from '../server/part.ts';
import { createAsyncQueues } from './engine/async-queues.ts';
import { StreamError } from './errors.ts';
import { RiemannTcpServer } from './ingest/riemann-tcp.ts';
import { submitOrRefuse } from './http/submit.ts';
import { createPubSub, pubsubRoutes } from './pubsub/routes.ts';
import { StreamRepository } from './durability/repository.ts';
import { streamOverviewRoutes } from './http/overview-routes.ts';
import { streamRoutes } from './http/routes.ts';
import type { EventIngest, LocalChannels, StreamHost, StreamPlacement } from './partition/placement.ts';
import { StreamService } from './service.ts';
import type { StreamSettings } from './settings.ts';

export interface StreamSeams {
  /** Receives the ingest seam through which other parts push events (src/process/parts.ts). */
  onIngest?: (ingest: EventIngest) => void;
  /** Where the streams run when not in this process (a cluster's partitions, src/stream/partition/placement.ts), given
   * the
   *  service and its websocket channels. */
  placement?: (host: StreamHost, pubsub: LocalChannels) => StreamPlacement;
}

/** The stream part's share of the config (src/process/parts.ts). */
export interface StreamPartSettings {
  readonly streams: StreamSettings;
  /** `data-dir`, which holds the journal (fixed at start). */
  readonly dataDir: string;
  /** `http.body-limit`, the largest body the event inputs take (fixed at start). */
  readonly bodyLimit: number;
}

export async function createStreamPart(
  { settings: config, db, metrics, logger }: PartContext<StreamPartSettings>,
  seams: StreamSeams = {},
): Promise<Part<StreamPartSettings>> {
  const log = logger.child({ part: 'streams' });
  // Built once, like the outputs: changes to streams.async-queues and streams.websocket apply at restart.
  const pubsub = createPubSub(config.streams.websocketMaxBufferedBytes, metrics.registry);
  const asyncQueues = createAsyncQueues(config.streams.asyncQueues, metrics.registry);
  const place = seams.placement;
  const service = new StreamService({
    settings: config.streams,
    repository: new StreamRepository(db),
    registry: metrics.registry,
    logger: log,
    pubsub,
    asyncQueues,
    journalDirectory: join(config.dataDir, 'journal'),
    ...(place ? { placement: (host: StreamHost) => place(host, pubsub) } : {}),
  });
  await service.load();
  seams.onIngest?.({
    submit: (target, events, input, record) => service.ingest.submit(target, events, input, record),
    get pending() {
      return service.ingest.pending;
    },
    get maxPending() {
      return service.ingest.maxPending;
    },
  });
  const tcpSettings = config.streams.tcp;
  const tcp = tcpSettings
    ? new RiemannTcpServer({
        ...tcpSettings,
        registry: metrics.registry,
        logger: log,
        ingest: async (target, events) => {
          service.requirePushTarget(target);
          const refusal = await submitOrRefuse(service.ingest, target, events, 'riemann-tcp');
          // A full backlog pauses the connection until it drains; a batch the journal refused is an error reply.
          if (refusal?.reason === 'full') return false;
          if (refusal !== null) throw new StreamError('unavailable', refusal.message);
          return true;
        },
      })
    : null;
  return {
    name: 'streams',
    routes: async (app) => {
      await app.register(streamRoutes(service, { bodyLimit: config.bodyLimit }));
      await app.register(
        pubsubRoutes(pubsub, metrics.registry, {
          maxConnections: config.streams.websocketMaxConnections,
          nesting: service.nesting,
        }),
      );
      await app.register(streamOverviewRoutes(service));
    },
    start: async () => {
      await service.start();
      if (tcp) {
        const address = await tcp.listen();
        log.info(
          { riemannTcp: address, tls: tcpSettings?.tls !== undefined },
          `Riemann TCP input listening on ${address.host}:${address.port}`,
        );
      }
    },
    reload: async (next) => {
      const { asyncQueues: queues, websocketMaxBufferedBytes, websocketMaxConnections } = config.streams;
      const changed =
        !isDeepStrictEqual(next.streams.asyncQueues, queues) ||
        next.streams.websocketMaxBufferedBytes !== websocketMaxBufferedBytes ||
        next.streams.websocketMaxConnections !== websocketMaxConnections;
      if (changed) log.warn('changes to streams.async-queues and streams.websocket take effect at the next restart');
      if (!isDeepStrictEqual(next.streams.tcp, tcpSettings))
        log.warn('changes to streams.tcp take effect at the next restart');
      await service.reload(next.streams);
    },
    stop: async () => {
      await tcp?.close();
      // What async queues still hold reaches the outputs before they flush.
      asyncQueues.drain();
      await service.stop();
    },
  };
}
