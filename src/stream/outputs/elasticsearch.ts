/**
 * The `elasticsearch` output (README, "Configuration file"): each batch is one `POST <scheme>://<host>/_bulk` of NDJSON,
 * two lines per event:
 *
 *   {"index":{"_index":"<index>"}}
 *   <the event without time and elasticsearch/index, plus "@timestamp": ISO 8601 of the event time>
 *
 * `<index>` is the event's `elasticsearch/index`, else `default-index`, followed by `-<the event date
 * formatted by default-index-pattern>` when a pattern is set (UTC; pattern letters yyyy yy MM dd HH). Fixed
 * from Mirabelle: the date and `@timestamp` come from the ns time (Mirabelle multiplied it as seconds), and
 * no pattern means no suffix (Mirabelle failed at startup). Authentication: `basic-auth`, `api-key`
 * (`ApiKey base64(id:secret)`) or `service-token` (`Bearer`), at most one; TLS with `scheme: https`, `cacert`
 * and a client `cert`/`key`. `hosts` are tried in turn: a failed attempt goes to the next one.
 *
 * Answers: `errors: false` delivers the batch; with `errors: true`, each item's status decides: 2xx sent,
 * 429 and 5xx retried (only those events), any other (a mapping error) dropped as `rejected`. A 4xx on the
 * whole request (bad credentials) drops the batch; 429, 5xx and network failures retry it.
 */
import { readFileSync } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { request } from 'undici';
import { undici } from '../../common/undici.ts';
import { ConfigError } from '../../common/config-error.ts';
import { isKeyword } from '../lang/edn.ts';
import type { Event } from '../event.ts';
import { BatchingOutput, type BatchSettings } from './batcher.ts';
import { retainInPlace } from './partial.ts';
import { DeliveryError } from '../../notify/delivery.ts';
import type { OutputObserver } from './types.ts';

const closed = { additionalProperties: false } as const;

/** The kind's own keys of `streams.outputs.<name>` (the batching keys are added by schema.ts). */
export const ELASTICSEARCH_FIELDS = {
  type: Type.Literal('elasticsearch'),
  hosts: Type.Array(
    Type.Object({ address: Type.String({ minLength: 1 }), port: Type.Integer({ minimum: 1, maximum: 65535 }) }, closed),
    { minItems: 1 },
  ),
  scheme: Type.Optional(Type.Union([Type.Literal('http'), Type.Literal('https')])),
  'default-index': Type.String({ minLength: 1 }),
  'default-index-pattern': Type.Optional(Type.String({ minLength: 1 })),
  key: Type.Optional(Type.String({ minLength: 1 })),
  cert: Type.Optional(Type.String({ minLength: 1 })),
  cacert: Type.Optional(Type.String({ minLength: 1 })),
  'connect-timeout': Type.Optional(Type.Integer({ minimum: 1 })),
  'socket-timeout': Type.Optional(Type.Integer({ minimum: 1 })),
  'thread-count': Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
  'basic-auth': Type.Optional(
    Type.Object({ username: Type.String({ minLength: 1 }), password: Type.String() }, closed),
  ),
  'service-token': Type.Optional(Type.String({ minLength: 1 })),
  'api-key': Type.Optional(
    Type.Object({ id: Type.String({ minLength: 1 }), secret: Type.String({ minLength: 1 }) }, closed),
  ),
};

export interface ElasticsearchEntry {
  type: 'elasticsearch';
  hosts: { address: string; port: number }[];
  scheme?: 'http' | 'https';
  'default-index': string;
  'default-index-pattern'?: string;
  key?: string;
  cert?: string;
  cacert?: string;
  'connect-timeout'?: number;
  'socket-timeout'?: number;
  'thread-count'?: number;
  'basic-auth'?: { username: string; password: string };
  'service-token'?: string;
  'api-key'?: { id: string; secret: string };
}

export interface ElasticsearchSettings {
  readonly type: 'elasticsearch';
  /** `<scheme>://<address>:<port>/_bulk` per host. */
  readonly bulkUrls: readonly string[];
  readonly defaultIndex: string;
  readonly indexDate: IndexDateFormat | null;
  /** The Authorization header, if any. */
  readonly authorization: string | null;
  readonly tls: { ca?: Buffer; cert?: Buffer; key?: Buffer };
  readonly connectTimeoutMs: number;
  readonly socketTimeoutMs: number;
  readonly connections: number;
  readonly batching: BatchSettings;
}

