/**
 * The `discovery` section of the config file (docs/configuration.md, "discovery"): its schema, its defaults, and
 * the HTTP sources resolved once when the config is loaded: URL built with its query, interval parsed,
 * certificate files read. Errors name the key path.
 */
import { type Static, Type } from '@sinclair/typebox';
import { durationMs } from '../../common/config-values.ts';
import { Duration } from '../../common/duration.ts';
import { type ClientTls, clientTls, hostForUrl, remoteEndpoint, UniqueNames } from '../exporters/settings.ts';

export const DiscoverySchema = Type.Object(
  {
    http: Type.Optional(
      Type.Array(
        Type.Object(
          {
            ...remoteEndpoint,
            query: Type.Optional(Type.Record(Type.String(), Type.String())),
            interval: Duration,
            timeout: Type.Optional(Duration),
            'max-body-size': Type.Optional(Type.Integer({ minimum: 1024 })),
          },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);

export interface HttpDiscoverySettings {
  name: string;
  /** `<protocol>://<host>:<port><path>?<query>` */
  url: string;
  headers: Record<string, string>;
  tls: ClientTls | null;
  intervalMs: number;
  timeoutMs: number;
  /** Largest payload read, in bytes; a bigger one is a failed poll. */
  maxBodyBytes: number;
}

export interface DiscoverySettings {
  http: HttpDiscoverySettings[];
}

/** Upstream's timeout of a discovery request: 5 s. */
const DEFAULT_DISCOVERY_TIMEOUT = '5s';
const DEFAULT_DISCOVERY_MAX_BODY = 16 * 1024 * 1024;

export function resolveDiscovery(
  raw: Static<typeof DiscoverySchema> | undefined,
  file: string | null,
): DiscoverySettings {
  const names = new UniqueNames(file, 'HTTP discovery source');
  return {
    http: (raw?.http ?? []).map((entry, i) => {
      const at = `discovery.http[${i}]`;
      names.add(entry.name, `${at}.name`);
      const query = new URLSearchParams(
        Object.entries(entry.query ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      ).toString();
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
