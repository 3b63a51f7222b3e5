/**
 * The `cluster:` section of the config file: its schema, its defaults, and its values resolved (docs/cluster.md,
 * docs/configuration.md "cluster"). Absent: the node runs alone and nothing of NATS is loaded.
 */
import { hostname } from 'node:os';
import { type Static, Type } from '@sinclair/typebox';
import { ConfigError } from '../common/config-error.ts';
import { durationMs, readConfigFile } from '../common/config-values.ts';
import { Duration } from '../common/duration.ts';
import { checkNodeLabels } from '../common/labels.ts';

/** `cluster.partitions` at most: also the bound on a partition named in the event log
 *  (src/cluster/streams/log-reader.ts). */
export const MAX_PARTITIONS = 1024;
const closed = { additionalProperties: false } as const;

/** `cluster:` (docs/cluster.md): present, the node joins a cluster over NATS JetStream; absent, nothing of NATS
 *  loads. */
export const ClusterSchema = Type.Object(
  {
    node: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    nats: Type.Object(
      {
        servers: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
        tls: Type.Optional(
          Type.Object(
            {
              cert: Type.Optional(Type.String({ minLength: 1 })),
              key: Type.Optional(Type.String({ minLength: 1 })),
              cacert: Type.Optional(Type.String({ minLength: 1 })),
            },
            closed,
          ),
        ),
        creds: Type.Optional(Type.String({ minLength: 1 })),
        user: Type.Optional(Type.String({ minLength: 1 })),
        password: Type.Optional(Type.String({ minLength: 1 })),
        token: Type.Optional(Type.String({ minLength: 1 })),
        nkey: Type.Optional(Type.String({ minLength: 1 })),
        insecure: Type.Optional(Type.Boolean()),
      },
      closed,
    ),
    'member-ttl': Type.Optional(Duration),
    partitions: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PARTITIONS })),
    replicas: Type.Optional(Type.Union([Type.Literal(1), Type.Literal(3)])),
    'max-buffered-results': Type.Optional(Type.Integer({ minimum: 1 })),
    'event-log-max-bytes': Type.Optional(Type.Integer({ minimum: 1024 * 1024 })),
    'max-clock-skew': Type.Optional(Duration),
    /** Renamed `max-clock-skew` (its default went from 5m to 5s): named in a clear error rather than as unknown. */
    'max-result-ahead': Type.Optional(Duration),
    'command-checks': Type.Optional(Type.Union([Type.Literal('deny'), Type.Literal('allow')])),
    'max-members': Type.Optional(Type.Integer({ minimum: 2, maximum: 4096 })),
    'max-channels': Type.Optional(Type.Integer({ minimum: 1, maximum: 1_048_576 })),
    'max-waiting-reads': Type.Optional(Type.Integer({ minimum: 1, maximum: 65_536 })),
    'max-state-keys': Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
    'max-state-value-bytes': Type.Optional(Type.Integer({ minimum: 1024, maximum: 1024 * 1024 })),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  closed,
);

export interface ClusterSettings {
  /** Unique per node: owners are computed over these names, and results carry it. */
  node: string;
  servers: string[];
  tls?: { cert?: Buffer; key?: Buffer; ca?: Buffer };
  /** How this node proves who it is to NATS, besides a client certificate (docs/cluster.md, "Securing NATS"). */
  auth?: NatsAuth;
  /** Runs without credentials, or on a server that asks for none: anyone on the bus can create checks. */
  insecure: boolean;
  /** A member not heard from for this long is gone (1 s to 5 min). */
  memberTtlMs: number;
  partitions: number;
  replicas: 1 | 3;
  /** Results waiting for NATS at most (while it is unreachable); past it the oldest are dropped, counted. */
  maxBufferedResults: number;
  /** Bytes the streams' event log may hold (what no checkpoint covers yet); past it ingest answers 503. */
  eventLogMaxBytes: number;
  /** A result read from another node stamped further ahead of this node's clock is refused (docs/cluster.md). */
  maxClockSkewMs: number;
  /** Command checks read from the cluster's check store run only with `allow` (docs/cluster.md, "Securing NATS"). */
  commandChecks: 'deny' | 'allow';
  /** Members kept at most, this node included: past it a new one is refused, counted (docs/cluster.md). */
  maxMembers: number;
  /** Websocket channels kept over every other node's interest: past it a node's announcement is refused, counted. */
  maxChannels: number;
  /** Index reads from other nodes waiting for their turn here: past it one is answered busy, counted. */
  maxWaitingReads: number;
  /** Keys of the runtime state bucket (vigie_state) kept at most: past it a new key is refused, counted. */
  maxStateKeys: number;
  /** Bytes of one runtime state value at most, read or written: past it a value is refused, counted. */
  maxStateValueBytes: number;
  /** Announced to the other members; a check's `node-labels` pick the members that may run it (docs/checks.md
   *  "Locations"). */
  labels: Record<string, string>;
}

