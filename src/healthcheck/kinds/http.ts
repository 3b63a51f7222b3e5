/**
 * HTTP check: one request per run through an undici Agent shared by the checks that connect the same way
 * (keep-alive connections are reused from one run to the next, and between checks of one server), then the
 * status must be in `valid-status` and every `body-regexp` must match the body (RE2 syntax and linear time, as
 * Go's regexp: src/common/regex.ts). The run signal bounds everything, body read included.
 */
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { type Dispatcher, interceptors } from 'undici';
import { durationToMs, formatDuration } from '../../common/duration.ts';
import { compileRegex } from '../../common/regex.ts';
import {
  baseToJson,
  checkSchema,
  describeCheck,
  errorText,
  ipField,
  joinHostPort,
  loadTlsFiles,
  hostTarget,
  parseBase,
  parseTlsFiles,
  portField,
  aliased,
  timeoutText,
  type TlsClientFiles,
  tlsClientProperties,
  type TlsMaterial,
  tlsFilesToJson,
  validateShape,
  withFields,
} from './common.ts';
import { acquireAgent } from './http-agents.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, CheckValidationError, type Prepared } from './types.ts';

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
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
  validStatus: number[];
  redirect: boolean;
  insecure: boolean;
  serverName?: string;
  sourceIp?: string;
}

const StringMap = Type.Record(Type.String(), Type.String());

export const httpSchema = checkSchema({
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
  redirect: Type.Optional(Type.Boolean()),
  'server-name': Type.Optional(Type.String()),
  /** Upstream's YAML spelling of `server-name` (docs/checks.md, HTTP). */
  servername: Type.Optional(Type.String()),
  'source-ip': Type.Optional(Type.String()),
  ...tlsClientProperties,
});

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE_FORBIDDEN = /[\r\n\0]/;

export function parseHttp(raw: unknown): HttpDefinition {
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
    throw new CheckValidationError('method', `must be one of ${HTTP_METHODS.join(', ')}, got ${JSON.stringify(method)}`);
  }
  const path = input.path ?? '';
  if (path !== '' && !path.startsWith('/')) throw new CheckValidationError('path', `must start with "/", got ${JSON.stringify(path)}`);
  const validStatus = [...input['valid-status']];
  if (validStatus.length === 0) throw new CheckValidationError('valid-status', 'must list at least one status code');
  validStatus.forEach((status, i) => {
    if (status < 100 || status > 599) throw new CheckValidationError(`valid-status[${i}]`, `must be between 100 and 599, got ${status}`);
  });
  const headers = { ...input.headers };
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) throw new CheckValidationError(`headers.${name}`, 'is not a valid header name');
    if (HEADER_VALUE_FORBIDDEN.test(value)) throw new CheckValidationError(`headers.${name}`, 'must not contain CR, LF or NUL');
  }
  if (input.host !== undefined && HEADER_VALUE_FORBIDDEN.test(input.host)) throw new CheckValidationError('host', 'must not contain CR, LF or NUL');
  const bodyRegexp = [...(input['body-regexp'] ?? [])];
  bodyRegexp.forEach((pattern, i) => {
    try {
      compileRegex(pattern, 'search');
    } catch (error) {
      throw new CheckValidationError(`body-regexp[${i}]`, `must be a valid RE2 regular expression: ${errorText(error)}`);
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
    validStatus,
    redirect: input.redirect ?? false,
    insecure: input.insecure ?? false,
    ...(serverName !== '' ? { serverName } : {}),
    ...(input['source-ip'] !== undefined ? { sourceIp: ipField('source-ip', input['source-ip']) } : {}),
    ...parseTlsFiles(input),
  });
}

export function httpToJson(def: HttpDefinition, source = ''): CheckJson {
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
  json.insecure = def.insecure;
  json['server-name'] = def.serverName ?? '';
  json.timeout = formatDuration(def.timeoutNs);
  tlsFilesToJson(def, json);
  json.kind = def.kind;
  return json;
}

export function httpSummary(def: HttpDefinition): string {
  return describeCheck('HTTP', def.description, `${def.target}:${def.port}`);
}

/**
 * The path and query as Go's client sends them: when `query` is set, it is merged with the path's own query
 * and the whole is re-encoded sorted by key (url.Values.Encode); otherwise the path is kept verbatim.
 */
export function pathWithQuery(path: string, query: Record<string, string>): string {
  const extra = Object.entries(query);
  if (extra.length === 0) return path;
  const mark = path.indexOf('?');
  const pathname = mark === -1 ? path : path.slice(0, mark);
  const pairs: [string, string][] = mark === -1 ? [] : [...new URLSearchParams(path.slice(mark + 1))];
  pairs.push(...extra);
  // Stable: values of one key keep the path's before the configured one, as url.Values.Add does.
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return `${pathname}?${pairs.map(([key, value]) => `${queryEscape(key)}=${queryEscape(value)}`).join('&')}`;
}

