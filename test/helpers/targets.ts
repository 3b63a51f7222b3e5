/**
 * Real local targets for healthcheck tests, all on loopback and on ports picked by the system:
 *
 * - `startHttpTarget`: HTTP or HTTPS server recording every request (method, path, query, headers, body);
 * - `createTestPki`: certificates made with the `openssl` CLI in a temp dir (valid, wrong name, expiring soon,
 *   expired, self-signed, client certificate for mutual TLS);
 * - `startTlsTarget`: TLS server that completes handshakes and records the SNI it received;
 * - `startTcpTarget`: TCP listener that accepts and never sends a byte (also the "server that never answers"
 *   for HTTP and TLS timeouts), `closedPort` for a port nothing listens on, and `startFullBacklogTarget` for a
 *   port where connecting hangs;
 * - `startDnsTarget`: DNS server on UDP answering A/AAAA/CNAME/MX/TXT/NS/SRV/CAA from a table (NXDOMAIN otherwise),
 *   or, with `silent`, a UDP socket that never answers.
 *
 * Every target has `close()`; call it in `afterAll`/`afterEach`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createSocket, type RemoteInfo } from 'node:dgram';
import {
  createServer as createHttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import * as dnsPacket from 'dns-packet';
import { type CertFiles, createCa, readPem } from './certs.ts';

// ---------------------------------------------------------------------------------------------------- HTTP

export interface RecordedRequest {
  method: string;
  /** Path and query as sent (`/echo?a=1+2&b=2`). */
  url: string;
  path: string;
  query: URLSearchParams;
  /** Lower-cased names, as Node gives them (a repeated header may be merged or dropped: see `rawHeaders`). */
  headers: IncomingHttpHeaders;
  /** Names and values as sent, alternating, repeats included. */
  rawHeaders: string[];
  body: string;
  remoteAddress: string;
  /** Client port: the same on two requests means the connection was kept alive. */
  remotePort: number;
}

/** Answers a recorded request. Not answering at all is allowed (a server that hangs). */
type HttpHandler = (request: RecordedRequest, response: ServerResponse) => void;

export interface HttpTargetOptions {
  /** Default `127.0.0.1`; `::1` for IPv6. */
  host?: string;
  /** Default: 200 `ok`. */
  handler?: HttpHandler;
  /** Serve HTTPS with this key/cert; with `ca`, require a client certificate signed by it. */
  tls?: { key: string; cert: string; ca?: string };
}

export interface HttpTarget {
  host: string;
  port: number;
  /** `http(s)://host:port` (IPv6 bracketed). */
  origin: string;
  requests: RecordedRequest[];
  /** Replaces the handler for the next requests. */
  handle(handler: HttpHandler): void;
  close(): Promise<void>;
}

/** The values a request sent for header `name`, whatever the case of its name. */
export function sentHeader(request: RecordedRequest, name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < request.rawHeaders.length; i += 2)
    if ((request.rawHeaders[i] as string).toLowerCase() === name) values.push(request.rawHeaders[i + 1] as string);
  return values;
}

export async function startHttpTarget(options: HttpTargetOptions = {}): Promise<HttpTarget> {
  const host = options.host ?? '127.0.0.1';
  let handler: HttpHandler = options.handler ?? ((_request, response) => response.end('ok'));
  const requests: RecordedRequest[] = [];
  const onRequest = (incoming: IncomingMessage, response: ServerResponse): void => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const url = incoming.url ?? '/';
      const parsed = new URL(url, 'http://target');
      const request: RecordedRequest = {
        method: incoming.method ?? '',
        url,
        path: parsed.pathname,
        query: parsed.searchParams,
        headers: incoming.headers,
        rawHeaders: incoming.rawHeaders,
        body: Buffer.concat(chunks).toString('utf8'),
        remoteAddress: incoming.socket.remoteAddress ?? '',
        remotePort: incoming.socket.remotePort ?? 0,
      };
      requests.push(request);
      handler(request, response);
    });
  };
  const tls = options.tls;
  const server: HttpServer = tls
    ? createHttpsServer(
        {
          key: readPem(tls.key),
          cert: readPem(tls.cert),
          ...(tls.ca ? { ca: readPem(tls.ca), requestCert: true, rejectUnauthorized: true } : {}),
        },
        onRequest,
      )
    : createHttpServer(onRequest);
  const port = await listen(server, host);
  return {
    host,
    port,
    origin: `${tls ? 'https' : 'http'}://${hostPort(host, port)}`,
    requests,
    handle(next) {
      handler = next;
    },
    async close() {
      server.closeAllConnections();
      await closeServer(server);
    },
  };
}