type ClusterInput = Static<typeof ClusterSchema>;

/** One NATS credential: a user and password, a token, a credentials file (JWT and seed) or an NKey seed file. */
export type NatsAuth =
  | { kind: 'user'; user: string; password: string }
  | { kind: 'token'; token: string }
  | { kind: 'creds'; creds: Buffer }
  | { kind: 'nkey'; seed: Buffer };

const DEFAULT_MEMBER_TTL = '10s';
const DEFAULT_MAX_BUFFERED_RESULTS = 100_000;
/** Tokens, pauses, incidents, windows...: operators' objects, a few thousand in a large installation. */
const DEFAULT_MAX_STATE_KEYS = 100_000;
const DEFAULT_MAX_STATE_VALUE_BYTES = 256 * 1024;
/** Clocks kept by NTP agree within milliseconds: a few seconds is generous, and bounds how long a result stamped
 *  ahead can hold a check's state over the real runs. */
const DEFAULT_MAX_CLOCK_SKEW = '5s';
const DEFAULT_EVENT_LOG_MAX_BYTES = 4 * 1024 ** 3;
const DEFAULT_MAX_MEMBERS = 128;
const DEFAULT_MAX_CHANNELS = 16_384;
/** src/cluster/streams/stream-queries.ts (QueryOptions) says why reads wait, and what past it means. */
export const DEFAULT_MAX_WAITING_READS = 64;

/** Node names go into NATS keys and metric labels: letters, digits, `.`, `_` and `-`. */
const NODE_NAME = /^[A-Za-z0-9._-]+$/;
/** A node's name as another node reads it from NATS (members, channel interests): what cluster.node allows. */
export const WireNodeName = Type.String({ pattern: NODE_NAME.source, maxLength: 255 });

