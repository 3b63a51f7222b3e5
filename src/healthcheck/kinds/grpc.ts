/**
 * gRPC check: calls the standard health service (grpc.health.v1.Health/Check, the protocol every gRPC stack ships)
 * for `service` on `target:port`, in clear text or with `tls`; the answer must be SERVING. The call is
 * grpc-probe.ts's.
 */
import { Type } from '@sinclair/typebox';
import { formatDuration } from '../../common/duration.ts';
import {
  aliased,
  baseToJson,
  checkSchema,
  describeCheck,
  hostTarget,
  parseBase,
  parseTlsFiles,
  portField,
  type TlsClientFiles,
  tlsClientProperties,
  tlsFilesToJson,
  validateShape,
  withFields,
} from './common.ts';
import { prepareGrpc } from './grpc-probe.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckValidationError } from './types.ts';

export interface GrpcDefinition extends BaseDefinition, TlsClientFiles {
  kind: 'grpc';
  target: string;
  port: number;
  /** `""`: the server as a whole (the health protocol's convention). */
  service: string;
  tls: boolean;
  insecure: boolean;
  serverName?: string;
}

const grpcSchema = checkSchema({
  target: Type.String(),
  port: Type.Integer(),
  service: Type.Optional(Type.String()),
  tls: Type.Optional(Type.Boolean()),
  'server-name': Type.Optional(Type.String()),
  servername: Type.Optional(Type.String()),
  ...tlsClientProperties,
});

function parseGrpc(raw: unknown): GrpcDefinition {
  const input = validateShape(grpcSchema, raw);
  const base = parseBase('grpc', input);
  const tls = input.tls ?? false;
  const serverName = aliased('server-name', input['server-name'], 'servername', input.servername) ?? '';
  const files = parseTlsFiles(input);
  if (!tls) {
    // TLS options on a clear-text check would be silently ignored: say so instead.
    const tlsOnly =
      (['insecure', 'cacert', 'cert', 'key'] as const).find((key) => input[key] !== undefined) ??
      (serverName !== '' ? 'server-name' : undefined);
    if (tlsOnly !== undefined) throw new CheckValidationError(tlsOnly, 'only applies with "tls": true');
  }
  return withFields(base, {
    target: hostTarget(input.target, 'port'),
    port: portField('port', input.port),
    service: input.service ?? '',
    tls,
    insecure: input.insecure ?? false,
    ...(serverName !== '' ? { serverName } : {}),
    ...files,
  });
}

function grpcToJson(def: GrpcDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.target = def.target;
  json.port = def.port;
  json.service = def.service;
  json.tls = def.tls;
  if (def.tls) json.insecure = def.insecure;
  if (def.serverName !== undefined) json['server-name'] = def.serverName;
  json.timeout = formatDuration(def.timeoutNs);
  tlsFilesToJson(def, json);
  json.kind = def.kind;
  return json;
}

function grpcSummary(def: GrpcDefinition): string {
  const where = `${def.target}:${def.port}`;
  return describeCheck('gRPC', def.description, def.service === '' ? where : `${where} (service ${def.service})`);
}

export const grpcKind: CheckKind<GrpcDefinition> = {
  kind: 'grpc',
  schema: grpcSchema,
  parse: parseGrpc,
  toJson: grpcToJson,
  summary: grpcSummary,
  prepare: prepareGrpc,
};
