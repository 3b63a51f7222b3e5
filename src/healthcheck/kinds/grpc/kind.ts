/**
 * gRPC check: calls the standard health service (grpc.health.v1.Health/Check, the protocol every gRPC stack ships)
 * for `service` on `target:port`, in clear text or with `tls`; the answer must be SERVING. The call is
 * probe.ts's.
 */
import { Type } from '@sinclair/typebox';
import { formatDuration } from '../../../common/duration.ts';
import { baseToJson, checkSchema, describeCheck, hostTarget, parseBase, portField, withFields } from '../common.ts';
import { parseTlsClient, tlsClientProperties, tlsFilesToJson } from '../tls-client.ts';
import { Problems } from '../problems.ts';
import type { GrpcDefinition } from './definition.ts';
import { prepareGrpc } from './probe.ts';
import { type CheckJson, type CheckKind } from '../types.ts';

const grpcSchema = checkSchema({
  target: Type.String(),
  port: Type.Integer(),
  service: Type.Optional(Type.String()),
  tls: Type.Optional(Type.Boolean()),
  ...tlsClientProperties,
});

function parseGrpc(raw: unknown): GrpcDefinition {
  const { input, problems } = Problems.shape(grpcSchema, raw);
  const base = parseBase('grpc', input, problems);
  const tls = input.tls ?? false;
  const client = parseTlsClient(input, problems);
  if (!tls) {
    // TLS options on a clear-text check would be silently ignored: say so instead.
    for (const key of ['insecure', 'cacert', 'cert', 'key'] as const)
      if (input[key] !== undefined) problems.add(key, 'only applies with "tls": true');
    if (client.serverName !== undefined) problems.add('server-name', 'only applies with "tls": true');
  }
  const target = problems.check(() => hostTarget(input.target, 'port'), '');
  const port = problems.check(() => portField('port', input.port), 0);
  problems.throwIfAny();
  return withFields(base, {
    target,
    port,
    service: input.service ?? '',
    tls,
    ...client,
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
