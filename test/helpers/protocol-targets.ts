/**
 * Local servers of the protocols the newer check kinds speak, all on loopback with ports picked by the system:
 *
 * - `startWsServer`: a `ws` WebSocket server (optionally over TLS) with a few behaviours by path;
 * - `startGrpcHealthServer`: a real grpc-js server implementing grpc.health.v1.Health/Check;
 * - `startMailServer`: a tiny SMTP, IMAP or POP3 server (greeting, EHLO, STARTTLS/STLS, implicit TLS, goodbye).
 *
 * Every server has `close()`.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { WebSocketServer } from 'ws';
import { type CertFiles, readPem } from './certs.ts';

/**
 * A real ws server on loopback: `/echo` answers each message with `echo: <message>`, `/greet` sends `hello` at
 * once, `/silent` never sends, `/bye` closes at once; other paths are refused with 404 before the upgrade.
 */
export async function startWsServer(tls?: {
  key: string;
  cert: string;
}): Promise<{ url: string; headers: Record<string, string | string[] | undefined>[]; close: () => Promise<void> }> {
  const server: Server = tls
    ? createHttpsServer({ key: readPem(tls.key), cert: readPem(tls.cert) })
    : createHttpServer();
  const wss = new WebSocketServer({ noServer: true });
  const headers: Record<string, string | string[] | undefined>[] = [];
  server.on('upgrade', (request, socket, head) => {
    if (!['/echo', '/greet', '/silent', '/bye'].includes(request.url ?? '')) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    headers.push(request.headers);
    wss.handleUpgrade(request, socket, head, (ws) => {
      if (request.url === '/echo') ws.on('message', (data: Buffer) => ws.send(`echo: ${data.toString()}`));
      if (request.url === '/greet') ws.send('hello');
      if (request.url === '/bye') ws.close(1001, 'going away');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'wss' : 'ws'}://127.0.0.1:${port}`,
    headers,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A real grpc-js server implementing grpc.health.v1.Health/Check with hand-written protobuf (the messages are one
 * field each), so the test needs no .proto loader: `""` and `api` are SERVING, `batch` NOT_SERVING, `slow` never
 * answers, any other service is NOT_FOUND, as the reference health service answers.
 */
const GRPC_STATUSES: Record<string, number> = { '': 1, api: 1, batch: 2 };

const healthService: grpc.ServiceDefinition = {
  Check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: ({ service }: { service: string }) =>
      Buffer.concat([Buffer.from([0x0a, Buffer.byteLength(service)]), Buffer.from(service)]),
    // An object, not the bare name: grpc-js takes a falsy request (the empty name) for no request at all.
    requestDeserialize: (bytes: Buffer) => ({
      service: bytes.length === 0 ? '' : bytes.subarray(2, 2 + (bytes[1] as number)).toString('utf8'),
    }),
    responseSerialize: (status: number) => Buffer.from([0x08, status]),
    responseDeserialize: (bytes: Buffer) => bytes[1] as number,
  },
};

export async function startGrpcHealthServer(
  credentials: grpc.ServerCredentials,
): Promise<{ port: number; services: string[]; close: () => Promise<void> }> {
  const server = new grpc.Server();
  const services: string[] = [];
  server.addService(healthService, {
    Check: (call: grpc.ServerUnaryCall<{ service: string }, number>, callback: grpc.sendUnaryData<number>) => {
      const { service } = call.request;
      services.push(service);
      if (service === 'slow') return;
      const status = GRPC_STATUSES[service];
      if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
      else callback(null, status);
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', credentials, (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    port,
    services,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())).then(() => server.forceShutdown()),
  };
}

export type MailProtocolName = 'smtp' | 'imap' | 'pop3';

export interface MailServerOptions {
  protocol: MailProtocolName;
  cert: CertFiles;
  /** `implicit`: TLS from the first byte; `starttls`: offered and accepted; `refuse`: offered, refused; `none`: not
   *  offered. */
  tls: 'implicit' | 'starttls' | 'refuse' | 'none';
  greeting?: string;
  /** Never greet (a server that accepts and hangs). */
  mute?: boolean;
}

export const GREETINGS: Record<MailProtocolName, string> = {
  smtp: '220-mail.test ESMTP Postfix\r\n220 ready',
  imap: '* OK [CAPABILITY IMAP4rev1 STARTTLS] Dovecot ready.',
  pop3: '+OK Dovecot ready.',
};

/**
 * A tiny mail server speaking just what the checks say: the greeting, EHLO, STARTTLS / STLS, QUIT / LOGOUT. It
 * records the commands received, in clear text and over TLS, so a test sees the dialogue.
 */
export async function startMailServer(
  options: MailServerOptions,
): Promise<{ port: number; commands: string[]; close: () => Promise<void> }> {
  const context = createSecureContext({ key: readPem(options.cert.key), cert: readPem(options.cert.cert) });
  const commands: string[] = [];
  const sockets = new Set<Socket>();
  const converse = (socket: Socket, secure: boolean): void => {
    let buffer = '';
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString('latin1');
      let newline: number;
      while ((newline = buffer.indexOf('\r\n')) !== -1) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 2);
        commands.push(secure ? `tls:${line}` : line);
        const upper = line.toUpperCase();
        if (upper.startsWith('EHLO'))
          socket.write(
            `250-mail.test\r\n250-PIPELINING\r\n${options.tls === 'none' ? '' : '250-STARTTLS\r\n'}250 8BITMIME\r\n`,
          );
        else if (upper === 'STARTTLS' || upper === 'A1 STARTTLS' || upper === 'STLS') {
          if (options.tls === 'refuse' || options.tls === 'none') {
            socket.write(
              options.protocol === 'smtp'
                ? '454 TLS not available\r\n'
                : options.protocol === 'imap'
                  ? 'a1 NO not now\r\n'
                  : '-ERR not now\r\n',
            );
            continue;
          }
          socket.write(
            options.protocol === 'smtp'
              ? '220 go ahead\r\n'
              : options.protocol === 'imap'
                ? 'a1 OK Begin TLS negotiation now\r\n'
                : '+OK Begin TLS\r\n',
          );
          socket.removeListener('data', onData);
          const upgraded = new TLSSocket(socket, { isServer: true, secureContext: context });
          upgraded.on('error', () => {});
          converse(upgraded, true);
          return;
        } else if (upper === 'QUIT' || upper === 'A2 LOGOUT')
          socket.end(
            options.protocol === 'imap'
              ? '* BYE\r\na2 OK\r\n'
              : options.protocol === 'smtp'
                ? '221 bye\r\n'
                : '+OK bye\r\n',
          );
        else socket.write(options.protocol === 'smtp' ? '500 unknown\r\n' : '-ERR unknown\r\n');
      }
    };
    socket.on('data', onData);
  };
  const server = createServer((raw) => {
    sockets.add(raw);
    raw.on('close', () => sockets.delete(raw));
    raw.on('error', () => {});
    const socket = options.tls === 'implicit' ? new TLSSocket(raw, { isServer: true, secureContext: context }) : raw;
    socket.on('error', () => {});
    if (!options.mute) socket.write(`${options.greeting ?? GREETINGS[options.protocol]}\r\n`);
    converse(socket, options.tls === 'implicit');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    commands,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
