/**
 * The Riemann protocol over TCP (README, Riemann TCP input), Mirabelle's `:tcp` server: each frame is a 4-byte
 * big-endian length and a protobuf `Msg`; each frame gets a framed reply Msg, `{ok: true}` or `{ok: false,
 * error}`, in order. Events carrying a `stream` attribute go to that stream, the others to the default streams.
 *
 * The server only knows a narrow seam: an `ingest` function that pushes events into a target and answers false
 * when the ingest backlog is full. Frames of a connection are handled one at a time; while one waits (backlog
 * full, slow push, or the client not reading its replies) the socket is paused, so the kernel buffers fill and
 * TCP itself slows the sender. A connection buffers at most the frame being assembled plus one read.
 */
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer as createTlsServer } from 'node:tls';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { type Event, nowNs } from '../event.ts';
import { decodeRiemannMsg, encodeRiemannReply, RiemannDecodeError } from './riemann.ts';

/** Pushes events into a target (a stream name or `default`): false when the backlog is full; throws when the
 *  stream does not exist or its actions failed (the message becomes the error reply). */
type RiemannIngest = (target: string, events: Event[]) => Promise<boolean>;

export interface RiemannTcpOptions {
  host: string;
  port: number;
  /** All three set: TLS, and clients must present a certificate signed by `ca`. */
  tls?: { key: Buffer; cert: Buffer; ca: Buffer };
  maxFrameBytes: number;
  maxConnections: number;
  /** How long a paused connection waits before offering a refused batch again. */
  retryMs?: number;
  ingest: RiemannIngest;
  registry: Registry;
  logger: Logger;
}

const QUERIES_NOT_SUPPORTED = 'queries are not supported';

interface Metrics {
  duration: Histogram;
  connections: Gauge;
  paused: Gauge;
  accepted: Counter;
  dropped: Counter<'reason'>;
  rejected: Counter<'reason'>;
}

function createMetrics(registry: Registry): Metrics {
  const registers = [registry];
  return {
    duration: new Histogram({
      name: 'tcp_requests_duration_seconds',
      help: 'Time to handle one Riemann TCP frame, from its last byte to its reply.',
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    }),
    connections: new Gauge({ name: 'tcp_connections', help: 'Open Riemann TCP connections.', registers }),
    paused: new Gauge({
      name: 'tcp_connections_paused',
      help: 'Riemann TCP connections not read from because their frame waits (ingest backlog full or reply not read).',
      registers,
    }),
    accepted: new Counter({ name: 'tcp_connections_total', help: 'Riemann TCP connections accepted.', registers }),
    dropped: new Counter({
      name: 'tcp_connections_dropped_total',
      help: 'Riemann TCP connections refused (max_connections) or failing their TLS handshake (tls).',
      labelNames: ['reason'],
      registers,
    }),
    rejected: new Counter({
      name: 'tcp_frames_rejected_total',
      help: 'Riemann TCP frames answered with an error: too_large (connection closed), malformed, query, stream_error.',
      labelNames: ['reason'],
      registers,
    }),
  };
}

const HEADER = 4;
/** How long an ended connection (oversized frame) may stay half-open before it is destroyed. */
const CLOSE_GRACE_MS = 5000;

/** One client connection: its unparsed bytes and whether a frame is being handled. */
class Connection {
  chunks: Buffer[] = [];
  buffered = 0;
  /** The body length of the frame being assembled, or -1 before its header is complete. */
  expected = -1;
  busy = false;
  paused = false;
  closed = false;

  constructor(readonly socket: Socket) {}

  append(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /** The frame length announced by the buffered header, or -1 when fewer than 4 bytes wait. */
  header(): number {
    if (this.expected >= 0) return this.expected;
    if (this.buffered < HEADER) return -1;
    this.flatten();
    this.expected = (this.chunks[0] as Buffer).readUInt32BE(0);
    return this.expected;
  }

  /** A whole frame, or a header over the limit, waits to be handled. */
  hasWork(maxFrameBytes: number): boolean {
    const length = this.header();
    return length >= 0 && (length > maxFrameBytes || this.buffered >= HEADER + length);
  }

  /** The whole next frame (header included) when it has arrived, else null. Keeps the rest buffered. */
  takeFrame(): Buffer | null {
    const length = this.header();
    if (length < 0 || this.buffered < HEADER + length) return null;
    this.flatten();
    const all = this.chunks[0] as Buffer;
    const frame = all.subarray(0, HEADER + length);
    const rest = all.subarray(HEADER + length);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    this.expected = -1;
    return frame;
  }

  /** Joins the buffered chunks, once per frame (never per read: a large frame is copied once). */
  private flatten(): void {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.buffered)];
  }
}

export class RiemannTcpServer {
  private readonly server: Server;
  private readonly metrics: Metrics;
  private readonly connections = new Set<Connection>();
  private readonly retryMs: number;
  private stopping = false;

  constructor(private readonly options: RiemannTcpOptions) {
    this.metrics = createMetrics(options.registry);
    this.retryMs = options.retryMs ?? 10;
    const onSocket = (socket: Socket) => this.accept(socket);
    if (options.tls) {
      const tlsServer = createTlsServer(
        {
          key: options.tls.key,
          cert: options.tls.cert,
          ca: options.tls.ca,
          requestCert: true,
          rejectUnauthorized: true,
        },
        onSocket,
      );
      tlsServer.on('tlsClientError', (error) => {
        this.metrics.dropped.inc({ reason: 'tls' });
        options.logger.debug({ err: error }, `Riemann TCP TLS handshake failed: ${error.message}`);
      });
      this.server = tlsServer;
    } else {
      this.server = createNetServer(onSocket);
    }
    this.server.maxConnections = options.maxConnections;
    this.server.on('drop', () => this.metrics.dropped.inc({ reason: 'max_connections' }));
  }

