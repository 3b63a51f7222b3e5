/**
 * The `exporters` section of the config file (docs/configuration.md, "exporters"): its schema, its defaults, and
 * its values resolved once when the config is loaded: URLs built, durations parsed, certificate files read.
 * Errors name the key path. The remote endpoint fields and their TLS are shared with the discovery sources.
 */
import { type Static, type TProperties, Type } from '@sinclair/typebox';
import { ConfigError } from '../../common/config-error.ts';
import { durationMs, readConfigFile } from '../../common/config-values.ts';
import { Duration } from '../../common/duration.ts';

const closed = { additionalProperties: false } as const;

const TlsClientFields = {
  key: Type.Optional(Type.String()),
  cert: Type.Optional(Type.String()),
  cacert: Type.Optional(Type.String()),
  insecure: Type.Optional(Type.Boolean()),
};

/** Where a Cabourotte exporter or discovery source connects: the fields they share. */
export const remoteEndpoint = {
  name: Type.String({ minLength: 1 }),
  host: Type.String({ minLength: 1 }),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  path: Type.Optional(Type.String()),
  protocol: Type.Optional(Type.Union([Type.Literal('http'), Type.Literal('https')])),
  headers: Type.Optional(Type.Record(Type.String(), Type.String())),
  ...TlsClientFields,
};

/** Vigie's own bounds of an exporter's queue (docs/configuration.md). */
const exporterQueue = {
  'queue-size': Type.Optional(Type.Integer({ minimum: 1 })),
  'batch-size': Type.Optional(Type.Integer({ minimum: 1 })),
};

/** The exporters of one kind: an optional list, each entry closed (an unknown key is refused by name). */
const exportersOf = <P extends TProperties>(fields: P) => Type.Optional(Type.Array(Type.Object(fields, closed)));

/** Cabourotte's exporters (HTTP, Riemann) with their keys, plus Vigie's results-into-a-stream exporter. */
export const ExportersSchema = Type.Object(
  {
    http: exportersOf({
      ...remoteEndpoint,
      ...exporterQueue,
      retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
      timeout: Type.Optional(Duration),
    }),
    riemann: exportersOf({
      name: Type.String({ minLength: 1 }),
      host: Type.String({ minLength: 1 }),
      port: Type.Integer({ minimum: 1, maximum: 65535 }),
      ttl: Type.Optional(Duration),
      ...TlsClientFields,
      ...exporterQueue,
      timeout: Type.Optional(Duration),
    }),
    stream: exportersOf({
      name: Type.String({ minLength: 1 }),
      stream: Type.String({ minLength: 1 }),
      service: Type.Optional(Type.String({ minLength: 1 })),
      ttl: Type.Optional(Duration),
      ...exporterQueue,
    }),
  },
  closed,
);

/** TLS material of a client connection; `insecure` skips the verification of the server's certificate. */
export interface ClientTls {
  key?: Buffer;
  cert?: Buffer;
  ca?: Buffer;
  insecure: boolean;
}

/** The bounded queue every exporter has between the check results and its destination. */
export interface QueueSettings {
  /** Results waiting at most; past it a result is dropped (counted with reason `queue_full`). */
  queueSize: number;
  /** Results sent together at most (one JSON array, one Riemann `Msg`, one ingest batch). */
  batchSize: number;
}

export interface HttpExporterSettings extends QueueSettings {
  name: string;
  /** `<protocol>://<host>:<port><path>` */
  url: string;
  headers: Record<string, string>;
  tls: ClientTls | null;
  /** Further attempts of a failed batch, with exponential backoff, before it is dropped. */
  retries: number;
  timeoutMs: number;
}

export interface RiemannExporterSettings extends QueueSettings {
  name: string;
  host: string;
  port: number;
  ttlSeconds: number;
  /** Set as soon as one of key, cert or cacert is configured (as upstream); plain TCP otherwise. */
  tls: ClientTls | null;
  timeoutMs: number;
}

export interface StreamExporterSettings extends QueueSettings {
  name: string;
  /** A stream name, or `default` for the default streams. */
  stream: string;
  /** The events' `:service`. */
  service: string;
  /** The events' `:ttl`. */
  ttlSeconds: number;
}

export interface ExporterSettings {
  http: HttpExporterSettings[];
  riemann: RiemannExporterSettings[];
  stream: StreamExporterSettings[];
}

