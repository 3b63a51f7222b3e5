/**
 * What an HTTP check does when it runs (kind.ts holds its definition): the request built once (request.ts)
 * as Go's client would send it, sent through a Node http/https Agent shared by the checks that connect the same way,
 * redirects followed as Go follows them when `redirect` is true (redirect.ts), and the answer judged as upstream
 * words it (status in `valid-status`, every `body-regexp` matching the body).
 *
 * Node's own client, not undici: on a new connection (a server that closes idle ones sooner than the check's
 * interval) undici costs about 200 µs of CPU a request against 115 for this probe, and its WebAssembly parser 8 MB of
 * RSS that node:http's native one, already loaded by the API server, does not. On a kept-alive connection this
 * probe costs about 20 to 50 µs more than undici (bench/JOURNAL.md, "HTTP checks on Node's client").
 */
import {
  type Agent as HttpAgent,
  type ClientRequest,
  type IncomingMessage,
  request as httpRequest,
  type RequestOptions,
} from 'node:http';
import { compileRegex } from '../../../common/regex.ts';
import { errorText, joinHostPort, timeoutText } from '../common.ts';
import { loadTlsFiles } from '../tls-client.ts';
import { JSON_BODY_LIMIT, JsonConditions } from './json.ts';
import { type Hop, isRedirectStatus, nextHop } from './redirect.ts';
import type { HttpDefinition } from './definition.ts';
import {
  acquireAgent,
  connectOptions,
  firstHop,
  goMethod,
  https,
  pathWithQuery,
  requestPath,
  sniOption,
} from './request.ts';
import { offRunAbort, onRunAbort, type RunAbortListener } from '../../run-signal.ts';
import { connectionExpirySeconds } from '../certificates.ts';
import { CheckFailure, type Prepared } from '../types.ts';

/** Go's html.EscapeString. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>'"]/g, (c) => HTML_ESCAPES[c] as string);
}
const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', "'": '&#39;', '"': '&#34;' };

/** Upstream quotes the first 1000 bytes of the body in its messages. */
const MESSAGE_BODY_BYTES = 1000;

/** The largest body `body-regexp` is run on; a larger one fails the run, rather than hold what a server streams
 *  until the timeout (at loopback speed, gigabytes). */
const REGEX_BODY_LIMIT = 10 * 1024 * 1024;

export async function prepareHttp(def: HttpDefinition): Promise<Prepared> {
  const tls = await loadTlsFiles(def);
  const { agent, release } = acquireAgent(def);
  return new HttpProbe(def, agent, connectOptions(def, tls), release);
}

/** One request of a run, as node:http takes it. */
interface HopRequest {
  send: (options: RequestOptions, onResponse: (response: IncomingMessage) => void) => ClientRequest;
  options: RequestOptions;
  body: string | undefined;
}

/** What one check's runs share: the request, built once, and how to judge the answer. */
class HttpProbe implements Prepared {
  readonly first: Hop;
  /** The first request, as node:http takes it. */
  readonly firstRequest: HopRequest;
  readonly regexps: { pattern: string; regexp: ReturnType<typeof compileRegex> }[];
  readonly failurePrefix: string;
  readonly goMethod: string;
  /** Null without `json` conditions. */
  readonly json: JsonConditions | null;
  /** Bytes of the body a run keeps: the message quotes the first 1000; the regexps and the JSON conditions need it
   *  up to their limit and one byte more, which tells a body over the limit and ends the read. */
  readonly keptBytes: number;
  /** Whether the read ends once `keptBytes` are in (a body over the limit of the regexps or JSON conditions). */
  readonly endsAtKept: boolean;
  /** The connection of the last answer, whose certificate `degraded.expiry-warning` reads (only when asked). */
  lastSocket: unknown = null;

  constructor(
    readonly def: HttpDefinition,
    private readonly agent: HttpAgent,
    private readonly connect: RequestOptions,
    readonly close: () => Promise<void>,
  ) {
    const shownPath = pathWithQuery(def.path, def.query);
    const origin = `${def.protocol}://${joinHostPort(def.target, def.port)}`;
    this.first = firstHop(def, origin, shownPath);
    // The path as written, not as a URL would normalize it.
    this.firstRequest = this.requestOf(
      this.first,
      def.protocol === 'https',
      def.target,
      def.port,
      requestPath(shownPath),
      def.host,
    );
    this.regexps = def.bodyRegexp.map((pattern) => ({ pattern, regexp: compileRegex(pattern, 'search') }));
    this.goMethod = goMethod(def.method);
    this.failurePrefix = `HTTP request failed: ${this.goMethod} "${origin}${shownPath}": `;
    this.json = def.json.length > 0 ? new JsonConditions(def.json) : null;
    this.keptBytes =
      this.regexps.length > 0 ? REGEX_BODY_LIMIT + 1 : this.json !== null ? JSON_BODY_LIMIT + 1 : MESSAGE_BODY_BYTES;
    this.endsAtKept = this.regexps.length > 0 || this.json !== null;
  }

  /** A redirected request, to the host and path of its URL. */
  redirectRequest(hop: Hop): HopRequest {
    const url = new URL(hop.url);
    const secure = url.protocol === 'https:';
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    return this.requestOf(
      hop,
      secure,
      hostname,
      url.port === '' ? (secure ? 443 : 80) : Number(url.port),
      url.pathname + url.search,
      hop.headers.host,
    );
  }