// ---------------------------------------------------------------------------------------------------- certificates

export interface TestPki {
  dir: string;
  /** The CA that signed every certificate below except `selfSigned`: pass it as `cacert`. */
  ca: string;
  /** Valid for localhost, 127.0.0.1 and ::1, 30 days. */
  server: CertFiles;
  /** Valid only for `wrong.example`. */
  wrongName: CertFiles;
  /** Valid for localhost/127.0.0.1 but expires in about 24 hours. */
  expiringSoon: CertFiles;
  /** For localhost/127.0.0.1, NotAfter one day in the past. */
  expired: CertFiles;
  /** Self-signed for localhost/127.0.0.1 (no CA knows it). */
  selfSigned: CertFiles;
  /** Client certificate (CN `vigie-client`) for mutual TLS. */
  client: CertFiles;
}

/** Makes a fresh PKI in a temp dir with the `openssl` CLI (a few hundred ms). */
export function createTestPki(): TestPki {
  const ca = createCa();
  const loopback = { dns: ['localhost'], ips: ['127.0.0.1', '::1'] };
  const selfSigned = { key: join(ca.dir, 'self-signed.key'), cert: join(ca.dir, 'self-signed.pem') };
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      selfSigned.key,
      '-out',
      selfSigned.cert,
      '-days',
      '30',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
    ],
    { stdio: 'pipe' },
  );
  return {
    dir: ca.dir,
    ca: ca.cert,
    server: ca.issue('server', loopback),
    wrongName: ca.issue('wrong-name', { dns: ['wrong.example'] }),
    expiringSoon: ca.issue('expiring-soon', { ...loopback, days: 1 }),
    // openssl takes -1 as "NotAfter one day before now".
    expired: ca.issue('expired', { ...loopback, days: -1 }),
    selfSigned,
    client: ca.issue('client', { cn: 'vigie-client', client: true }),
  };
}

// ---------------------------------------------------------------------------------------------------- TLS

export interface TlsTarget {
  host: string;
  port: number;
  /** SNI of each handshake completed on the server side (`false` when the client sent none). It lands a moment
   *  after the client's side is done: wait for it (`vi.waitFor`). */
  servernames: (string | false)[];
  close(): Promise<void>;
}

/** A TLS server that completes the handshake and closes; with `ca` it requires a client certificate. */
export async function startTlsTarget(options: {
  key: string;
  cert: string;
  ca?: string;
  host?: string;
}): Promise<TlsTarget> {
  const host = options.host ?? '127.0.0.1';
  const servernames: (string | false)[] = [];
  const sockets = new Set<Socket>();
  const server = createTlsServer(
    {
      key: readPem(options.key),
      cert: readPem(options.cert),
      ...(options.ca ? { ca: readPem(options.ca), requestCert: true, rejectUnauthorized: true } : {}),
    },
    (socket: TLSSocket) => {
      servernames.push(socket.servername ?? false);
      socket.end();
    },
  );
  server.on('connection', (socket: Socket) => trackSocket(sockets, socket));
  // Clients that reject our certificate hang up mid-handshake: expected, nothing to record.
  server.on('tlsClientError', () => {});
  const port = await listen(server, host);
  return {
    host,
    port,
    servernames,
    async close() {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    },
  };
}

// ---------------------------------------------------------------------------------------------------- TCP

export interface TcpTarget {
  host: string;
  port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/** Accepts connections and never sends a byte: open port for TCP checks, hanging server for HTTP/TLS. */
export async function startTcpTarget(host = '127.0.0.1'): Promise<TcpTarget> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    trackSocket(sockets, socket);
    socket.on('error', () => {});
  });
  const port = await listen(server, host);
  return {
    host,
    port,
    get connections() {
      return connections;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    },
  };
}

/**
 * A listener whose accept queue is full, so a new connection attempt hangs (the kernel drops its SYN): the one
 * way to make a TCP connect time out on loopback. The listener lives in a child process that never accepts
 * (its event loop is blocked); the queue is filled until an attempt stalls.
 */
