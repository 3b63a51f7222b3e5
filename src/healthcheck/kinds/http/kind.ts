/**
 * HTTP check: its definition (schema, parsing, JSON form, summary). A run sends one request through a Node Agent
 * shared by the checks that connect the same way (keep-alive connections are reused from one run to the next, and
 * between checks of one server), then the status must be in `valid-status` and every `body-regexp` must match the
 * body (RE2 syntax and linear time, as Go's regexp: src/common/regex.ts), and every `json` condition must hold
 * (json.ts); that run is probe.ts's. The run signal
 * bounds everything, body read included.
 */
import { type Static, Type } from '@sinclair/typebox';
import { formatDuration } from '../../../common/duration.ts';
import { compileRegex } from '../../../common/regex.ts';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  errorText,
  ipField,
  hostTarget,
  parseBase,
  portField,
  withFields,
} from '../common.ts';
import { parseTlsClient, tlsClientProperties, tlsFilesToJson } from '../tls-client.ts';
import { Problems } from '../problems.ts';
import { jsonConditionSchema, parseJsonConditions } from './json.ts';
import { HTTP_METHODS, type HttpDefinition, type HttpMethod } from './definition.ts';
import { prepareHttp } from './probe.ts';
import { type CheckJson, type CheckKind } from '../types.ts';
import { CheckValidationError } from '../validation-error.ts';

const StringMap = Type.Record(Type.String(), Type.String());

const httpProperties = {
  url: Type.Optional(
    Type.String({
      description:
        'shorthand for protocol, target, port and path: `https://host:port/path?query` (docs/checks.md "HTTP"); not with them',
    }),
  ),
  target: Type.Optional(Type.String({ description: 'required without url' })),
  port: Type.Optional(Type.Integer({ description: 'required without url' })),
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
  'source-ip': Type.Optional(Type.String()),
  ...tlsClientProperties,
};
const httpSchema = checkSchema(httpProperties);
/** Without `url`, `target` and `port` are required, and reported in the schema's order as they always were. */
const httpFieldsSchema = checkSchema({ ...httpProperties, target: Type.String(), port: Type.Integer() });

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE_FORBIDDEN = /[\r\n\0]/;

/** The fields `url` stands for: given with it, they are a conflict. */
const URL_FIELDS = ['protocol', 'target', 'port', 'path', 'query'] as const;

interface Where {
  target: string;
  port: number;
  protocol: string;
  path: string;
}

/** `url` expanded: the default port of its scheme, an IPv6 literal without its brackets, the query kept in the
 *  path as written (sent verbatim). No user name or password: they would end up in every listing. */
function expandUrl(text: string): Where {
  const expected = `must be an http:// or https:// URL such as "https://example.com:8443/health?full=1", got ${JSON.stringify(text.slice(0, 200))}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CheckValidationError('url', expected);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '')
    throw new CheckValidationError('url', expected);
  if (url.username !== '' || url.password !== '')
    throw new CheckValidationError(
      'url',
      'must not carry a user name or password: give them in headers (Authorization)',
    );
  if (url.hash !== '') throw new CheckValidationError('url', 'must not have a fragment (#...), which is never sent');
  const protocol = url.protocol.slice(0, -1);
  return {
    protocol,
    target: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (protocol === 'https' ? 443 : 80) : Number(url.port),
    path: url.pathname + url.search,
  };
}

/** Where the check connects: from `url`, or from the fields it stands for. */
function whereOf(input: Static<typeof httpSchema>, problems: Problems): Where | undefined {
  if (input.url !== undefined) {
    const given = URL_FIELDS.filter((field) => input[field] !== undefined);
    if (given.length > 0) {
      problems.add('url', `give either url or ${given.join(', ')}, not both (url stands for ${URL_FIELDS.join(', ')})`);
      return undefined;
    }
    return problems.check(() => expandUrl(input.url as string), undefined);
  }
  const target = problems.check(() => hostTarget(input.target as string, 'protocol-port-path'), undefined);
  const port = problems.check(() => portField('port', input.port as number), undefined);
  const protocol = input.protocol ?? 'http';
  if (protocol !== 'http' && protocol !== 'https')
    problems.add('protocol', `must be "http" or "https", got ${JSON.stringify(protocol)}`);
  const path = input.path ?? '';
  if (path !== '' && !path.startsWith('/')) problems.add('path', `must start with "/", got ${JSON.stringify(path)}`);
  return target === undefined || port === undefined ? undefined : { target, port, protocol, path };
}

function parseHttp(raw: unknown): HttpDefinition {
  const byUrl = typeof raw === 'object' && raw !== null && 'url' in raw;
  const { input, problems } = Problems.shape(byUrl ? httpSchema : httpFieldsSchema, raw);
  const base = parseBase('http', input, problems);
  const where = whereOf(input, problems);
  // A bulk-created upstream check lists `"method": ""`; posting it back means GET.
  const method = input.method === undefined || input.method === '' ? 'GET' : input.method;
  if (!(HTTP_METHODS as readonly string[]).includes(method)) {
    problems.add('method', `must be one of ${HTTP_METHODS.join(', ')}, got ${JSON.stringify(method)}`);
  }
  const validStatus = [...(input['valid-status'] ?? [])];
  if (input['valid-status'] !== undefined && validStatus.length === 0)
    problems.add('valid-status', 'must list at least one status code');
  validStatus.forEach((status, i) => {
    if (status < 100 || status > 599) problems.add(`valid-status[${i}]`, `must be between 100 and 599, got ${status}`);
  });
  const headers = { ...input.headers };
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) problems.add(`headers.${name}`, 'is not a valid header name');
    else if (HEADER_VALUE_FORBIDDEN.test(value)) problems.add(`headers.${name}`, 'must not contain CR, LF or NUL');
  }
  if (input.host !== undefined && HEADER_VALUE_FORBIDDEN.test(input.host))
    problems.add('host', 'must not contain CR, LF or NUL');
  const bodyRegexp = [...(input['body-regexp'] ?? [])];
  bodyRegexp.forEach((pattern, i) => {
    try {
      compileRegex(pattern, 'search');
    } catch (error) {
      problems.add(`body-regexp[${i}]`, `must be a valid RE2 regular expression: ${errorText(error)}`);
    }
  });
  const json = problems.check(() => parseJsonConditions(input.json), []);
  const sourceIp =
    input['source-ip'] === undefined
      ? undefined
      : problems.check(() => ipField('source-ip', input['source-ip'] as string), undefined);
  const tls = parseTlsClient(input, problems);
  problems.throwIfAny();
  const { target, port, protocol, path } = where as Where;
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
    json,
    validStatus,
    redirect: input.redirect ?? false,
    ...(sourceIp !== undefined ? { sourceIp } : {}),
    ...tls,
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
