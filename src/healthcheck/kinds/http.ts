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

function requestOptions(def: HttpDefinition, origin: string, shownPath: string): Dispatcher.DispatchOptions {
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
  return new HttpProbe(def, dispatcher, release);
}

/** What one check's runs share: the request, built once, and how to judge the answer. */
class HttpProbe implements Prepared {
  readonly request: Dispatcher.DispatchOptions;
  readonly regexps: { pattern: string; regexp: ReturnType<typeof compileRegex> }[];
  readonly failurePrefix: string;
  /** Bytes of the body a run keeps: the message quotes the first 1000, the regexps need all of it. */
  readonly keptBytes: number;

  constructor(
    readonly def: HttpDefinition,
    private readonly dispatcher: Dispatcher,
    readonly close: () => Promise<void>,
  ) {
    const shownPath = pathWithQuery(def.path, def.query);
    const origin = `${def.protocol}://${joinHostPort(def.target, def.port)}`;
    this.request = requestOptions(def, origin, shownPath);
    this.regexps = def.bodyRegexp.map((pattern) => ({ pattern, regexp: compileRegex(pattern, 'search') }));
    this.failurePrefix = `HTTP request failed: ${goMethod(def.method)} "${origin}${shownPath}": `;
    this.keptBytes = this.regexps.length > 0 ? Infinity : MESSAGE_BODY_BYTES;
  }

  run(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const run = new HttpRun(this, signal, resolve, reject);
      if (signal.aborted) run.timedOut();
      else {
        signal.addEventListener('abort', run, { once: true });
        this.dispatcher.dispatch(this.request, run);
      }
    });
  }
}

/**
 * One request, as an undici dispatch handler: the status and the body bytes are all a check needs, so the
 * response is not turned into a body stream and then read back (about half of undici's cost per request with
 * `dispatcher.request`; docs/performance.md). It is also the run signal's abort listener.
 */
class HttpRun implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private statusCode = 0;
  private chunks: Buffer[] = [];
  private bytes = 0;
  private settled = false;

  constructor(
    private readonly probe: HttpProbe,
    private readonly signal: AbortSignal,
    private readonly resolve: () => void,
    private readonly reject: (failure: CheckFailure) => void,
  ) {}

  /** The run signal fired: the timeout. */
  handleEvent(): void {
    this.timedOut();
  }

  timedOut(): void {
    const timeout = timeoutText(this.probe.def.timeoutNs);
    this.fail(this.statusCode === 0 ? this.probe.failurePrefix + timeout : `Fail to read request body: ${timeout}`);
    // Before onRequestStart the request still waits for a connection: onRequestStart aborts it.
    this.controller?.abort(new Error(timeout));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error(timeoutText(this.probe.def.timeoutNs)));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.statusCode = statusCode;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const room = this.probe.keptBytes - this.bytes;
    if (room <= 0) return;
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(kept);
    this.bytes += kept.length;
  }

  onResponseEnd(): void {
    if (this.settled) return;
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.bytes);
    const message = body.subarray(0, MESSAGE_BODY_BYTES).toString('utf8');
    const { def, regexps } = this.probe;
    if (!def.validStatus.includes(this.statusCode)) {
      this.fail(`HTTP request failed: status ${this.statusCode}. Body: '${escapeHtml(message)}'`);
      return;
    }
    if (regexps.length > 0) {
      const text = body.toString('utf8');
      for (const { pattern, regexp } of regexps) {
        if (!regexp.test(text)) {
          this.fail(`healthcheck body does not match regex ${pattern}: ${message}`);
          return;
        }
      }
    }
    this.finish();
    this.resolve();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) return;
    // An error once the headers are in is a failure to read the body, as upstream words it.
    this.fail(this.statusCode === 0 ? this.probe.failurePrefix + errorText(error) : `Fail to read request body: ${errorText(error)}`);
  }

  private fail(message: string): void {
    if (this.settled) return;
    this.finish();
    this.reject(new CheckFailure(message));
  }

  private finish(): void {
    this.settled = true;
    this.chunks = [];
    this.signal.removeEventListener('abort', this);
  }
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
