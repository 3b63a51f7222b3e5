/**
 * The Riemann exporter (`exporters.riemann[]`): each result becomes one Riemann event mapped as upstream
 * (result-event.ts), sent as protobuf over TCP, or TLS as soon as a certificate option is set. Results that
 * queue up leave together in one `Msg`, and each `Msg` waits for the server's `ok`/`error` reply before the next.
 *
 * Unlike upstream, a server that is down never holds up the checks: the connection is (re)opened in the
 * background with capped exponential backoff (p-retry), results wait in the bounded queue meanwhile (dropped and
 * counted only when it is full) and are sent as soon as the server is back. A batch whose connection broke is
 * sent once more on the next connection; an error reply drops it (`rejected`) and is logged.
 */
import { connect as connectTcp, isIP, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { connect as connectTls } from 'node:tls';
import pRetry from 'p-retry';
import type { Logger } from 'pino';
import type { CheckResult } from '../result-types.ts';
import type { ExporterMetrics } from './metrics.ts';
import { BatchDropped, QueuedExporter } from './queue.ts';
import { resultToRiemannEvent } from './result-event.ts';
import { FrameReader, frameMsg, riemannMsg } from './riemann-proto.ts';
import type { RiemannExporterSettings } from './settings.ts';
import { tlsConnectOptions } from './tls.ts';

const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 5_000;
/** A reply is a few bytes; anything this big is a broken stream. */
const MAX_REPLY_BYTES = 1024 * 1024;
/** A batch is written on at most this many connections before it is dropped. */
const ATTEMPTS = 2;

interface Reply {
  ok?: boolean;
  error?: string;
}

/** One open connection and the reply awaited on it. */
class RiemannConnection {
  private waiting: { resolve: (reply: Reply) => void; reject: (error: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(readonly socket: Socket) {
    const reader = new FrameReader(
      (body) => this.settle(null, riemannMsg().toObject(riemannMsg().decode(body)) as Reply),
      MAX_REPLY_BYTES,
    );
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (error) {
        this.fail(error as Error);
      }
    });
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('the connection closed')));
  }

  get broken(): boolean {
    return this.failure !== null;
  }

  /** Writes one framed Msg and resolves with the server's reply, or rejects when the connection fails or times out. */
  exchange(frame: Buffer, timeoutMs: number): Promise<Reply> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new Error(`no reply within ${timeoutMs} ms`)), timeoutMs);
      this.waiting = {
        resolve: (reply) => (clearTimeout(timer), resolve(reply)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      };
      this.socket.write(frame);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.socket.destroy();
    this.settle(error, null);
  }

  private settle(error: Error | null, reply: Reply | null): void {
    const waiting = this.waiting;
    this.waiting = null;
    if (!waiting) return;
    if (error) waiting.reject(error);
    else waiting.resolve(reply as Reply);
  }
}

export class RiemannExporter extends QueuedExporter {
  private readonly host = hostname();
  private connection: RiemannConnection | null = null;
  private connecting: Promise<RiemannConnection> | null = null;

  constructor(
    private readonly settings: RiemannExporterSettings,
    metrics: ExporterMetrics,
    logger: Logger,
  ) {
    super(settings.name, settings, metrics, logger);
  }

  /** Opens the connection at once, so that a server that is up receives the first results without delay. */
  start(): void {
    this.connected().catch(() => undefined);
  }

  protected async deliver(batch: CheckResult[], signal: AbortSignal): Promise<void> {
    const events = new Array<ReturnType<typeof resultToRiemannEvent>>(batch.length);
    for (let i = 0; i < batch.length; i++)
      events[i] = resultToRiemannEvent(batch[i] as CheckResult, this.host, this.settings.ttlSeconds);
    const frame = frameMsg({ events });
    let lastError: Error | null = null;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      let connection: RiemannConnection;
      try {
        connection = await this.connected();
      } catch (error) {
        throw new BatchDropped(
          'shutdown',
          `Riemann exporter closed before a connection to ${this.address()}: ${(error as Error).message}`,
        );
      }
      if (signal.aborted) throw new BatchDropped('shutdown', 'the exporter is closing');
      const started = performance.now();
      try {
        const reply = await connection.exchange(frame, this.settings.timeoutMs);
        const ok = reply.ok !== false && reply.error === undefined;
        this.metrics.pushed(this.name, ok, (performance.now() - started) / 1000);
        if (!ok) throw new BatchDropped('rejected', `Riemann error reply: ${reply.error ?? 'not ok'}`);
        return;
      } catch (error) {
        if (error instanceof BatchDropped) throw error;
        this.metrics.pushed(this.name, false, (performance.now() - started) / 1000);
        lastError = error as Error;
        if (this.connection === connection) this.connection = null;
      }
    }
    throw new BatchDropped(
      'retries_exhausted',
      `Riemann exporter: fail to send events to ${this.address()}: ${lastError?.message ?? 'unknown error'}`,
    );
  }

  protected release(): Promise<void> {
    this.connection?.close();
    this.connection = null;
    return Promise.resolve();
  }

  /** The open connection, or the one being (re)opened: retried with backoff until it opens or the exporter closes. */
  private connected(): Promise<RiemannConnection> {
    if (this.connection && !this.connection.broken) return Promise.resolve(this.connection);
    this.connecting ??= pRetry(() => this.open(), {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: RECONNECT_FIRST_MS,
      maxTimeout: RECONNECT_MAX_MS,
      factor: 2,
      signal: this.abort.signal,
      onFailedAttempt: ({ error, attemptNumber }) => {
        // Counted: while its server is down, failed connections are all the exporter does (docs/http-api.md, metrics).
        this.metrics.unreachable(this.name);
        if (attemptNumber === 1)
          this.logger.warn(
            { exporter: this.name },
            `Riemann exporter ${this.name}: cannot connect to ${this.address()}, retrying in the background: ${error.message}`,
          );
      },
    })
      .then((connection) => {
        this.connection = connection;
        this.logger.info({ exporter: this.name }, `Riemann exporter ${this.name} connected to ${this.address()}`);
        return connection;
      })
      .finally(() => {
        this.connecting = null;
      });
    return this.connecting;
  }

  private open(): Promise<RiemannConnection> {
    const { host, port, tls, timeoutMs } = this.settings;
    return new Promise<RiemannConnection>((resolve, reject) => {
      const socket = tls
        ? connectTls({ host, port, ...(isIP(host) === 0 ? { servername: host } : {}), ...tlsConnectOptions(tls) })
        : connectTcp({ host, port });
      const timer = setTimeout(() => socket.destroy(new Error(`connect timeout after ${timeoutMs} ms`)), timeoutMs);
      const onError = (error: Error) => {
        clearTimeout(timer);
        reject(error);
      };
      socket.once('error', onError);
      socket.once(tls ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.off('error', onError);
        socket.setNoDelay(true);
        resolve(new RiemannConnection(socket));
      });
    });
  }

  private address(): string {
    return `${this.settings.host}:${this.settings.port}`;
  }
}
