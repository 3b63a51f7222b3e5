/**
 * The node's NATS connection (docs/cluster.md): the configured servers, TLS and credentials, reconnecting for ever
 * (NATS' client does the reconnects, with its own backoff and jitter); each disconnect and reconnect is logged and
 * counted, and the parts that must behave differently while NATS is unreachable (membership freezes, results wait)
 * ask `connected`.
 */
import type { Authenticator, NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { loadNats } from './nats.ts';
import type { ClusterSettings, NatsAuth } from './settings.ts';

/**
 * NATS refused this node, or this node refuses the server: joining is hopeless without a change of config, so the
 * node stops (docs/cluster.md, "Securing NATS").
 */
export class NatsRefusedError extends Error {}

type Nats = Awaited<ReturnType<typeof loadNats>>;

function authenticator(nats: Nats, auth: NatsAuth): Authenticator {
  switch (auth.kind) {
    case 'user':
      return nats.usernamePasswordAuthenticator(auth.user, auth.password);
    case 'token':
      return nats.tokenAuthenticator(auth.token);
    case 'creds':
      return nats.credsAuthenticator(new Uint8Array(auth.creds));
    case 'nkey':
      return nats.nkeyAuthenticator(new Uint8Array(auth.seed));
  }
}

/** Whether the config names how this node authenticates, for the messages. */
function credentialOf(settings: ClusterSettings): string {
  if (settings.auth !== undefined)
    return settings.auth.kind === 'user' ? `user ${settings.auth.user}` : `its ${settings.auth.kind}`;
  return settings.tls?.cert !== undefined ? 'its client certificate' : 'no credential';
}

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
    new Gauge({
      name: 'cluster_nats_insecure',
      help: 'Whether cluster.nats.insecure lets this node run without NATS authentication (1) or not (0).',
      registers: [registry],
    }).set(settings.insecure ? 1 : 0);
    if (settings.insecure) {
      logger.warn(
        'cluster.nats.insecure is true: NATS may be open to anyone, and whoever can reach it can make every node run any program (docs/cluster.md, "Securing NATS")',
      );
    }
    const nats = await loadNats();
    const nc = await nats
      .connect({
        servers: settings.servers,
        name: `vigie-${settings.node}`,
        maxReconnectAttempts: -1,
        waitOnFirstConnect: true,
        reconnectTimeWait: 500,
        pingInterval: 5_000,
        // Async traces make the client capture a stack (an Error) for every request and its timer: a publish to
        // JetStream is a request, and the errors it logs name their cause without those stacks.
        noAsyncTraces: true,
        ...(settings.tls
          ? {
              tls: {
                ...(settings.tls.cert ? { cert: settings.tls.cert.toString('utf8') } : {}),
                ...(settings.tls.key ? { key: settings.tls.key.toString('utf8') } : {}),
                ...(settings.tls.ca ? { ca: settings.tls.ca.toString('utf8') } : {}),
              },
            }
          : {}),
        ...(settings.auth !== undefined ? { authenticator: authenticator(nats, settings.auth) } : {}),
      })
      .catch((error: unknown) => {
        // The client gives up on the first connection after the server refused the same credentials twice.
        if (error instanceof nats.AuthorizationError || error instanceof nats.UserAuthenticationExpiredError) {
          throw new NatsRefusedError(
            `NATS refused this node (${credentialOf(settings)}): ${error.message}; check cluster.nats's credentials against the server's users`,
          );
        }
        throw error;
      });
    const info = nc.info;
    if (!settings.insecure && info?.auth_required !== true && info?.tls_verify !== true) {
      await nc.close();
      throw new NatsRefusedError(
        `the NATS server ${nc.getServer()} requires no authentication: anyone who can reach it can make every node run any program. Secure it (docs/cluster.md, "Securing NATS"), or set cluster.nats.insecure: true to run without`,
      );
    }
    const gauge = new Gauge({
      name: 'cluster_nats_connected',
      help: 'Whether this node is connected to NATS (1) or not (0).',
      registers: [registry],
    });
    const reconnects = new Counter({
      name: 'cluster_nats_reconnects_total',
      help: 'Reconnections to NATS after a disconnect.',
      registers: [registry],
    });
    const connection = new ClusterConnection(nc, logger, gauge, reconnects);
    connection.setConnected(true);
    logger.info({ server: nc.getServer() }, 'connected to NATS');
    void connection.watchStatus();
    return connection;
  }

  /** Calls `listener` at each disconnection and reconnection; the function returned removes it. */
  onChange(listener: (connected: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
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
