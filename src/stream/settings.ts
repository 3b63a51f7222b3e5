/**
 * The `streams` section of the config file (docs/configuration.md, "streams"): its schema, its defaults, and the
 * stream part's values resolved once when the config is loaded: directories made absolute, durations parsed,
 * outputs resolved by their kinds, the Riemann TCP input's certificate files read. Errors name the key path.
 */
import { resolve } from 'node:path';
import { type Static, Type } from '@sinclair/typebox';
import { ConfigError } from '../common/config-error.ts';
import { durationMs, readConfigFile } from '../common/config-values.ts';
import { Duration } from '../common/duration.ts';
import { DEFAULT_HOST, Port, type ServerTls } from '../server/settings.ts';
import { DEFAULT_ASYNC_QUEUE_SIZE } from './engine/async-queues.ts';
import { DEFAULT_KEPT_DAMAGED } from './durability/journal.ts';
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from './limits.ts';
import {
  DEFAULT_MAX_EDN_DEPTH,
  DEFAULT_MAX_EVENT_DEPTH,
  MAX_EDN_DEPTH_LIMIT,
  MAX_EVENT_DEPTH_LIMIT,
  type NestingLimits,
} from './lang/nesting.ts';
import { type OutputSettings, resolveOutputs } from './outputs/schema.ts';
import {
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_CONNECTIONS as DEFAULT_WEBSOCKET_MAX_CONNECTIONS,
} from './pubsub/channels.ts';

const closed = { additionalProperties: false } as const;

/** Mirabelle's `:tcp`: the Riemann protocol over TCP; key, cert and cacert together mean mutual TLS. */
const RiemannTcpSchema = Type.Object(
  {
    host: Type.Optional(Type.String({ minLength: 1 })),
    port: Type.Optional(Port),
    key: Type.Optional(Type.String({ minLength: 1 })),
    cert: Type.Optional(Type.String({ minLength: 1 })),
    cacert: Type.Optional(Type.String({ minLength: 1 })),
    'max-frame-size': Type.Optional(Type.Integer({ minimum: 1024 })),
    'max-connections': Type.Optional(Type.Integer({ minimum: 1 })),
  },
  closed,
);

export const StreamsSettingsSchema = Type.Object(
  {
    tcp: Type.Optional(RiemannTcpSchema),
    directories: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    'snapshot-interval': Type.Optional(Duration),
    // YAML 1.2 reads `on` and `off` as strings; `true` and `false` mean the same.
    journal: Type.Optional(Type.Union([Type.Literal('on'), Type.Literal('off'), Type.Boolean()])),
    'max-pending-events': Type.Optional(Type.Integer({ minimum: 1 })),
    'journal-damaged-segments': Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
    // Each entry is validated by its output kind's own schema (src/stream/outputs/schema.ts), so that the message
    // is about that kind's fields.
    outputs: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z0-9._-]+$' }), Type.Unknown())),
    'async-queues': Type.Optional(
      Type.Record(
        Type.String({ pattern: '^[A-Za-z0-9._-]+$' }),
        Type.Object({ 'queue-size': Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })) }, closed),
      ),
    ),
    websocket: Type.Optional(
      Type.Object(
        {
          'max-buffered-bytes': Type.Optional(Type.Integer({ minimum: 1024 })),
          'max-connections': Type.Optional(Type.Integer({ minimum: 1 })),
        },
        closed,
      ),
    ),
    'search-limit': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-search-limit': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-forks': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-index-entries': Type.Optional(Type.Integer({ minimum: 1 })),
    'fork-idle-timeout': Type.Optional(Duration),
    'max-edn-depth': Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EDN_DEPTH_LIMIT })),
    'max-event-depth': Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EVENT_DEPTH_LIMIT })),
  },
  closed,
);

export interface StreamSettings {
  directories: string[];
  snapshotIntervalMs: number;
  /** Acknowledged events are written to the journal before the acknowledgement (docs/durability.md). */
  journal: boolean;
  /** Damaged journal segments kept as found (`<segment>.damaged`), the newest first. */
  journalDamagedSegments: number;
  maxPendingEvents: number;
  /** Resolved once here (defaults, durations); the outputs never read the raw config. */
  outputs: Readonly<Record<string, OutputSettings>>;
  /** `async-queue!` queues by name. */
  asyncQueues: Record<string, { queueSize: number }>;
  /** Per websocket subscriber: bytes not yet written past which its messages are dropped. */
  websocketMaxBufferedBytes: number;
  /** Open websockets beyond this are closed at once (1013). */
  websocketMaxConnections: number;
  /** The Riemann TCP input, when `streams.tcp` is set. */
  tcp?: RiemannTcpSettings;
  /** Index search results: the default `limit` and the largest a request may ask for. */
  searchLimit: number;
  maxSearchLimit: number;
  limits: StreamLimits;
  /** `max-edn-depth` and `max-event-depth` (src/stream/lang/nesting.ts). */
  nesting: NestingLimits;
}