  /** Listens; resolves with the bound address (port 0 picks one). */
  listen(): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.options.host, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        const port = typeof address === 'object' && address !== null ? address.port : this.options.port;
        resolve({ host: this.options.host, port });
      });
    });
  }

  /** Stops accepting, lets each connection finish the frame it handles, then closes them all. */
  async close(): Promise<void> {
    this.stopping = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const connection of this.connections) if (!connection.busy) connection.socket.destroy();
    const deadline = Date.now() + 5000;
    while ([...this.connections].some((connection) => connection.busy) && Date.now() < deadline) await sleep(10);
    for (const connection of this.connections) connection.socket.destroy();
    await closed;
  }

  private accept(socket: Socket): void {
    const connection = new Connection(socket);
    this.connections.add(connection);
    this.metrics.connections.inc();
    this.metrics.accepted.inc();
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(connection, chunk));
    socket.on('drain', () => this.resume(connection));
    socket.on('error', (error) =>
      this.options.logger.debug({ err: error }, `Riemann TCP connection error: ${error.message}`),
    );
    socket.on('close', () => {
      connection.closed = true;
      this.setPaused(connection, false);
      this.connections.delete(connection);
      this.metrics.connections.dec();
    });
  }

  private onData(connection: Connection, chunk: Buffer): void {
    // After an oversized frame the reply is sent and the socket ended; what the client still sends is discarded.
    if (connection.closed) return;
    connection.append(chunk);
    // A frame is still being handled across ticks: read nothing more until it is done.
    if (connection.busy) this.pause(connection);
    else void this.pump(connection);
  }

  /** Handles every complete frame in order; at most one runs per connection. */
  private async pump(connection: Connection): Promise<void> {
    connection.busy = true;
    try {
      for (;;) {
        if (connection.closed) return;
        const length = connection.header();
        if (length > this.options.maxFrameBytes) {
          this.metrics.rejected.inc({ reason: 'too_large' });
          // End (FIN), not destroy: a reset could discard the reply before the client reads it.
          connection.closed = true;
          connection.chunks = [];
          connection.socket.end(
            encodeRiemannReply(`frame of ${length} bytes is over the limit of ${this.options.maxFrameBytes} bytes`),
          );
          connection.socket.setTimeout(CLOSE_GRACE_MS, () => connection.socket.destroy());
          return;
        }
        const frame = connection.takeFrame();
        if (frame === null) break;
        await this.handleFrame(connection, frame);
      }
    } catch (error) {
      this.options.logger.error({ err: error }, `Riemann TCP frame handling failed: ${(error as Error).message}`);
      connection.socket.destroy();
    } finally {
      connection.busy = false;
    }
    if (!connection.socket.writableNeedDrain) this.resume(connection);
  }

  private async handleFrame(connection: Connection, frame: Buffer): Promise<void> {
    const started = performance.now();
    const reply = await this.replyTo(connection, frame);
    if (connection.closed) return;
    if (!connection.socket.write(reply)) this.pause(connection);
    this.metrics.duration.observe((performance.now() - started) / 1000);
  }

  private async replyTo(connection: Connection, frame: Buffer): Promise<Buffer> {
    let events: Event[];
    try {
      const msg = decodeRiemannMsg(frame, HEADER, frame.length, nowNs());
      if (msg.hasQuery) {
        this.metrics.rejected.inc({ reason: 'query' });
        return encodeRiemannReply(QUERIES_NOT_SUPPORTED);
      }
      events = msg.events;
    } catch (error) {
      if (!(error instanceof RiemannDecodeError)) throw error;
      this.metrics.rejected.inc({ reason: 'malformed' });
      return encodeRiemannReply(error.message);
    }
    try {
      for (const [target, batch] of byTarget(events)) await this.ingest(connection, target, batch);
    } catch (error) {
      this.metrics.rejected.inc({ reason: 'stream_error' });
      return encodeRiemannReply((error as Error).message);
    }
    return encodeRiemannReply();
  }

  /** Offers the batch until the backlog takes it, the socket paused meanwhile. */
  private async ingest(connection: Connection, target: string, events: Event[]): Promise<void> {
    while (!(await this.options.ingest(target, events))) {
      if (connection.closed || this.stopping) throw new Error('the server is stopping');
      this.pause(connection);
      await sleep(this.retryMs);
    }
  }

  private pause(connection: Connection): void {
    connection.socket.pause();
    this.setPaused(connection, true);
  }

  private resume(connection: Connection): void {
    if (connection.busy || connection.closed || !connection.paused) return;
    connection.socket.resume();
    this.setPaused(connection, false);
    // Frames that arrived whole while paused are waiting in the buffer.
    if (connection.hasWork(this.options.maxFrameBytes)) void this.pump(connection);
  }

  private setPaused(connection: Connection, paused: boolean): void {
    if (connection.paused === paused) return;
    connection.paused = paused;
    if (paused) this.metrics.paused.inc();
    else this.metrics.paused.dec();
  }
}

/** Events grouped by their `stream` attribute (absent: `default`), in order of first appearance. The common
 *  case, no `stream` at all, is one group without copying. */
function byTarget(events: Event[]): Iterable<[string, Event[]]> {
  let routed = false;
  for (const event of events) {
    if (typeof event.stream === 'string') {
      routed = true;
      break;
    }
  }
  if (!routed) return events.length > 0 ? [['default', events]] : [];
  const groups = new Map<string, Event[]>();
  for (const event of events) {
    const target = typeof event.stream === 'string' ? event.stream : 'default';
    const group = groups.get(target);
    if (group === undefined) groups.set(target, [event]);
    else group.push(event);
  }
  return groups;
}
