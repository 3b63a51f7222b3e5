/**
 * Resolves the `exporters` and `discovery` sections (docs/configuration.md) into the healthcheck part's typed
 * settings: defaults applied, URLs built, durations parsed, certificate files read. Errors name the key path.
 */
import type { Static } from '@sinclair/typebox';
import { ConfigError } from '../common/config-error.ts';
import { durationMs, readConfigFile } from '../common/config-values.ts';
import type { DiscoverySettings } from '../healthcheck/discovery/settings.ts';
import type { ClientTls, ExporterSettings } from '../healthcheck/exporters/settings.ts';
import type { ConfigFileSchema } from './schema.ts';

type ConfigFile = Static<typeof ConfigFileSchema>;
type TlsFields = { key?: string; cert?: string; cacert?: string; insecure?: boolean };

const DEFAULT_QUEUE_SIZE = 10_000;
const DEFAULT_BATCH_SIZE = 100;
const DEFAULT_HTTP_RETRIES = 3;
/** Upstream's timeouts: 3 s for an HTTP push, 5 s for a Riemann write and a discovery request. */
const DEFAULT_HTTP_EXPORTER_TIMEOUT = '3s';
const DEFAULT_RIEMANN_TIMEOUT = '5s';
const DEFAULT_DISCOVERY_TIMEOUT = '5s';
const DEFAULT_DISCOVERY_MAX_BODY = 16 * 1024 * 1024;
export const DEFAULT_RESULT_SERVICE = 'cabourotte-healthcheck';

export function resolveExporters(raw: ConfigFile['exporters'], file: string | null): ExporterSettings {
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

export function resolveDiscovery(raw: ConfigFile['discovery'], file: string | null): DiscoverySettings {
  const names = new UniqueNames(file, 'HTTP discovery source');
  return {
    http: (raw?.http ?? []).map((entry, i) => {
      const at = `discovery.http[${i}]`;
      names.add(entry.name, `${at}.name`);
      const query = new URLSearchParams(Object.entries(entry.query ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))).toString();
      return {
        name: entry.name,
        url: `${entry.protocol ?? 'http'}://${hostForUrl(entry.host)}:${entry.port}${entry.path ?? ''}${query === '' ? '' : `?${query}`}`,
        headers: entry.headers ?? {},
        tls: clientTls(file, at, entry, entry.protocol === 'https'),
        intervalMs: durationMs(file, `${at}.interval`, entry.interval),
        timeoutMs: durationMs(file, `${at}.timeout`, entry.timeout ?? DEFAULT_DISCOVERY_TIMEOUT),
        maxBodyBytes: entry['max-body-size'] ?? DEFAULT_DISCOVERY_MAX_BODY,
      };
    }),
  };
}

/** Upstream lets a duplicate exporter name silently replace the first; here it is an error naming both. */
class UniqueNames {
  private readonly seen = new Map<string, string>();

  constructor(
    private readonly file: string | null,
    private readonly what: string,
  ) {}

  add(name: string, key: string): void {
    const first = this.seen.get(name);
    if (first !== undefined) throw new ConfigError(this.file, key, `duplicate ${this.what} name ${JSON.stringify(name)} (also ${first})`);
    this.seen.set(name, key);
  }
}

/** TLS of a client: null when the connection is plain; key and cert go together (upstream: `Invalid certificates`). */
function clientTls(file: string | null, at: string, entry: TlsFields, secure: boolean): ClientTls | null {
  if ((entry.key === undefined) !== (entry.cert === undefined)) {
    throw new ConfigError(file, `${at}.${entry.key === undefined ? 'key' : 'cert'}`, 'the key and cert options must be set together');
  }
  if (!secure) return null;
  return {
    ...(entry.key !== undefined ? { key: readConfigFile(file, `${at}.key`, entry.key) } : {}),
    ...(entry.cert !== undefined ? { cert: readConfigFile(file, `${at}.cert`, entry.cert) } : {}),
    ...(entry.cacert !== undefined ? { ca: readConfigFile(file, `${at}.cacert`, entry.cacert) } : {}),
    insecure: entry.insecure ?? false,
  };
}

function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

