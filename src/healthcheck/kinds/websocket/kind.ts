/**
 * WebSocket check: open `url` (ws:// or wss://, verified unless `insecure`), send `message` if any, and with
 * `expected-regexp` wait for the server's first message, which must match (RE2, src/common/regex.ts). The run
 * signal bounds it all; the connection is closed at the end of each run (a socket held open between runs would
 * cost the server a client per check and hide a server that no longer accepts new ones).
 */
import { Type } from '@sinclair/typebox';
import WebSocket from 'ws';
import { formatDuration } from '../../../common/duration.ts';
import { mergeHeaders } from '../../../common/headers.ts';
import { compileRegex } from '../../../common/regex.ts';
import { baseToJson, checkSchema, describeCheck, errorText, parseBase, timeoutText, withFields } from '../common.ts';
import {
  loadTlsFiles,
  parseTlsClient,
  tlsClientProperties,
  tlsConnectOptions,
  tlsFilesToJson,
  type TlsClient,
} from '../tls-client.ts';
import { Problems } from '../problems.ts';
import { type BaseDefinition, type CheckJson, type CheckKind, CheckFailure, type Prepared } from '../types.ts';
import { CheckValidationError } from '../validation-error.ts';

export interface WebsocketDefinition extends BaseDefinition, TlsClient {
  kind: 'websocket';
  /** `ws://` or `wss://` URL, as written. */
  url: string;
  headers: Record<string, string>;
  message?: string;
  expectedRegexp?: string;
}

const websocketSchema = checkSchema({
  url: Type.String(),
  headers: Type.Optional(Type.Record(Type.String(), Type.String())),
  message: Type.Optional(Type.String()),
  'expected-regexp': Type.Optional(Type.String()),
  ...tlsClientProperties,
});

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The first message is read up to this size: a check compares a greeting or a status, not a data feed. */
const MAX_PAYLOAD_BYTES = 1024 * 1024;

function urlField(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CheckValidationError('url', `must be a ws:// or wss:// URL, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:')
    throw new CheckValidationError('url', `must be a ws:// or wss:// URL, got ${JSON.stringify(text)}`);
  if (url.username !== '' || url.password !== '')
    throw new CheckValidationError('url', 'must not carry credentials: give them in headers (Authorization)');
  return text;
}

function parseWebsocket(raw: unknown): WebsocketDefinition {
  const { input, problems } = Problems.shape(websocketSchema, raw);
  const base = parseBase('websocket', input, problems);
  const url = problems.check(() => urlField(input.url), '');
  const headers = { ...input.headers };
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) problems.add(`headers.${name}`, 'is not a valid header name');
    else if (/[\r\n\0]/.test(value)) problems.add(`headers.${name}`, 'must not contain CR, LF or NUL');
  }
  const expected = input['expected-regexp'];
  if (expected !== undefined) {
    try {
      compileRegex(expected, 'search');
    } catch (error) {
      problems.add('expected-regexp', `must be a valid RE2 regular expression: ${errorText(error)}`);
    }
  }
  const tls = parseTlsClient(input, problems);
  problems.throwIfAny();
  return withFields(base, {
    url,
    headers,
    ...(input.message !== undefined ? { message: input.message } : {}),
    ...(expected !== undefined ? { expectedRegexp: expected } : {}),
    ...tls,
  });
}

function websocketToJson(def: WebsocketDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.url = def.url;
  if (Object.keys(def.headers).length > 0) json.headers = def.headers;
  if (def.message !== undefined) json.message = def.message;
  if (def.expectedRegexp !== undefined) json['expected-regexp'] = def.expectedRegexp;
  json.insecure = def.insecure;
  if (def.serverName !== undefined) json['server-name'] = def.serverName;
  json.timeout = formatDuration(def.timeoutNs);
  tlsFilesToJson(def, json);
  json.kind = def.kind;
  return json;
}

async function prepareWebsocket(def: WebsocketDefinition): Promise<Prepared> {
  const tls = await loadTlsFiles(def);
  const regexp = def.expectedRegexp !== undefined ? compileRegex(def.expectedRegexp, 'search') : null;
  // Built once: ws copies what it needs from the options on every connection.
  const options: WebSocket.ClientOptions = {
    headers: mergeHeaders({ 'user-agent': 'Vigie' }, def.headers),
    perMessageDeflate: false,
    maxPayload: MAX_PAYLOAD_BYTES,
    followRedirects: false,
    ...tlsConnectOptions(def, tls, def.serverName),
  };
  const run = (signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      let opened = false;
      let settled = false;
      const socket = new WebSocket(def.url, options);
      const settle = (failure: string | null): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        // A clean close when open (the server sees a normal goodbye); otherwise the socket is dropped at once.
        if (socket.readyState === WebSocket.OPEN) socket.close(1000);
        else socket.terminate();
        if (failure === null) resolve();
        else reject(new CheckFailure(failure));
      };
      const onAbort = (): void =>
        settle(
          opened
            ? `no WebSocket message from ${def.url}: ${timeoutText(def.timeoutNs)}`
            : `WebSocket connection failed on ${def.url}: ${timeoutText(def.timeoutNs)}`,
        );
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      socket.on('unexpected-response', (_request, response) => {
        response.resume();
        settle(`WebSocket handshake failed on ${def.url}: status ${response.statusCode ?? 0}`);
      });
      socket.on('error', (error) => settle(`WebSocket connection failed on ${def.url}: ${errorText(error)}`));
      socket.on('open', () => {
        opened = true;
        if (def.message !== undefined) socket.send(def.message);
        if (regexp === null) settle(null);
      });
      socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
        if (regexp === null) return;
        const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer)).toString('utf8');
        settle(
          regexp.test(text)
            ? null
            : `WebSocket message does not match regex ${def.expectedRegexp}: ${text.slice(0, 1000)}`,
        );
      });
      socket.on('close', (code) => settle(`WebSocket closed by ${def.url} before its first message (code ${code})`));
    });
  return { run, close: () => Promise.resolve() };
}

export const websocketKind: CheckKind<WebsocketDefinition> = {
  kind: 'websocket',
  schema: websocketSchema,
  parse: parseWebsocket,
  toJson: websocketToJson,
  summary: (def) => describeCheck('WebSocket', def.description, def.url),
  prepare: prepareWebsocket,
};
