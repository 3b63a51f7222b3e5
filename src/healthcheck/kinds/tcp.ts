/**
 * TCP check: connect to `target:port` within the timeout and close at once, nothing sent. `should-fail` inverts
 * the outcome (a port that must stay closed).
 */
import { connect } from 'node:net';
import { formatDuration } from '../../common/duration.ts';
import { Type } from '@sinclair/typebox';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  errorText,
  ipField,
  joinHostPort,
  hostTarget,
  parseBase,
  portField,
  timeoutText,
  validateShape,
} from './common.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, type Prepared } from './types.ts';

export interface TcpDefinition extends BaseDefinition {
  kind: 'tcp';
  target: string;
  port: number;
  sourceIp?: string;
  shouldFail: boolean;
}

export const tcpSchema = checkSchema({
  target: Type.String(),
  port: Type.Integer(),
  'source-ip': Type.Optional(Type.String()),
  'should-fail': Type.Optional(Type.Boolean()),
});

export function parseTcp(raw: unknown): TcpDefinition {
  const input = validateShape(tcpSchema, raw);
  return {
    ...parseBase('tcp', input),
    target: hostTarget(input.target, 'port'),
    port: portField('port', input.port),
    ...(input['source-ip'] !== undefined ? { sourceIp: ipField('source-ip', input['source-ip']) } : {}),
    shouldFail: input['should-fail'] ?? false,
  };
}

export function tcpToJson(def: TcpDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.target = def.target;
  json.port = def.port;
  if (def.sourceIp !== undefined) json['source-ip'] = def.sourceIp;
  json.timeout = formatDuration(def.timeoutNs);
  json['should-fail'] = def.shouldFail;
  json.kind = def.kind;
  return json;
}

export function tcpSummary(def: TcpDefinition): string {
  const summary = describeCheck('TCP', def.description, `${def.target}:${def.port}`);
  return def.shouldFail ? `${summary}. This healthcheck has should-fail=true.` : summary;
}

/** Resolves once connected (the socket is closed at once); rejects with the connect error or on abort. */
function connectTcp(host: string, port: number, localAddress: string | undefined, signal: AbortSignal, timeoutNs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new Error(timeoutText(timeoutNs)));
      return;
    }
    const socket = connect({ host, port, ...(localAddress !== undefined ? { localAddress } : {}) });
    const onAbort = (): void => {
      socket.destroy();
      reject(new Error(timeoutText(timeoutNs)));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve();
    });
    socket.on('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      reject(error);
    });
  });
}

export async function runTcp(def: TcpDefinition, signal: AbortSignal): Promise<void> {
  const address = joinHostPort(def.target, def.port);
  try {
    await connectTcp(def.target, def.port, def.sourceIp, signal, def.timeoutNs);
  } catch (error) {
    if (def.shouldFail) return;
    throw new CheckFailure(`TCP connection failed on ${address}: ${errorText(error)}`);
  }
  if (def.shouldFail) throw new CheckFailure(`TCP check is successful on ${address} but an error was expected`);
}

export const tcpKind: CheckKind<TcpDefinition> = {
  kind: 'tcp',
  schema: tcpSchema,
  parse: parseTcp,
  toJson: tcpToJson,
  summary: tcpSummary,
  prepare: (def) => Promise.resolve<Prepared>({ run: (signal) => runTcp(def, signal), close: () => Promise.resolve() }),
};