/** Go's url.QueryEscape: only `A-Za-z0-9-_.~` stay as they are, spaces become `+`. */
function queryEscape(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

/** Go's html.EscapeString. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>'"]/g, (c) => HTML_ESCAPES[c] as string);
}
const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', "'": '&#39;', '"': '&#34;' };

/** Upstream quotes the first 1000 bytes of the body in its messages. */
const MESSAGE_BODY_BYTES = 1000;

/** How long an idle connection is kept: until the next run (so it is reused), and no longer than Go's 90 s. */
function keepAliveMs(def: HttpDefinition): number {
  return Math.min(90_000, Math.max(4_000, durationToMs(def.intervalNs) + 1_000));
}

/**
 * The check's Agent, shared with the checks that connect the same way (http-agents.ts); its connections
 * outlive a run so that the next run reuses them.
 */
function createDispatcher(def: HttpDefinition, tls: TlsMaterial): { dispatcher: Dispatcher; release: () => Promise<void> } {
  // The run signal is the deadline; undici's own timers only need to not fire first.
  const undiciTimeoutMs = durationToMs(def.timeoutNs) + 1_000;
  const keepAliveTimeoutMs = keepAliveMs(def);
  const ownMaterial = def.cacert !== undefined || def.cert !== undefined;
  const key = ownMaterial ? null : `${def.insecure}|${def.sourceIp ?? ''}|${undiciTimeoutMs}|${keepAliveTimeoutMs}`;
  const { agent, release } = acquireAgent(key, {
    keepAliveTimeoutMs,
    undiciTimeoutMs,
    connect: { rejectUnauthorized: !def.insecure, ...tls, ...(def.sourceIp !== undefined ? { localAddress: def.sourceIp } : {}) },
  });
  return { dispatcher: def.redirect ? agent.compose(interceptors.redirect({ maxRedirections: 10 })) : agent, release };
}

function requestOptions(def: HttpDefinition, origin: string, shownPath: string): Dispatcher.RequestOptions {
  const headers: Record<string, string> = { 'user-agent': 'Cabourotte' };
  for (const [name, value] of Object.entries(def.headers)) headers[name.toLowerCase()] = value;
  if (def.host !== undefined) headers.host = def.host;
  return {
    origin,
    path: shownPath.startsWith('/') ? shownPath : `/${shownPath}`,
    method: def.method,
    headers,
    ...(def.body !== undefined ? { body: def.body } : {}),
    // undici takes the SNI from the Host header; Go takes it from the URL (or server-name).
    ...(def.protocol === 'https' ? sniOption(def) : {}),
  };
}

export async function prepareHttp(def: HttpDefinition): Promise<Prepared> {
  const { dispatcher, release } = createDispatcher(def, await loadTlsFiles(def));
  const shownPath = pathWithQuery(def.path, def.query);
  const origin = `${def.protocol}://${joinHostPort(def.target, def.port)}`;
  const request = requestOptions(def, origin, shownPath);
  const regexps = def.bodyRegexp.map((pattern) => ({ pattern, regexp: compileRegex(pattern, 'search') }));
  const failurePrefix = `HTTP request failed: ${goMethod(def.method)} "${origin}${shownPath}": `;

  const run = async (signal: AbortSignal): Promise<void> => {
    let response: Dispatcher.ResponseData;
    // Runs of a check never overlap: the options object is the check's, only its signal changes.
    request.signal = signal;
    try {
      response = await dispatcher.request(request);
    } catch (error) {
      throw new CheckFailure(failurePrefix + (signal.aborted ? timeoutText(def.timeoutNs) : errorText(error)));
    }
    let body: Buffer;
    try {
      body = Buffer.from(await response.body.arrayBuffer());
    } catch (error) {
      throw new CheckFailure(`Fail to read request body: ${signal.aborted ? timeoutText(def.timeoutNs) : errorText(error)}`);
    }
    const message = body.subarray(0, MESSAGE_BODY_BYTES).toString('utf8');
    if (!def.validStatus.includes(response.statusCode)) {
      throw new CheckFailure(`HTTP request failed: status ${response.statusCode}. Body: '${escapeHtml(message)}'`);
    }
    if (regexps.length === 0) return;
    const text = body.toString('utf8');
    for (const { pattern, regexp } of regexps) {
      if (!regexp.test(text)) throw new CheckFailure(`healthcheck body does not match regex ${pattern}: ${message}`);
    }
  };
  return { run, close: release };
}

function sniOption(def: HttpDefinition): { servername?: string } {
  if (def.serverName !== undefined) return { servername: def.serverName };
  if (def.host !== undefined && isIP(def.target) === 0) return { servername: def.target };
  return {};
}

/** Go's url.Error spells the method `Get`, `Post`, ... */
function goMethod(method: HttpMethod): string {
  return method.charAt(0) + method.slice(1).toLowerCase();
}

export const httpKind: CheckKind<HttpDefinition> = {
  kind: 'http',
  schema: httpSchema,
  parse: parseHttp,
  toJson: httpToJson,
  summary: httpSummary,
  prepare: prepareHttp,
};