export type IndexDateFormat = (date: Date) => string;

const DATE_TOKENS: Record<string, (date: Date) => string> = {
  yyyy: (date) => String(date.getUTCFullYear()).padStart(4, '0'),
  yy: (date) => String(date.getUTCFullYear() % 100).padStart(2, '0'),
  MM: (date) => String(date.getUTCMonth() + 1).padStart(2, '0'),
  dd: (date) => String(date.getUTCDate()).padStart(2, '0'),
  HH: (date) => String(date.getUTCHours()).padStart(2, '0'),
};

/** Compiles the subset of Java's DateTimeFormatter patterns that index names use; throws on other letters. */
export function compileIndexDate(pattern: string): IndexDateFormat {
  const parts: ((date: Date) => string)[] = [];
  for (const piece of pattern.match(/([A-Za-z])\1*|[^A-Za-z]+/g) ?? []) {
    const token = DATE_TOKENS[piece];
    if (token !== undefined) parts.push(token);
    else if (/^[A-Za-z]/.test(piece))
      throw new Error(`unsupported pattern letters ${JSON.stringify(piece)} (use yyyy, yy, MM, dd, HH)`);
    else parts.push(() => piece);
  }
  return (date) => parts.map((part) => part(date)).join('');
}

function readPem(file: string | null, key: string, path: string | undefined): Buffer | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(file, key, `cannot read ${path}: ${(error as Error).message}`);
  }
}

export function resolveElasticsearchSettings(
  entry: ElasticsearchEntry,
  batching: BatchSettings,
  key: string,
  file: string | null,
): ElasticsearchSettings {
  const auths = (['basic-auth', 'api-key', 'service-token'] as const).filter((name) => entry[name] !== undefined);
  if (auths.length > 1)
    throw new ConfigError(file, key, `give one of basic-auth, api-key, service-token, not ${auths.join(' and ')}`);
  if ((entry.cert === undefined) !== (entry.key === undefined))
    throw new ConfigError(file, `${key}.${entry.cert === undefined ? 'cert' : 'key'}`, 'cert and key go together');
  let indexDate: IndexDateFormat | null = null;
  if (entry['default-index-pattern'] !== undefined) {
    try {
      indexDate = compileIndexDate(entry['default-index-pattern']);
    } catch (error) {
      throw new ConfigError(file, `${key}.default-index-pattern`, (error as Error).message);
    }
  }
  const basic = entry['basic-auth'];
  const apiKey = entry['api-key'];
  const authorization = basic
    ? `Basic ${Buffer.from(`${basic.username}:${basic.password}`).toString('base64')}`
    : apiKey
      ? `ApiKey ${Buffer.from(`${apiKey.id}:${apiKey.secret}`).toString('base64')}`
      : entry['service-token'] !== undefined
        ? `Bearer ${entry['service-token']}`
        : null;
  const scheme = entry.scheme ?? 'http';
  const tls: ElasticsearchSettings['tls'] = {};
  const ca = readPem(file, `${key}.cacert`, entry.cacert);
  const cert = readPem(file, `${key}.cert`, entry.cert);
  const clientKey = readPem(file, `${key}.key`, entry.key);
  if (ca) tls.ca = ca;
  if (cert) tls.cert = cert;
  if (clientKey) tls.key = clientKey;
  return {
    type: 'elasticsearch',
    bulkUrls: entry.hosts.map(
      (host) => `${scheme}://${host.address.includes(':') ? `[${host.address}]` : host.address}:${host.port}/_bulk`,
    ),
    defaultIndex: entry['default-index'],
    indexDate,
    authorization,
    tls,
    connectTimeoutMs: entry['connect-timeout'] ?? 10_000,
    socketTimeoutMs: entry['socket-timeout'] ?? 30_000,
    connections: entry['thread-count'] ?? 2,
    batching,
  };
}