export function resolveCluster(file: string | null, raw: ClusterInput): ClusterSettings {
  const node = raw.node ?? hostname();
  if (!NODE_NAME.test(node))
    throw new ConfigError(
      file,
      'cluster.node',
      `must be letters, digits, ".", "_" or "-", got ${JSON.stringify(node)}`,
    );
  const memberTtlMs = durationMs(file, 'cluster.member-ttl', raw['member-ttl'] ?? DEFAULT_MEMBER_TTL);
  if (raw['max-result-ahead'] !== undefined)
    throw new ConfigError(
      file,
      'cluster.max-result-ahead',
      "is now cluster.max-clock-skew (default 5s): how far ahead of this node's clock a result read from another node may be stamped",
    );
  const maxClockSkewMs = durationMs(file, 'cluster.max-clock-skew', raw['max-clock-skew'] ?? DEFAULT_MAX_CLOCK_SKEW);
  if (maxClockSkewMs < 1000 || maxClockSkewMs > 86_400_000) {
    throw new ConfigError(
      file,
      'cluster.max-clock-skew',
      `must be between 1s and 24h, got ${JSON.stringify(raw['max-clock-skew'])}`,
    );
  }
  if (memberTtlMs < 1000 || memberTtlMs > 300_000)
    throw new ConfigError(
      file,
      'cluster.member-ttl',
      `must be between 1s and 5m, got ${JSON.stringify(raw['member-ttl'])}`,
    );
  raw.nats.servers.forEach((server, i) => {
    if (!/^(nats|tls|ws|wss):\/\/[^\s]+$/.test(server) && !/^[^\s/]+:\d+$/.test(server)) {
      throw new ConfigError(
        file,
        `cluster.nats.servers[${i}]`,
        `must be a NATS URL such as nats://127.0.0.1:4222, got ${JSON.stringify(server)}`,
      );
    }
  });
  const tls = raw.nats.tls;
  if (tls !== undefined && (tls.cert === undefined) !== (tls.key === undefined)) {
    throw new ConfigError(
      file,
      tls.cert === undefined ? 'cluster.nats.tls.cert' : 'cluster.nats.tls.key',
      'cert and key go together (a client certificate needs both)',
    );
  }
  const labels = { ...raw.labels };
  checkNodeLabels(
    labels,
    (key, problem) => new ConfigError(file, key === '' ? 'cluster.labels' : `cluster.labels.${key}`, problem),
  );
  const auth = resolveAuth(file, raw.nats);
  const insecure = raw.nats.insecure ?? false;
  if (auth === undefined && tls?.cert === undefined && !insecure) {
    throw new ConfigError(
      file,
      'cluster.nats.insecure',
      'no credential (user + password, token, creds or nkey) and no client certificate (tls.cert) is set: anyone who can reach NATS could make every node run any program. Set one (docs/cluster.md, "Securing NATS"), or cluster.nats.insecure: true to run without',
    );
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
    ...(auth !== undefined ? { auth } : {}),
    insecure,
    memberTtlMs,
    partitions: raw.partitions ?? 64,
    replicas: raw.replicas ?? 1,
    maxBufferedResults: raw['max-buffered-results'] ?? DEFAULT_MAX_BUFFERED_RESULTS,
    eventLogMaxBytes: raw['event-log-max-bytes'] ?? DEFAULT_EVENT_LOG_MAX_BYTES,
    maxClockSkewMs,
    commandChecks: raw['command-checks'] ?? 'deny',
    maxMembers: raw['max-members'] ?? DEFAULT_MAX_MEMBERS,
    maxChannels: raw['max-channels'] ?? DEFAULT_MAX_CHANNELS,
    maxWaitingReads: raw['max-waiting-reads'] ?? DEFAULT_MAX_WAITING_READS,
    maxStateKeys: raw['max-state-keys'] ?? DEFAULT_MAX_STATE_KEYS,
    maxStateValueBytes: raw['max-state-value-bytes'] ?? DEFAULT_MAX_STATE_VALUE_BYTES,
    labels,
  };
}

const AUTH_KEYS = ['user', 'token', 'creds', 'nkey'] as const;

/** At most one credential; a user needs its password; files are read now, so that a bad path fails the start. */
function resolveAuth(file: string | null, nats: ClusterInput['nats']): NatsAuth | undefined {
  const given = AUTH_KEYS.filter((key) => nats[key] !== undefined);
  if (given.length > 1)
    throw new ConfigError(
      file,
      `cluster.nats.${given[1]}`,
      `cannot be set with cluster.nats.${given[0]}: give one credential`,
    );
  if (nats.password !== undefined && nats.user === undefined)
    throw new ConfigError(file, 'cluster.nats.user', 'is required with cluster.nats.password');
  if (nats.user !== undefined) {
    if (nats.password === undefined)
      throw new ConfigError(file, 'cluster.nats.password', 'is required with cluster.nats.user');
    return { kind: 'user', user: nats.user, password: nats.password };
  }
  if (nats.token !== undefined) return { kind: 'token', token: nats.token };
  if (nats.creds !== undefined) {
    const creds = readConfigFile(file, 'cluster.nats.creds', nats.creds);
    if (!creds.includes('BEGIN NATS USER JWT') || !creds.includes('BEGIN USER NKEY SEED')) {
      throw new ConfigError(
        file,
        'cluster.nats.creds',
        `${nats.creds} is not a NATS credentials file (a user JWT and its NKey seed, as nsc writes them)`,
      );
    }
    return { kind: 'creds', creds };
  }
  if (nats.nkey !== undefined) {
    const seed = readConfigFile(file, 'cluster.nats.nkey', nats.nkey).toString('utf8').trim();
    if (!/^SU[A-Z2-7]{56}$/.test(seed))
      throw new ConfigError(
        file,
        'cluster.nats.nkey',
        `${nats.nkey} does not hold a user NKey seed (one line starting with SU, as nk -gen user writes it)`,
      );
    return { kind: 'nkey', seed: Buffer.from(seed, 'utf8') };
  }
  return undefined;
}
