/**
 * TLS check: connect, handshake (verified unless `insecure`), and with `expiration-delay` fail when the earliest
 * NotAfter of the presented chain falls within the delay. Fixed upstream bugs: SNI defaults to `target` (unless
 * it is an IP) and the handshake is bounded by the timeout.
 */
import { connect, type DetailedPeerCertificate } from 'node:tls';
import { Type } from '@sinclair/typebox';
import { Duration, formatDuration } from '../../../common/duration.ts';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  expirationDelay,
  errorText,
  joinHostPort,
  parseBase,
  timeoutText,
  withFields,
} from '../common.ts';
import {
  loadTlsFiles,
  parseTlsClient,
  sniOf,
  tlsClientProperties,
  tlsConnectOptions,
  tlsFilesToJson,
  type TlsClient,
  type TlsMaterial,
} from '../tls-client.ts';
import { earliestExpiry, goUtcTime } from '../certificates.ts';
import { type HostPort, hostPortToJson, parseHostPort } from '../host-port.ts';
import { Problems } from '../problems.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, type Prepared } from '../types.ts';

export interface TlsDefinition extends BaseDefinition, TlsClient, HostPort {
  kind: 'tls';
  /** 0: no expiry check. */
  expirationDelayNs: number;
}

const tlsSchema = checkSchema({
  target: Type.String(),
  port: Type.Integer(),
  'expiration-delay': Type.Optional(Duration),
  'source-ip': Type.Optional(Type.String()),
  ...tlsClientProperties,
});

function parseTls(raw: unknown): TlsDefinition {
  const { input, problems } = Problems.shape(tlsSchema, raw);
  const base = parseBase('tls', input, problems);
  const expirationDelayNs = problems.check(() => expirationDelay(input['expiration-delay']), 0);
  const { target, port, sourceIp } = parseHostPort(input, problems);
  const tls = parseTlsClient(input, problems);
  problems.throwIfAny();
  return withFields(base, {
    target,
    port,
    expirationDelayNs,
    ...(sourceIp !== undefined ? { sourceIp } : {}),
    ...tls,
  });
}

function tlsToJson(def: TlsDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  hostPortToJson(def, json);
  json.timeout = formatDuration(def.timeoutNs);
  tlsFilesToJson(def, json);
  if (def.serverName !== undefined) json['server-name'] = def.serverName;
  json.insecure = def.insecure;
  json['expiration-delay'] = formatDuration(def.expirationDelayNs);
  json.kind = def.kind;
  return json;
}

function tlsSummary(def: TlsDefinition): string {
  return describeCheck('TLS', def.description, `${def.target}:${def.port}`);
}

function handshake(def: TlsDefinition, tls: TlsMaterial, signal: AbortSignal): Promise<DetailedPeerCertificate> {
  const address = joinHostPort(def.target, def.port);
  const servername = sniOf(def);
  return new Promise((resolve, reject) => {
    let connected = false;
    const fail = (tail: string): void => {
      reject(
        new CheckFailure(
          connected ? `TLS handshake failed on ${address}: ${tail}` : `TLS connection failed on ${address}: ${tail}`,
        ),
      );
    };
    if (signal.aborted) {
      fail(timeoutText(def.timeoutNs));
      return;
    }
    const socket = connect({
      host: def.target,
      port: def.port,
      ...tlsConnectOptions(def, tls, servername),
      ...(def.sourceIp !== undefined ? { localAddress: def.sourceIp } : {}),
    });
    const onAbort = (): void => {
      socket.destroy();
      fail(timeoutText(def.timeoutNs));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => {
      connected = true;
    });
    socket.once('secureConnect', () => {
      signal.removeEventListener('abort', onAbort);
      const certificate = socket.getPeerCertificate(true);
      // Not destroy(): our Finished message may still be buffered, and the server would log a failed handshake.
      socket.destroySoon();
      resolve(certificate);
    });
    socket.on('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      fail(errorText(error));
    });
  });
}

async function prepareTls(def: TlsDefinition): Promise<Prepared> {
  const tls = await loadTlsFiles(def);
  let lastExpirySeconds: number | undefined;
  const run = async (signal: AbortSignal): Promise<void> => {
    const certificate = await handshake(def, tls, signal);
    const expiry = earliestExpiry(certificate);
    lastExpirySeconds = Math.floor(expiry.getTime() / 1000);
    if (def.expirationDelayNs === 0) return;
    if (expiry.getTime() < Date.now() + def.expirationDelayNs / 1e6) {
      throw new CheckFailure(
        `the certificate for ${joinHostPort(def.target, def.port)} will expire at ${goUtcTime(expiry)}`,
      );
    }
  };
  return { run, close: () => Promise.resolve(), certificateExpirySeconds: () => lastExpirySeconds };
}

export const tlsKind: CheckKind<TlsDefinition> = {
  kind: 'tls',
  schema: tlsSchema,
  parse: parseTls,
  toJson: tlsToJson,
  summary: tlsSummary,
  prepare: prepareTls,
};