  /**
   * A request of the check: the check's agent for its own protocol, a connection of its own otherwise.
   * `hostOverride` is the Host header that replaces `host`'s name, for the SNI.
   */
  private requestOf(
    hop: Hop,
    secure: boolean,
    host: string,
    port: number,
    path: string,
    hostOverride: string | undefined,
  ): HopRequest {
    const options: RequestOptions = {
      ...this.connect,
      agent: secure === (this.def.protocol === 'https') ? this.agent : false,
      host,
      port,
      path,
      method: hop.method,
      headers: hop.headers,
      // Node takes the SNI from the Host header; Go takes it from the URL (or server-name).
      ...(secure ? sniOption(this.def.serverName, hostOverride, host) : {}),
    };
    return { send: secure ? https().request : httpRequest, options, body: hop.body };
  }

  /** HTTPS: the earliest expiry of the chain of the last answer's connection (src/healthcheck/states/degraded.ts). */
  peerCertificateExpirySeconds(): number | undefined {
    return connectionExpirySeconds(this.lastSocket);
  }

  run(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const run = new HttpRun(this, signal, resolve, reject);
      if (signal.aborted) run.timedOut();
      else {
        onRunAbort(signal, run);
        run.send(this.firstRequest);
      }
    });
  }
}

/**
 * One run: its requests (one, or one a redirect) and what the answer's body it keeps; the status and the body bytes
 * are all a check needs. It is also the run signal's abort listener.
 */
class HttpRun implements RunAbortListener {
  private request: ClientRequest | null = null;
  /** The request in flight; requests after the first are redirects. */
  private hop: Hop;
  private requests = 1;
  private statusCode = 0;
  private chunks: Buffer[] = [];
  private bytes = 0;
  private settled = false;

  constructor(
    private readonly probe: HttpProbe,
    private readonly signal: AbortSignal,
    private readonly resolve: () => void,
    private readonly reject: (failure: CheckFailure) => void,
  ) {
    this.hop = probe.first;
  }

  /** The run signal fired: the timeout. */
  handleEvent(): void {
    this.timedOut();
  }

  timedOut(): void {
    const timeout = timeoutText(this.probe.def.timeoutNs);
    this.fail(this.statusCode === 0 ? this.probe.failurePrefix + timeout : `Fail to read request body: ${timeout}`);
    this.request?.destroy();
  }

  send({ send, options, body }: HopRequest): void {
    let request: ClientRequest;
    try {
      // Throws on what node:http refuses to send (a header value with a line break, a path with a space).
      request = send(options, (response) => this.onResponse(response));
    } catch (error) {
      this.fail(this.probe.failurePrefix + errorText(error));
      return;
    }
    this.request = request;
    request.on('error', (error) => this.onError(error));
    request.end(body);
  }

  private onResponse(response: IncomingMessage): void {
    if (this.settled) {
      response.destroy();
      return;
    }
    const status = response.statusCode ?? 0;
    if (this.probe.def.redirect && isRedirectStatus(status) && this.redirect(status, response)) return;
    this.statusCode = status;
    this.probe.lastSocket = response.socket;
    response.on('data', (chunk: Buffer) => this.onData(chunk));
    response.on('end', () => this.onEnd());
    response.on('error', (error) => this.onError(error));
  }

  /** Sends the request a redirect asks for; false when the response is the answer. */
  private redirect(status: number, response: IncomingMessage): boolean {
    let next: Hop | null;
    try {
      next = nextHop(this.probe.first, this.hop, this.requests, status, response.headers.location, this.probe.goMethod);
    } catch (error) {
      response.destroy();
      this.fail((error as Error).message);
      return true;
    }
    if (next === null) return false;
    // Read to its end, so that its connection goes back to the agent.
    response.resume();
    this.hop = next;
    this.requests++;
    this.send(this.probe.redirectRequest(next));
    return true;
  }

  private onData(chunk: Buffer): void {
    const room = this.probe.keptBytes - this.bytes;
    if (room <= 0) return;
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(kept);
    this.bytes += kept.length;
    if (this.bytes === this.probe.keptBytes && this.probe.endsAtKept) {
      // Judged as it is (its status first, then the limit); the rest is not read.
      this.onEnd();
      this.request?.destroy();
    }
  }

  private onEnd(): void {
    if (this.settled) return;
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.bytes);
    const message = body.subarray(0, MESSAGE_BODY_BYTES).toString('utf8');
    const { def, regexps, json } = this.probe;
    if (!def.validStatus.includes(this.statusCode)) {
      this.fail(`HTTP request failed: status ${this.statusCode}. Body: '${escapeHtml(message)}'`);
      return;
    }
    if (regexps.length > 0) {
      if (body.length > REGEX_BODY_LIMIT) {
        this.fail(`healthcheck body is larger than ${REGEX_BODY_LIMIT} bytes, the limit of body-regexp`);
        return;
      }
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

  private onError(error: Error): void {
    if (this.settled) return;
    // An error once the headers are in is a failure to read the body, as upstream words it.
    this.fail(
      this.statusCode === 0
        ? this.probe.failurePrefix + errorText(error)
        : `Fail to read request body: ${errorText(error)}`,
    );
  }

  private fail(message: string): void {
    if (this.settled) return;
    this.finish();
    this.reject(new CheckFailure(message));
  }

  private finish(): void {
    this.settled = true;
    this.chunks = [];
    offRunAbort(this.signal, this);
  }
}