export async function startFullBacklogTarget(): Promise<{ host: string; port: number; close(): Promise<void> }> {
  const script = `const s = require('node:net').createServer();
s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
  process.stdout.write(s.address().port + '\\n', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
  });
  const fillers: Socket[] = [];
  for (let attempt = 0; attempt < 64; attempt++) {
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    fillers.push(socket);
    const connected = await new Promise<boolean>((resolve) => {
      // eslint-disable-next-line no-restricted-syntax -- a fixture's measure: still pending after 200 ms, the backlog is full
      const timer = setTimeout(() => resolve(false), 200);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!connected) break;
  }
  return {
    host: '127.0.0.1',
    port,
    async close() {
      for (const socket of fillers) socket.destroy();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A port that was just free on `host`: bound by the system, then released. */
export async function closedPort(host = '127.0.0.1'): Promise<number> {
  const server = createTcpServer();
  const port = await listen(server, host);
  await closeServer(server);
  return port;
}

// ---------------------------------------------------------------------------------------------------- DNS

interface DnsRecords {
  A?: string[];
  AAAA?: string[];
  CNAME?: string;
  MX?: { priority: number; exchange: string }[];
  TXT?: string[];
  NS?: string[];
  SRV?: { priority: number; weight: number; port: number; target: string }[];
  CAA?: { flags: number; tag: 'issue' | 'issuewild' | 'iodef'; value: string }[];
}

/** Records by domain name (case-insensitive, no trailing dot). A name absent from the table is NXDOMAIN. */
export type DnsTable = Record<string, DnsRecords>;

export interface DnsTarget {
  host: string;
  port: number;
  /** `host:port` as the `resolver` option of a DNS check takes it. */
  address: string;
  /** Every question received, `{name, type}`. */
  queries: { name: string; type: string }[];
  close(): Promise<void>;
}

/** A DNS server on UDP answering from `table`; with `silent`, it records questions and never answers. */
export async function startDnsTarget(
  table: DnsTable,
  options: { host?: string; silent?: boolean } = {},
): Promise<DnsTarget> {
  const host = options.host ?? '127.0.0.1';
  const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
  const records = new Map(Object.entries(table).map(([name, value]) => [name.toLowerCase(), value]));
  const queries: { name: string; type: string }[] = [];
  socket.on('message', (message: Buffer, remote: RemoteInfo) => {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    for (const question of query.questions ?? []) queries.push({ name: question.name, type: question.type });
    if (options.silent) return;
    socket.send(answer(query, records), remote.port, remote.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, host, () => resolve());
  });
  const port = socket.address().port;
  return {
    host,
    port,
    address: hostPort(host, port),
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

const NXDOMAIN = 3;

function answer(query: dnsPacket.DecodedPacket, records: Map<string, DnsRecords>): Buffer {
  const question = query.questions?.[0];
  const name = question?.name ?? '';
  const entry = records.get(name.toLowerCase().replace(/\.$/, ''));
  const answers: dnsPacket.Answer[] = [];
  if (entry !== undefined && question !== undefined) {
    const base = { name, ttl: 60, class: 'IN' as const };
    switch (question.type) {
      case 'A':
      case 'AAAA':
      case 'NS':
        for (const data of entry[question.type] ?? []) answers.push({ ...base, type: question.type, data });
        break;
      case 'CNAME':
        if (entry.CNAME !== undefined) answers.push({ ...base, type: 'CNAME', data: entry.CNAME });
        break;
      case 'MX':
        for (const mx of entry.MX ?? [])
          answers.push({ ...base, type: 'MX', data: { preference: mx.priority, exchange: mx.exchange } });
        break;
      case 'TXT':
        for (const text of entry.TXT ?? []) answers.push({ ...base, type: 'TXT', data: text });
        break;
      case 'SRV':
        for (const srv of entry.SRV ?? []) answers.push({ ...base, type: 'SRV', data: srv });
        break;
      case 'CAA':
        for (const caa of entry.CAA ?? []) answers.push({ ...base, type: 'CAA', data: caa });
        break;
    }
  }
  return dnsPacket.encode({
    type: 'response',
    id: query.id ?? 0,
    flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (entry === undefined ? NXDOMAIN : 0),
    questions: query.questions ?? [],
    answers,
  });
}

// ---------------------------------------------------------------------------------------------------- plumbing

interface Listening {
  listen(port: number, host: string, callback: () => void): unknown;
  address(): AddressInfo | string | null;
  once(event: 'error', listener: (error: Error) => void): unknown;
}

function listen(server: Listening, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
  });
}

function closeServer(server: { close(callback: (error?: Error) => void): unknown }): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

function trackSocket(sockets: Set<Socket>, socket: Socket): void {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
}

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
