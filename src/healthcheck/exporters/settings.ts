/**
 * The exporters' config values (docs/configuration.md, "exporters"), typed
 * and resolved once by the config loader: URLs built, durations parsed, certificate files read.
 */

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

export const NO_EXPORTERS: ExporterSettings = { http: [], riemann: [], stream: [] };
