/**
 * HTTP check: its definition (schema, parsing, JSON form, summary). A run sends one request through a Node Agent
 * shared by the checks that connect the same way (keep-alive connections are reused from one run to the next, and
 * between checks of one server), then the status must be in `valid-status` and every `body-regexp` must match the
 * body (RE2 syntax and linear time, as Go's regexp: src/common/regex.ts), and every `json` condition must hold
 * (http-json.ts); that run is http-probe.ts's. The run signal
 * bounds everything, body read included.
 */
import { Type } from '@sinclair/typebox';
import { formatDuration } from '../../common/duration.ts';
import { compileRegex } from '../../common/regex.ts';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  errorText,
  ipField,
  hostTarget,
  parseBase,
  parseTlsFiles,
  portField,
  aliased,
  type TlsClientFiles,
  tlsClientProperties,
  tlsFilesToJson,
  validateShape,
  withFields,
} from './common.ts';
import { type JsonCondition, jsonConditionSchema, parseJsonConditions } from './http-json.ts';
import { prepareHttp } from './http-probe.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckValidationError } from './types.ts';

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface HttpDefinition extends BaseDefinition, TlsClientFiles {
  kind: 'http';
  target: string;
  port: number;
  protocol: 'http' | 'https';
  /** As written, possibly with a query string; `""` means `/`. */
  path: string;
  method: HttpMethod;
  /** Host header. */
  host?: string;
  headers: Record<string, string>;
  query: Record<string, string>;
  body?: string;
  /** Patterns as written (checked to compile at parse time). */
  bodyRegexp: string[];
  /** JSON conditions as written (http-json.ts); empty when the body is not parsed. */
  json: JsonCondition[];
  validStatus: number[];
  redirect: boolean;
  insecure: boolean;
  serverName?: string;
  sourceIp?: string;
}

const StringMap = Type.Record(Type.String(), Type.String());

const httpSchema = checkSchema({
  target: Type.String(),
  port: Type.Integer(),
  'valid-status': Type.Array(Type.Integer()),
  protocol: Type.Optional(Type.String()),
  path: Type.Optional(Type.String()),
  method: Type.Optional(Type.String()),
  host: Type.Optional(Type.String({ minLength: 1 })),
  headers: Type.Optional(StringMap),
  query: Type.Optional(StringMap),
  body: Type.Optional(Type.String()),
  'body-regexp': Type.Optional(Type.Array(Type.String())),
  json: Type.Optional(Type.Array(jsonConditionSchema)),
  redirect: Type.Optional(Type.Boolean()),
  'server-name': Type.Optional(Type.String()),
  /** Upstream's YAML spelling of `server-name` (docs/checks.md, HTTP). */
  servername: Type.Optional(Type.String()),
  'source-ip': Type.Optional(Type.String()),
  ...tlsClientProperties,
});

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE_FORBIDDEN = /[\r\n\0]/;

function parseHttp(raw: unknown): HttpDefinition {
  const input = validateShape(httpSchema, raw);
  const base = parseBase('http', input);
  const target = hostTarget(input.target, 'protocol-port-path');
  const port = portField('port', input.port);
  const protocol = input.protocol ?? 'http';
  if (protocol !== 'http' && protocol !== 'https') {
    throw new CheckValidationError('protocol', `must be "http" or "https", got ${JSON.stringify(protocol)}`);
  }
  // A bulk-created upstream check lists `"method": ""`; posting it back means GET.
  const method = input.method === undefined || input.method === '' ? 'GET' : input.method;
  if (!(HTTP_METHODS as readonly string[]).includes(method)) {
    throw new CheckValidationError(
      'method',
      `must be one of ${HTTP_METHODS.join(', ')}, got ${JSON.stringify(method)}`,
    );
  }
  const path = input.path ?? '';
  if (path !== '' && !path.startsWith('/'))
    throw new CheckValidationError('path', `must start with "/", got ${JSON.stringify(path)}`);
  const validStatus = [...input['valid-status']];
  if (validStatus.length === 0) throw new CheckValidationError('valid-status', 'must list at least one status code');
  validStatus.forEach((status, i) => {
    if (status < 100 || status > 599)
      throw new CheckValidationError(`valid-status[${i}]`, `must be between 100 and 599, got ${status}`);
  });
  const headers = { ...input.headers };
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) throw new CheckValidationError(`headers.${name}`, 'is not a valid header name');
    if (HEADER_VALUE_FORBIDDEN.test(value))
      throw new CheckValidationError(`headers.${name}`, 'must not contain CR, LF or NUL');
  }
  if (input.host !== undefined && HEADER_VALUE_FORBIDDEN.test(input.host))
    throw new CheckValidationError('host', 'must not contain CR, LF or NUL');
  const bodyRegexp = [...(input['body-regexp'] ?? [])];
  bodyRegexp.forEach((pattern, i) => {
    try {
      compileRegex(pattern, 'search');
    } catch (error) {
      throw new CheckValidationError(
        `body-regexp[${i}]`,
        `must be a valid RE2 regular expression: ${errorText(error)}`,
      );
    }
  });
  const serverName = aliased('server-name', input['server-name'], 'servername', input.servername) ?? '';
  return withFields(base, {
    target,
    port,
    protocol: protocol as HttpDefinition['protocol'],
    path,
    method: method as HttpMethod,
    ...(input.host !== undefined ? { host: input.host } : {}),
    headers,
    query: { ...input.query },
    ...(input.body !== undefined ? { body: input.body } : {}),
    bodyRegexp,
    json: parseJsonConditions(input.json),
    validStatus,
    redirect: input.redirect ?? false,
    insecure: input.insecure ?? false,
    ...(serverName !== '' ? { serverName } : {}),
    ...(input['source-ip'] !== undefined ? { sourceIp: ipField('source-ip', input['source-ip']) } : {}),
    ...parseTlsFiles(input),
  });
}

function httpToJson(def: HttpDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json['valid-status'] = def.validStatus;
  json.target = def.target;
  if (def.host !== undefined) json.host = def.host;
  json.method = def.method;
  json.port = def.port;
  json.redirect = def.redirect;
  if (def.body !== undefined) json.body = def.body;
  if (Object.keys(def.query).length > 0) json.query = def.query;
  if (Object.keys(def.headers).length > 0) json.headers = def.headers;
  json.protocol = def.protocol;
  if (def.path !== '') json.path = def.path;
  if (def.sourceIp !== undefined) json['source-ip'] = def.sourceIp;
  if (def.bodyRegexp.length > 0) json['body-regexp'] = def.bodyRegexp;
  if (def.json.length > 0) json.json = def.json;
  json.insecure = def.insecure;
  json['server-name'] = def.serverName ?? '';
  json.timeout = formatDuration(def.timeoutNs);
  tlsFilesToJson(def, json);
  json.kind = def.kind;
  return json;
}

function httpSummary(def: HttpDefinition): string {
  return describeCheck('HTTP', def.description, `${def.target}:${def.port}`);
}

export const httpKind: CheckKind<HttpDefinition> = {
  kind: 'http',
  schema: httpSchema,
  parse: parseHttp,
  toJson: httpToJson,
  summary: httpSummary,
  prepare: prepareHttp,
};
