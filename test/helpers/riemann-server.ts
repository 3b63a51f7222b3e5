/**
 * A Riemann-protocol TCP server for tests, written with protobufjs from Riemann's proto: it reads
 * length-prefixed `Msg`s, records their events, and answers `ok` (or an error, when told). It can be started on
 * a port chosen in advance, so that a test can point an exporter at it while it is still down.
 */
import { join } from 'node:path';
import { createServer, type Server, type Socket } from 'node:net';
import protobuf from 'protobufjs';
import { PROTO_DIR } from '../../src/paths.ts';

interface RiemannEvent {
  time?: number;
  time_micros?: number;
  state?: string;
  service?: string;
  host?: string;
  description?: string;
  tags?: string[];
  ttl?: number;
  metric_sint64?: number;
  attributes?: { key: string; value?: string }[];
}

export interface RiemannServer {
  port: number;
  /** Events received, in order; `messages` counts the Msgs that carried them. */
  events: RiemannEvent[];
  messages: number;
  /** Answers the next Msgs with this error instead of ok. */
  replyError: string | null;
  close(): Promise<void>;
}

const root = new protobuf.Root().loadSync(join(PROTO_DIR, 'riemann/proto.proto'), { keepCase: true });
const Msg = root.lookupType('Msg');

export async function startRiemannServer(port = 0): Promise<RiemannServer> {
  const sockets = new Set<Socket>();
  const state: RiemannServer = {
    port: 0,
    events: [],
    messages: 0,
    replyError: null,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
        const length = buffered.readUInt32BE(0);
        const msg = Msg.toObject(Msg.decode(buffered.subarray(4, 4 + length)), { longs: Number }) as {
          events?: RiemannEvent[];
        };
        buffered = buffered.subarray(4 + length);
        state.messages++;
        state.events.push(...(msg.events ?? []));
        const reply = Msg.encode(
          Msg.fromObject(state.replyError === null ? { ok: true } : { ok: false, error: state.replyError }),
        ).finish();
        const frame = Buffer.alloc(4 + reply.length);
        frame.writeUInt32BE(reply.length, 0);
        frame.set(reply, 4);
        socket.write(frame);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  state.port = (server.address() as { port: number }).port;
  return state;
}
