/**
 * The `http` section of the config file (docs/configuration.md, "http"): its schema, its defaults, and the
 * server's values resolved once when the config is loaded: durations parsed, TLS files read. Errors name the key
 * path.
 */
import { type Static, Type } from '@sinclair/typebox';
import { ConfigError } from '../common/config-error.ts';
import { durationMs, readConfigFile } from '../common/config-values.ts';
import { Duration } from '../common/duration.ts';
import { PUBLIC_FAMILIES, type PublicFamily, SCOPES, type Scope } from './scopes.ts';

const closed = { additionalProperties: false } as const;

export const Port = Type.Integer({ minimum: 0, maximum: 65535 });

/** `compact-heap-below` (src/process/heap-compaction.ts): 0 never compacts every page; at most 4 GiB, whose pause
 *  would already be seconds. */
export const CompactHeapBelowSchema = Type.Integer({ minimum: 0, maximum: 4_294_967_296 });
export const DEFAULT_COMPACT_HEAP_BELOW_BYTES = 32 * 1024 * 1024;

const BasicAuth = Type.Object(
  {
    username: Type.String({ minLength: 1 }),
    password: Type.String({ minLength: 1 }),
  },
  closed,
);

export const HttpServerSchema = Type.Object(
  {
    host: Type.Optional(Type.String({ minLength: 1 })),
    port: Type.Optional(Port),
    key: Type.Optional(Type.String({ minLength: 1 })),
    cert: Type.Optional(Type.String({ minLength: 1 })),
    cacert: Type.Optional(Type.String({ minLength: 1 })),
    'basic-auth': Type.Optional(BasicAuth),
    'allowed-cn': Type.Optional(Type.Array(Type.String())),
    'disable-healthcheck-api': Type.Optional(Type.Boolean()),
    'disable-result-api': Type.Optional(Type.Boolean()),
    'body-limit': Type.Optional(Type.Integer({ minimum: 1024 })),
    'header-timeout': Type.Optional(Duration),
    'request-timeout': Type.Optional(Duration),
    'keep-alive-timeout': Type.Optional(Duration),
    'max-connections': Type.Optional(Type.Integer({ minimum: 1 })),
    tokens: Type.Optional(
      Type.Array(
        Type.Object({ name: Type.String(), sha256: Type.String(), scopes: Type.Array(Type.String()) }, closed),
      ),
    ),
    public: Type.Optional(Type.Array(Type.String())),
    'max-auth-failures': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-api-tokens': Type.Optional(Type.Integer({ minimum: 0 })),
    'auth-failure-window': Type.Optional(Duration),
    'session-ttl': Type.Optional(Duration),
    'max-sessions': Type.Optional(Type.Integer({ minimum: 1 })),
    audit: Type.Optional(
      Type.Object(
        { retention: Type.Optional(Duration), 'max-rows': Type.Optional(Type.Integer({ minimum: 1 })) },
        closed,
      ),
    ),
  },
  closed,
);

/** A token of `http.tokens`: the SHA-256 of its secret in hex, never the secret. */
export interface ConfigToken {
  name: string;
  sha256: string;
  scopes: Scope[];
}

export interface ServerTls {
  key: Buffer;
  cert: Buffer;
  /** Set when `cacert` is configured: clients must then present a certificate signed by it (mutual TLS). */
  ca?: Buffer;
}

/** The bounds of the audit log (src/server/audit-log.ts): rows older than the retention go, and the oldest past
 *  the row cap. */
export interface AuditSettings {
  retentionMs: number;
  maxRows: number;
}

