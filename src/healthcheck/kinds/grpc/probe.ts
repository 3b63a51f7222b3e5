/**
 * One gRPC health call, spoken over node:http2 rather than through @grpc/grpc-js. The health check is one unary call
 * whose request and answer are one protobuf field each; gRPC on the wire is an HTTP/2 POST with a 5-byte frame
 * before the message and the status in the trailers (the gRPC over HTTP/2 protocol document). A grpc-js channel
 * would add name resolution, load balancing, retries and channelz to every run and about 2 MB of code to the bundle;
 * the tests call a real grpc-js server to hold this to the protocol.
 *
 * Cost: the HTTP/2 session is shared by the checks that connect the same way (same origin, TLS options, no
 * certificate files of their own) and kept between runs, as HTTP checks keep their keep-alive connections, so a run
 * is one stream on an open connection. A run that times out cancels its stream and pings the session: a session
 * that does not answer within the timeout is destroyed, and the next run connects afresh.
 */
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  constants,
  type IncomingHttpHeaders,
  type SecureClientSessionOptions,
} from 'node:http2';

import { errorText, joinHostPort, timeoutText } from '../common.ts';
import { loadTlsFiles, sniOf, tlsConnectOptions, type TlsMaterial } from '../tls-client.ts';
import type { GrpcDefinition } from './definition.ts';
import { connectionExpirySeconds } from '../certificates.ts';
import { CheckFailure, type Prepared } from '../types.ts';

const PATH = '/grpc.health.v1.Health/Check';
/** The health protocol's ServingStatus. */
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];
/** gRPC status codes by number, for the messages. */
const GRPC_CODES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];
/** A health answer is a few bytes; anything past this is not one. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The length-prefixed message: flag 0 (not compressed), length, then HealthCheckRequest{service = 1}. */
function requestFrame(service: string): Buffer {
  const name = Buffer.from(service, 'utf8');
  const length: number[] = [];
  let n = name.length;
  do {
    length.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  const message = name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, ...length]), name]);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

/** HealthCheckResponse.status (field 1, a varint) out of one message; unknown fields are skipped. */
function servingStatus(message: Buffer): number {
  let offset = 0;
  let status = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = message[offset++];
      if (byte === undefined) throw new Error('truncated varint');
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new Error('varint too long');
  };
  while (offset < message.length) {
    const key = varint();
    const wire = key & 7;
    if (key >>> 3 === 1 && wire === 0) status = varint();
    else if (wire === 0) varint();
    else if (wire === 1) offset += 8;
    else if (wire === 2) offset += varint();
    else if (wire === 5) offset += 4;
    else throw new Error(`unknown wire type ${wire}`);
  }
  if (offset > message.length) throw new Error('truncated message');
  return status;
}

interface SharedSession {
  session: ClientHttp2Session | null;
  users: number;
}

/** Sessions by how they connect; a check with certificate files has its own (key null). */
const sessions = new Map<string, SharedSession>();

function sessionOf(shared: SharedSession, origin: string, options: SecureClientSessionOptions): ClientHttp2Session {
  const current = shared.session;
  if (current !== null && !current.closed && !current.destroyed) return current;
  const session = connect(origin, options);
  // An idle session must not keep the process alive; errors end it and the next run reconnects.
  session.unref();
  const drop = (): void => {
    if (shared.session === session) shared.session = null;
  };
  session.on('error', drop);
  session.on('close', drop);
  session.on('goaway', drop);
  shared.session = session;
  return session;
}

