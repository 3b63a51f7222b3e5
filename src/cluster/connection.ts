/**
 * The node's NATS connection (docs/cluster.md): the configured servers, TLS and credentials, reconnecting for ever
 * (NATS' client does the reconnects, with its own backoff and jitter); each disconnect and reconnect is logged and
 * counted, and the parts that must behave differently while NATS is unreachable (membership freezes, results wait)
 * ask `connected`.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { loadNats } from './nats.ts';
import type { ClusterSettings } from './settings.ts';

export class ClusterConnection {
  connected = false;
  private readonly listeners = new Set<(connected: boolean) => void>();

  private constructor(
    readonly nc: NatsConnection,
    private readonly logger: Logger,
    private readonly gauge: Gauge,
    private readonly reconnects: Counter,
  ) {}

  /**
   * Connects, waiting for the first connection as long as it takes (the service serves its API meanwhile; the
   * cluster parts start once it is up).
   */
  static async open(settings: ClusterSettings, logger: Logger, registry: Registry): Promise<ClusterConnection> {
    const { connect, credsAuthenticator } = await loadNats();
    const nc = await connect({
      servers: settings.servers,
      name: `vigie-${settings.node}`,
      maxReconnectAttempts: -1,
      waitOnFirstConnect: true,
      reconnectTimeWait: 500,
      pingInterval: 5_000,
      ...(settings.tls
        ? {
            tls: {
              ...(settings.tls.cert ? { cert: settings.tls.cert.toString('utf8') } : {}),
              ...(settings.tls.key ? { key: settings.tls.key.toString('utf8') } : {}),
              ...(settings.tls.ca ? { ca: settings.tls.ca.toString('utf8') } : {}),
            },
          }
        : {}),
      ...(settings.creds !== undefined ? { authenticator: credsAuthenticator(new TextEncoder().encode(settings.creds)) } : {}),
    });
    const gauge = new Gauge({ name: 'cluster_nats_connected', help: 'Whether this node is connected to NATS (1) or not (0).', registers: [registry] });
    const reconnects = new Counter({ name: 'cluster_nats_reconnects_total', help: 'Reconnections to NATS after a disconnect.', registers: [registry] });
    const connection = new ClusterConnection(nc, logger, gauge, reconnects);
    connection.setConnected(true);
    logger.info({ server: nc.getServer() }, 'connected to NATS');
    void connection.watchStatus();
    return connection;
  }

  onChange(listener: (connected: boolean) => void): void {
    this.listeners.add(listener);
  }

  private setConnected(connected: boolean): void {
    this.connected = connected;
    this.gauge.set(connected ? 1 : 0);
    for (const listener of this.listeners) listener(connected);
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect') {
        this.logger.warn({ server: status.server }, 'disconnected from NATS: checks keep running, results wait for it');
        this.setConnected(false);
      } else if (status.type === 'reconnect') {
        this.reconnects.inc();
        this.logger.info({ server: status.server }, 'reconnected to NATS');
        this.setConnected(true);
      } else if (status.type === 'error') {
        this.logger.warn({ err: status.error }, `NATS error: ${status.error.message}`);
      }
    }
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await this.nc.drain().catch(() => this.nc.close());
  }
}