const DEFAULT_QUEUE_SIZE = 10_000;
const DEFAULT_BATCH_SIZE = 100;
const DEFAULT_HTTP_RETRIES = 3;
/** Upstream's timeouts: 3 s for an HTTP push, 5 s for a Riemann write. */
const DEFAULT_HTTP_EXPORTER_TIMEOUT = '3s';
const DEFAULT_RIEMANN_TIMEOUT = '5s';
const DEFAULT_RESULT_SERVICE = 'cabourotte-healthcheck';

export function resolveExporters(
  raw: Static<typeof ExportersSchema> | undefined,
  file: string | null,
): ExporterSettings {
  const names = new UniqueNames(file, 'exporter');
  return {
    http: (raw?.http ?? []).map((entry, i) => {
      const at = `exporters.http[${i}]`;
      names.add(entry.name, `${at}.name`);
      return {
        name: entry.name,
        url: `${entry.protocol ?? 'http'}://${hostForUrl(entry.host)}:${entry.port}${entry.path ?? ''}`,
        headers: entry.headers ?? {},
        tls: clientTls(file, at, entry, entry.protocol === 'https'),
        queueSize: entry['queue-size'] ?? DEFAULT_QUEUE_SIZE,
        batchSize: entry['batch-size'] ?? DEFAULT_BATCH_SIZE,
        retries: entry.retries ?? DEFAULT_HTTP_RETRIES,
        timeoutMs: durationMs(file, `${at}.timeout`, entry.timeout ?? DEFAULT_HTTP_EXPORTER_TIMEOUT),
      };
    }),
    riemann: (raw?.riemann ?? []).map((entry, i) => {
      const at = `exporters.riemann[${i}]`;
      names.add(entry.name, `${at}.name`);
      const anyCertificate = entry.key !== undefined || entry.cert !== undefined || entry.cacert !== undefined;
      return {
        name: entry.name,
        host: entry.host,
        port: entry.port,
        ttlSeconds: durationMs(file, `${at}.ttl`, entry.ttl ?? '60s') / 1000,
        tls: clientTls(file, at, entry, anyCertificate),
        queueSize: entry['queue-size'] ?? DEFAULT_QUEUE_SIZE,
        batchSize: entry['batch-size'] ?? DEFAULT_BATCH_SIZE,
        timeoutMs: durationMs(file, `${at}.timeout`, entry.timeout ?? DEFAULT_RIEMANN_TIMEOUT),
      };
    }),
    stream: (raw?.stream ?? []).map((entry, i) => {
      const at = `exporters.stream[${i}]`;
      names.add(entry.name, `${at}.name`);
      return {
        name: entry.name,
        stream: entry.stream,
        service: entry.service ?? DEFAULT_RESULT_SERVICE,
        ttlSeconds: durationMs(file, `${at}.ttl`, entry.ttl ?? '60s') / 1000,
        queueSize: entry['queue-size'] ?? DEFAULT_QUEUE_SIZE,
        batchSize: entry['batch-size'] ?? DEFAULT_BATCH_SIZE,
      };
    }),
  };
}

/** Upstream lets a duplicate exporter name silently replace the first; here it is an error naming both. */
export class UniqueNames {
  private readonly seen = new Map<string, string>();

  constructor(
    private readonly file: string | null,
    private readonly what: string,
  ) {}

  add(name: string, key: string): void {
    const first = this.seen.get(name);
    if (first !== undefined)
      throw new ConfigError(this.file, key, `duplicate ${this.what} name ${JSON.stringify(name)} (also ${first})`);
    this.seen.set(name, key);
  }
}

type TlsFields = { key?: string; cert?: string; cacert?: string; insecure?: boolean };

/** TLS of a client: null when the connection is plain; key and cert go together (upstream: `Invalid certificates`). */
export function clientTls(file: string | null, at: string, entry: TlsFields, secure: boolean): ClientTls | null {
  if ((entry.key === undefined) !== (entry.cert === undefined)) {
    throw new ConfigError(
      file,
      `${at}.${entry.key === undefined ? 'key' : 'cert'}`,
      'the key and cert options must be set together',
    );
  }
  if (!secure) return null;
  return {
    ...(entry.key !== undefined ? { key: readConfigFile(file, `${at}.key`, entry.key) } : {}),
    ...(entry.cert !== undefined ? { cert: readConfigFile(file, `${at}.cert`, entry.cert) } : {}),
    ...(entry.cacert !== undefined ? { ca: readConfigFile(file, `${at}.cacert`, entry.cacert) } : {}),
    insecure: entry.insecure ?? false,
  };
}

export function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
