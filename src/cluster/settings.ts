/**
 * The `cluster:` section, resolved (docs/cluster.md, docs/configuration.md "cluster"). Absent: the node runs alone
 * and nothing of NATS is loaded.
 */
import { hostname } from 'node:os';
import { ConfigError } from '../common/config-error.ts';
import { durationMs, readConfigFile } from '../config/values.ts';

export interface ClusterSettings {
  /** Unique per node: owners are computed over these names, and results carry it. */
  node: string;
  servers: string[];
  tls?: { cert?: Buffer; key?: Buffer; ca?: Buffer };
  /** The credentials file's content (NATS decentralised auth). */
  creds?: string;
  /** A member not heard from for this long is gone (1 s to 5 min). */
  memberTtlMs: number;
  partitions: number;
  replicas: 1 | 3;
  /** Results waiting for NATS at most (while it is unreachable); past it the oldest are dropped, counted. */
  maxBufferedResults: number;
  /** Bytes the streams' event log may hold (what no checkpoint covers yet); past it ingest answers 503. */
  eventLogMaxBytes: number;
}

export interface ClusterInput {
  node?: string;
  nats: { servers: string[]; tls?: { cert?: string; key?: string; cacert?: string }; creds?: string };
  'member-ttl'?: string;
  partitions?: number;
  replicas?: 1 | 3;
  'max-buffered-results'?: number;
  'event-log-max-bytes'?: number;
}

export const DEFAULT_MEMBER_TTL = '10s';
export const DEFAULT_MAX_BUFFERED_RESULTS = 100_000;
export const DEFAULT_EVENT_LOG_MAX_BYTES = 4 * 1024 ** 3;

/** Node names go into NATS keys and metric labels: letters, digits, `.`, `_` and `-`. */
const NODE_NAME = /^[A-Za-z0-9._-]+$/;

export function resolveCluster(file: string | null, raw: ClusterInput): ClusterSettings {
  const node = raw.node ?? hostname();
  if (!NODE_NAME.test(node)) throw new ConfigError(file, 'cluster.node', `must be letters, digits, ".", "_" or "-", got ${JSON.stringify(node)}`);
  const memberTtlMs = durationMs(file, 'cluster.member-ttl', raw['member-ttl'] ?? DEFAULT_MEMBER_TTL);
  if (memberTtlMs < 1000 || memberTtlMs > 300_000) throw new ConfigError(file, 'cluster.member-ttl', `must be between 1s and 5m, got ${JSON.stringify(raw['member-ttl'])}`);
  raw.nats.servers.forEach((server, i) => {
    if (!/^(nats|tls|ws|wss):\/\/[^\s]+$/.test(server) && !/^[^\s/]+:\d+$/.test(server)) {
      throw new ConfigError(file, `cluster.nats.servers[${i}]`, `must be a NATS URL such as nats://127.0.0.1:4222, got ${JSON.stringify(server)}`);
    }
  });
  const tls = raw.nats.tls;
  if (tls !== undefined && (tls.cert === undefined) !== (tls.key === undefined)) {
    throw new ConfigError(file, tls.cert === undefined ? 'cluster.nats.tls.cert' : 'cluster.nats.tls.key', 'cert and key go together (a client certificate needs both)');
  }
  return {
    node,
    servers: raw.nats.servers,
    ...(tls !== undefined
      ? {
          tls: {
            ...(tls.cert !== undefined ? { cert: readConfigFile(file, 'cluster.nats.tls.cert', tls.cert) } : {}),
            ...(tls.key !== undefined ? { key: readConfigFile(file, 'cluster.nats.tls.key', tls.key) } : {}),
            ...(tls.cacert !== undefined ? { ca: readConfigFile(file, 'cluster.nats.tls.cacert', tls.cacert) } : {}),
          },
        }
      : {}),
    ...(raw.nats.creds !== undefined ? { creds: readConfigFile(file, 'cluster.nats.creds', raw.nats.creds).toString('utf8') } : {}),
    memberTtlMs,
    partitions: raw.partitions ?? 64,
    replicas: raw.replicas ?? 1,
    maxBufferedResults: raw['max-buffered-results'] ?? DEFAULT_MAX_BUFFERED_RESULTS,
    eventLogMaxBytes: raw['event-log-max-bytes'] ?? DEFAULT_EVENT_LOG_MAX_BYTES,
  };
}