/** The two NDJSON lines of one event. */
function bulkLines(settings: Pick<ElasticsearchSettings, 'defaultIndex' | 'indexDate'>, event: Event): string {
  const time = typeof event.time === 'number' ? Math.round(event.time / 1e6) : Date.now();
  const date = new Date(time);
  const explicit = event['elasticsearch/index'];
  const base =
    typeof explicit === 'string' && explicit !== ''
      ? explicit
      : isKeyword(explicit)
        ? explicit.name
        : settings.defaultIndex;
  const index = settings.indexDate === null ? base : `${base}-${settings.indexDate(date)}`;
  const document: Record<string, unknown> = {};
  for (const field of Object.keys(event)) {
    if (field !== 'time' && field !== 'elasticsearch/index') document[field] = event[field];
  }
  document['@timestamp'] = date.toISOString();
  return `${JSON.stringify({ index: { _index: index } })}\n${JSON.stringify(document)}\n`;
}

interface BulkItem {
  status?: number;
  error?: { type?: string; reason?: string };
}

interface BulkAnswer {
  errors?: boolean;
  items?: Record<string, BulkItem>[];
}

export function createElasticsearchOutput(
  name: string,
  settings: ElasticsearchSettings,
  observer: OutputObserver,
): BatchingOutput {
  const agent = new (undici().Agent)({
    connections: settings.connections,
    connect: { timeout: settings.connectTimeoutMs, ...settings.tls },
  });
  const headers: Record<string, string> = {
    'content-type': 'application/x-ndjson',
    accept: 'application/json',
    'user-agent': 'vigie',
  };
  if (settings.authorization !== null) headers.authorization = settings.authorization;
  let host = 0;

  const post = async (body: string, signal: AbortSignal): Promise<BulkAnswer> => {
    const url = settings.bulkUrls[host % settings.bulkUrls.length] as string;
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await undici().request(url, {
        method: 'POST',
        dispatcher: agent,
        headers,
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(settings.socketTimeoutMs)]),
      });
    } catch (error) {
      host++;
      throw new DeliveryError(`POST ${url} failed: ${(error as Error).message}`, true);
    }
    const text = await response.body.text().catch(() => '');
    const status = response.statusCode;
    if (status < 200 || status >= 300) {
      const retryable = status >= 500 || status === 429 || status === 408;
      if (retryable) host++;
      throw new DeliveryError(`POST ${url} answered ${status}: ${text.slice(0, 200)}`, retryable);
    }
    try {
      return JSON.parse(text) as BulkAnswer;
    } catch {
      throw new DeliveryError(
        `POST ${url} answered ${status} with a body that is not JSON: ${text.slice(0, 200)}`,
        true,
      );
    }
  };

  const deliver = async (batch: Event[], signal: AbortSignal): Promise<void> => {
    let body = '';
    for (let i = 0; i < batch.length; i++) body += bulkLines(settings, batch[i] as Event);
    const answer = await post(body, signal);
    if (answer.errors !== true) return;
    const items = answer.items ?? [];
    const retry: number[] = [];
    let sent = 0;
    let rejected = 0;
    let firstRejection: BulkItem | undefined;
    for (let i = 0; i < batch.length; i++) {
      const item = items[i] === undefined ? undefined : Object.values(items[i] as Record<string, BulkItem>)[0];
      const status = item?.status ?? 500;
      if (status >= 200 && status < 300) sent++;
      else if (status === 429 || status >= 500) retry.push(i);
      else {
        rejected++;
        firstRejection ??= item;
      }
    }
    if (rejected > 0) {
      const reason = firstRejection?.error
        ? `${firstRejection.error.type ?? 'error'}: ${firstRejection.error.reason ?? ''}`
        : 'refused';
      observer.failed(
        name,
        new DeliveryError(`_bulk refused ${rejected} of ${batch.length} documents (${reason})`, false),
      );
      observer.dropped(name, 'rejected', rejected);
    }
    observer.sent(name, sent);
    retainInPlace(batch, retry);
    if (retry.length > 0)
      throw new DeliveryError(`_bulk: ${retry.length} of the documents to retry (429 or 5xx per item)`, true);
  };
  return new BatchingOutput({
    name,
    settings: settings.batching,
    deliver,
    observer,
    onClose: () => agent.close(),
  });
}