export async function prepareGrpc(def: GrpcDefinition): Promise<Prepared> {
  const tls: TlsMaterial = def.tls ? await loadTlsFiles(def) : {};
  const origin = `${def.tls ? 'https' : 'http'}://${joinHostPort(def.target, def.port)}`;
  const servername = sniOf(def);
  const options: SecureClientSessionOptions = def.tls ? tlsConnectOptions(def, tls, servername) : {};
  const ownMaterial = def.cacert !== undefined || def.cert !== undefined;
  const key = ownMaterial ? null : `${origin}|${def.insecure}|${servername ?? ''}`;
  let shared: SharedSession = { session: null, users: 0 };
  if (key !== null) {
    shared = sessions.get(key) ?? shared;
    sessions.set(key, shared);
  }
  shared.users++;
  const address = joinHostPort(def.target, def.port);
  const frame = requestFrame(def.service);
  const headers = {
    [constants.HTTP2_HEADER_METHOD]: 'POST',
    [constants.HTTP2_HEADER_PATH]: PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
    'user-agent': 'vigie',
    // The server's deadline: it may stop working on the call when we stop waiting.
    'grpc-timeout': `${Math.max(1, Math.ceil(def.timeoutNs / 1e6))}m`,
  };
  const failed = (tail: string): CheckFailure => new CheckFailure(`gRPC health check failed on ${address}: ${tail}`);
  const run = (signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(failed(timeoutText(def.timeoutNs)));
        return;
      }
      let session: ClientHttp2Session;
      let stream: ClientHttp2Stream;
      try {
        session = sessionOf(shared, origin, options);
        stream = session.request(headers, { endStream: false });
      } catch (error) {
        reject(failed(errorText(error)));
        return;
      }
      let settled = false;
      let answer: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      let bytes = 0;
      const settle = (failure: CheckFailure | null): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        if (failure !== null && !stream.closed) stream.close(constants.NGHTTP2_CANCEL);
        if (failure === null) resolve();
        else reject(failure);
      };
      const onAbort = (): void => {
        settle(failed(timeoutText(def.timeoutNs)));
        // A session that no longer answers would fail every later run: ping it, and drop it if it stays silent.
        if (!session.destroyed) {
          const timer = setTimeout(() => session.destroy(), def.timeoutNs / 1e6);
          timer.unref();
          session.ping(() => clearTimeout(timer));
        }
      };
      signal.addEventListener('abort', onAbort, { once: true });
      stream.on('response', (received) => {
        answer = received;
      });
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_ANSWER_BYTES) settle(failed(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`));
        else chunks.push(chunk);
      });
      // A stream the session could not open says "The pending stream has been canceled (caused by: ...)": the
      // cause (ECONNREFUSED, a certificate error) is the message.
      stream.on('error', (error: Error & { cause?: unknown }) => settle(failed(errorText(error.cause ?? error))));
      stream.on('trailers', (trailers) => {
        answer = { ...answer, ...trailers };
      });
      stream.on('end', () => settle(judge(answer, Buffer.concat(chunks, bytes), def.service, address, failed)));
      stream.end(frame);
    });
  const close = (): Promise<void> => {
    shared.users--;
    if (shared.users === 0) {
      if (key !== null) sessions.delete(key);
      shared.session?.close();
      shared.session = null;
    }
    return Promise.resolve();
  };
  const peerCertificateExpirySeconds = (): number | undefined =>
    def.tls ? connectionExpirySeconds(shared.session?.socket) : undefined;
  return { run, close, peerCertificateExpirySeconds };
}

/** Null when the call succeeded and the service is SERVING, else the failure. */
function judge(
  answer: IncomingHttpHeaders,
  body: Buffer,
  service: string,
  address: string,
  failed: (tail: string) => CheckFailure,
): CheckFailure | null {
  const httpStatus = answer[constants.HTTP2_HEADER_STATUS];
  if (Number(httpStatus) !== 200) return failed(`HTTP status ${String(httpStatus)} (not a gRPC server?)`);
  const grpcStatus = answer['grpc-status'];
  if (grpcStatus === undefined) return failed('no grpc-status in the answer (not a gRPC server?)');
  const code = Number(grpcStatus);
  if (code !== 0) {
    const detail = typeof answer['grpc-message'] === 'string' ? decodeURIComponent(answer['grpc-message']) : '';
    return failed(`status ${GRPC_CODES[code] ?? 'code'} (${code})${detail !== '' ? `: ${detail}` : ''}`);
  }
  if (body.length < 5 || body[0] !== 0)
    return failed(
      body.length < 5 ? 'no health answer in the response' : 'the answer is compressed, which was not asked for',
    );
  let status: number;
  try {
    status = servingStatus(body.subarray(5, 5 + body.readUInt32BE(1)));
  } catch (error) {
    return failed(`the health answer is not valid protobuf: ${errorText(error)}`);
  }
  if (status === 1) return null;
  return new CheckFailure(
    `gRPC service ${JSON.stringify(service)} on ${address} is ${SERVING_STATUS[status] ?? `in status ${status}`}`,
  );
}