export interface HttpSettings {
  host: string;
  port: number;
  tls?: ServerTls;
  basicAuth?: { username: string; password: string };
  allowedCn: string[];
  tokens: ConfigToken[];
  /** Route families answered without credentials (docs/http-api.md, "Credentials"). */
  public: PublicFamily[];
  /** Wrong credentials one address may present within `authFailureWindowMs` before its requests are refused
   *  (429) until the window ends (docs/hardening.md, "Guessing credentials"). */
  maxAuthFailures: number;
  authFailureWindowMs: number;
  /** Tokens the API may hold (those of `http.tokens` not counted). */
  maxApiTokens: number;
  /** Sign-in sessions (src/server/sessions.ts): how long one lives, and how many are kept (the oldest goes). */
  sessionTtlMs: number;
  maxSessions: number;
  disableHealthcheckApi: boolean;
  disableResultApi: boolean;
  bodyLimit: number;
  /** Connection hygiene (src/server/connections.ts): time to receive the headers, the whole request, and
   *  how long an idle keep-alive connection is kept; concurrent connections past the cap are refused. */
  headerTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  audit: AuditSettings;
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 9013;
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;
/** Well under the default descriptor limit (1,024) so that checks always have sockets of their own. */
const DEFAULT_MAX_CONNECTIONS = 512;
/** 90 days, and 100,000 rows: about 20 MB of rows as the API writes them (a few hundred bytes each), 300 MB at
 *  most (every string of every row at its truncation, src/server/audit-log.ts). */
const DEFAULT_AUDIT_RETENTION = '2160h';
const DEFAULT_AUDIT_MAX_ROWS = 100_000;
/** A working day; a year at most: a session outliving its operator's memory of it is a cookie to steal. */
const DEFAULT_SESSION_TTL = '12h';
const MAX_SESSION_TTL_MS = 365 * 24 * 3_600_000;
/** About 3 MB held in memory at most (each session a few hundred bytes). */
const DEFAULT_MAX_SESSIONS = 10_000;

export function resolveHttp(file: string | null, raw: Static<typeof HttpServerSchema> | undefined): HttpSettings {
  const http = raw ?? {};
  if ((http.key === undefined) !== (http.cert === undefined)) {
    throw new ConfigError(
      file,
      http.key === undefined ? 'http.key' : 'http.cert',
      'the key and cert options must be set together',
    );
  }
  if (http.cacert !== undefined && http.cert === undefined) {
    throw new ConfigError(file, 'http.cacert', 'mutual TLS needs http.key and http.cert too');
  }
  const tls: ServerTls | undefined =
    http.key !== undefined && http.cert !== undefined
      ? {
          key: readConfigFile(file, 'http.key', http.key),
          cert: readConfigFile(file, 'http.cert', http.cert),
          ...(http.cacert !== undefined ? { ca: readConfigFile(file, 'http.cacert', http.cacert) } : {}),
        }
      : undefined;
  return {
    host: http.host ?? DEFAULT_HOST,
    port: http.port ?? DEFAULT_PORT,
    ...(tls ? { tls } : {}),
    ...(http['basic-auth'] ? { basicAuth: http['basic-auth'] } : {}),
    allowedCn: http['allowed-cn'] ?? [],
    tokens: resolveTokens(file, http.tokens ?? []),
    public: (http.public ?? []).map((family, i) => oneOfKey(file, `http.public[${i}]`, family, PUBLIC_FAMILIES)),
    maxAuthFailures: http['max-auth-failures'] ?? 10,
    maxApiTokens: http['max-api-tokens'] ?? 1000,
    authFailureWindowMs: durationMs(file, 'http.auth-failure-window', http['auth-failure-window'] ?? '1m'),
    sessionTtlMs: sessionTtl(file, http['session-ttl'] ?? DEFAULT_SESSION_TTL),
    maxSessions: http['max-sessions'] ?? DEFAULT_MAX_SESSIONS,
    disableHealthcheckApi: http['disable-healthcheck-api'] ?? false,
    disableResultApi: http['disable-result-api'] ?? false,
    bodyLimit: http['body-limit'] ?? DEFAULT_BODY_LIMIT,
    headerTimeoutMs: durationMs(file, 'http.header-timeout', http['header-timeout'] ?? '10s'),
    requestTimeoutMs: durationMs(file, 'http.request-timeout', http['request-timeout'] ?? '60s'),
    keepAliveTimeoutMs: durationMs(file, 'http.keep-alive-timeout', http['keep-alive-timeout'] ?? '5s'),
    maxConnections: http['max-connections'] ?? DEFAULT_MAX_CONNECTIONS,
    audit: {
      retentionMs: durationMs(file, 'http.audit.retention', http.audit?.retention ?? DEFAULT_AUDIT_RETENTION),
      maxRows: http.audit?.['max-rows'] ?? DEFAULT_AUDIT_MAX_ROWS,
    },
  };
}

function sessionTtl(file: string | null, text: string): number {
  const ms = durationMs(file, 'http.session-ttl', text);
  if (ms < 1000 || ms > MAX_SESSION_TTL_MS)
    throw new ConfigError(file, 'http.session-ttl', `must be between 1s and 8760h, got ${JSON.stringify(text)}`);
  return ms;
}

/** A token name as the API takes it: it appears in URLs (`DELETE /api/v1/tokens/<name>`) and logs. */
export const TOKEN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function resolveTokens(
  file: string | null,
  tokens: NonNullable<Static<typeof HttpServerSchema>['tokens']>,
): ConfigToken[] {
  const seen = new Set<string>();
  return tokens.map(({ name, sha256, scopes }, i) => {
    const key = `http.tokens[${i}]`;
    if (!TOKEN_NAME.test(name))
      throw new ConfigError(
        file,
        `${key}.name`,
        `${JSON.stringify(name)} is not a token name (letters, digits, '.', '_', '-', at most 64)`,
      );
    if (seen.has(name))
      throw new ConfigError(file, `${key}.name`, `the token name ${JSON.stringify(name)} is used twice`);
    seen.add(name);
    if (!/^[0-9a-fA-F]{64}$/.test(sha256)) {
      throw new ConfigError(
        file,
        `${key}.sha256`,
        'must be the SHA-256 of the secret, 64 hex digits (`vigie token create` prints it), never the secret',
      );
    }
    if (scopes.length === 0) throw new ConfigError(file, `${key}.scopes`, `needs at least one of ${SCOPES.join(', ')}`);
    return {
      name,
      sha256: sha256.toLowerCase(),
      scopes: scopes.map((scope, j) => oneOfKey(file, `${key}.scopes[${j}]`, scope, SCOPES)),
    };
  });
}

function oneOfKey<T extends string>(file: string | null, key: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(file, key, `${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
}