interface RiemannTcpSettings {
  host: string;
  port: number;
  /** Mutual TLS: set only when key, cert and cacert all are. */
  tls?: Required<ServerTls>;
  maxFrameBytes: number;
  maxConnections: number;
}

const DEFAULT_RIEMANN_PORT = 5555;
const DEFAULT_SEARCH_LIMIT = 10_000;
const DEFAULT_MAX_SEARCH_LIMIT = 100_000;

/** `dataDir` holds the default stream directory; a Riemann TCP frame is at most the HTTP body limit unless set. */
export function resolveStreams(
  file: string | null,
  raw: Static<typeof StreamsSettingsSchema> | undefined,
  dataDir: string,
  bodyLimit: number,
): StreamSettings {
  const streams = raw ?? {};
  return {
    directories: (streams.directories ?? [resolve(dataDir, 'streams')]).map((dir) => resolve(dir)),
    snapshotIntervalMs: durationMs(file, 'streams.snapshot-interval', streams['snapshot-interval'] ?? '10s'),
    journal: streams.journal === undefined || streams.journal === 'on' || streams.journal === true,
    journalDamagedSegments: streams['journal-damaged-segments'] ?? DEFAULT_KEPT_DAMAGED,
    maxPendingEvents: streams['max-pending-events'] ?? 100_000,
    outputs: resolveOutputs(streams.outputs ?? {}, file),
    asyncQueues: Object.fromEntries(
      Object.entries(streams['async-queues'] ?? {}).map(([name, queue]) => [
        name,
        { queueSize: queue['queue-size'] ?? DEFAULT_ASYNC_QUEUE_SIZE },
      ]),
    ),
    websocketMaxBufferedBytes: streams.websocket?.['max-buffered-bytes'] ?? DEFAULT_MAX_BUFFERED_BYTES,
    websocketMaxConnections: streams.websocket?.['max-connections'] ?? DEFAULT_WEBSOCKET_MAX_CONNECTIONS,
    ...(streams.tcp ? { tcp: resolveRiemannTcp(file, streams.tcp, bodyLimit) } : {}),
    searchLimit: Math.min(
      streams['search-limit'] ?? DEFAULT_SEARCH_LIMIT,
      streams['max-search-limit'] ?? DEFAULT_MAX_SEARCH_LIMIT,
    ),
    maxSearchLimit: streams['max-search-limit'] ?? DEFAULT_MAX_SEARCH_LIMIT,
    nesting: {
      ednDepth: streams['max-edn-depth'] ?? DEFAULT_MAX_EDN_DEPTH,
      eventDepth: streams['max-event-depth'] ?? DEFAULT_MAX_EVENT_DEPTH,
    },
    limits: {
      maxForks: streams['max-forks'] ?? DEFAULT_STREAM_LIMITS.maxForks,
      maxIndexEntries: streams['max-index-entries'] ?? DEFAULT_STREAM_LIMITS.maxIndexEntries,
      forkIdleNs:
        streams['fork-idle-timeout'] === undefined
          ? DEFAULT_STREAM_LIMITS.forkIdleNs
          : durationMs(file, 'streams.fork-idle-timeout', streams['fork-idle-timeout']) * 1e6,
    },
  };
}

/** `streams.tcp`: the certificate options go all three together (TLS with mandatory client certificates). */
function resolveRiemannTcp(
  file: string | null,
  tcp: Static<typeof RiemannTcpSchema>,
  bodyLimit: number,
): RiemannTcpSettings {
  const certs = (['key', 'cert', 'cacert'] as const).filter((key) => tcp[key] !== undefined);
  if (certs.length > 0 && certs.length < 3) {
    const missing = (['key', 'cert', 'cacert'] as const).filter((key) => tcp[key] === undefined);
    throw new ConfigError(
      file,
      `streams.tcp.${missing[0]}`,
      'TLS on the Riemann TCP input needs key, cert and cacert together (clients must present a certificate)',
    );
  }
  return {
    host: tcp.host ?? DEFAULT_HOST,
    port: tcp.port ?? DEFAULT_RIEMANN_PORT,
    ...(tcp.key !== undefined && tcp.cert !== undefined && tcp.cacert !== undefined
      ? {
          tls: {
            key: readConfigFile(file, 'streams.tcp.key', tcp.key),
            cert: readConfigFile(file, 'streams.tcp.cert', tcp.cert),
            ca: readConfigFile(file, 'streams.tcp.cacert', tcp.cacert),
          },
        }
      : {}),
    maxFrameBytes: tcp['max-frame-size'] ?? bodyLimit,
    maxConnections: tcp['max-connections'] ?? 1024,
  };
}
