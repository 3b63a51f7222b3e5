/**
 * What an HTTP check does when it runs (src/healthcheck/kinds/http.ts holds its definition): the request built once
 * as Go's client would send it, sent through an undici Agent shared by the checks that connect the same way, and the
 * answer judged as upstream words it (status in `valid-status`, every `body-regexp` matching the body).
 */
import { isIP } from 'node:net';
import type { Dispatcher } from 'undici';
import { durationToMs } from '../../common/duration.ts';
import { redirectInterceptor } from '../../common/undici.ts';
import { compileRegex } from '../../common/regex.ts';
import { errorText, joinHostPort, loadTlsFiles, timeoutText, type TlsMaterial } from './common.ts';
import { acquireAgent } from './http-agents.ts';
import { JSON_BODY_LIMIT, JsonConditions } from './http-json.ts';
import type { HttpDefinition, HttpMethod } from './http.ts';
import { CheckFailure, type Prepared } from './types.ts';

/**
 * The path and query as Go's client sends them: when `query` is set, it is merged with the path's own query
 * and the whole is re-encoded sorted by key (url.Values.Encode); otherwise the path is kept verbatim.
 */
function pathWithQuery(path: string, query: Record<string, string>): string {
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
  return { dispatcher: def.redirect ? agent.compose(redirectInterceptor()({ maxRedirections: 10 })) : agent, release };
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
  /** Null without `json` conditions. */
  readonly json: JsonConditions | null;
  /** Bytes of the body a run keeps: the message quotes the first 1000, the regexps need all of it, the JSON
   *  conditions up to their limit and one byte more (to tell a body over the limit). */
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
    this.json = def.json.length > 0 ? new JsonConditions(def.json) : null;
    this.keptBytes = this.regexps.length > 0 ? Infinity : this.json !== null ? JSON_BODY_LIMIT + 1 : MESSAGE_BODY_BYTES;
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
    const { def, regexps, json } = this.probe;
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
    const jsonFailure = json?.failure(body) ?? null;
    if (jsonFailure !== null) {
      this.fail(jsonFailure);
      return;
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
