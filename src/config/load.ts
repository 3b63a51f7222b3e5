/**
 * Loads the config file (YAML) into a resolved `VigieConfig`: validated against the TypeBox schemas, defaults
 * of SPEC §0 applied, durations parsed, TLS files read. Works with no file at all. Every error names the file,
 * the key path and the problem, so `vigie serve` can exit 1 before listening and a SIGHUP reload can log it and
 * keep running.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { Value, type ValueError, ValueErrorType } from '@sinclair/typebox/value';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { CheckValidationError, parseCheck } from '../healthcheck/kinds/index.ts';
import { DurationError, parseDuration } from './duration.ts';
import { ConfigFileSchema, isDurationSchema } from './schema.ts';
import type { Static } from '@sinclair/typebox';

export type ConfigFile = Static<typeof ConfigFileSchema>;

export const CHECK_KEYS = ['http-checks', 'tcp-checks', 'dns-checks', 'tls-checks', 'command-checks'] as const;
export type CheckKey = (typeof CHECK_KEYS)[number];

export interface ServerTls {
  key: Buffer;
  cert: Buffer;
  /** Set when `cacert` is configured: clients must then present a certificate signed by it (mutual TLS). */
  ca?: Buffer;
}

export interface VigieConfig {
  /** The file this was loaded from (absolute), or null on embedded defaults. */
  file: string | null;
  dataDir: string;
  databaseFile: string;
  http: {
    host: string;
    port: number;
    tls?: ServerTls;
    basicAuth?: { username: string; password: string };
    allowedCn: string[];
    disableHealthcheckApi: boolean;
    disableResultApi: boolean;
    bodyLimit: number;
  };
  healthchecks: {
    labels: string[];
    maxConcurrentRuns: number;
    historySize: number;
    /** Raw check definitions per config key, validated by the healthcheck part (kinds own their schemas). */
    checks: Record<CheckKey, unknown[]>;
  };
  exporters: ConfigFile['exporters'];
  discovery: ConfigFile['discovery'];
  streams: {
    directories: string[];
    snapshotIntervalMs: number;
    maxPendingEvents: number;
    outputs: Record<string, unknown>;
  };
}

export class ConfigError extends Error {
  constructor(
    readonly file: string | null,
    readonly key: string,
    readonly problem: string,
  ) {
    super(`${file ?? '<defaults>'}: ${key === '' ? '' : `${key}: `}${problem}`);
  }
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 9013;
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;

/** Reads and resolves a config file; `null` gives the embedded defaults. Throws ConfigError. */
export function loadConfig(file: string | null): VigieConfig {
  if (file === null) return resolveConfig({}, null);
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(path, '', `cannot read the file: ${(error as Error).message}`);
  }
  return parseConfigText(text, path);
}

export function parseConfigText(text: string, file: string | null): VigieConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true, uniqueKeys: true }) ?? {};
  } catch (error) {
    if (error instanceof YAMLParseError) {
      const at = error.linePos?.[0];
      const where = at ? `line ${at.line}, column ${at.col}` : 'YAML';
      throw new ConfigError(file, '', `invalid YAML at ${where}: ${error.message.split('\n')[0]}`);
    }
    throw error;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(file, '', 'the top level must be a mapping of keys');
  }
  const first = Value.Errors(ConfigFileSchema, raw).First();
  if (first) throw new ConfigError(file, jsonPointerToKey(first.path), describeSchemaError(first));
  return resolveConfig(raw as ConfigFile, file);
}

function resolveConfig(raw: ConfigFile, file: string | null): VigieConfig {
  const http = raw.http ?? {};
  const dataDir = resolve(raw['data-dir'] ?? 'data');
  if ((http.key === undefined) !== (http.cert === undefined)) {
    throw new ConfigError(file, http.key === undefined ? 'http.key' : 'http.cert', 'the key and cert options must be set together');
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
  const streams = raw.streams ?? {};
  const checks = Object.fromEntries(CHECK_KEYS.map((key) => [key, raw[key] ?? []])) as Record<CheckKey, unknown[]>;
  validateChecks(file, checks);
  return {
    file,
    dataDir,
    databaseFile: resolve(dataDir, 'vigie.db'),
    http: {
      host: http.host ?? DEFAULT_HOST,
      port: http.port ?? DEFAULT_PORT,
      ...(tls ? { tls } : {}),
      ...(http['basic-auth'] ? { basicAuth: http['basic-auth'] } : {}),
      allowedCn: http['allowed-cn'] ?? [],
      disableHealthcheckApi: http['disable-healthcheck-api'] ?? false,
      disableResultApi: http['disable-result-api'] ?? false,
      bodyLimit: http['body-limit'] ?? DEFAULT_BODY_LIMIT,
    },
    healthchecks: {
      labels: raw['healthchecks-labels'] ?? [],
      maxConcurrentRuns: raw.healthchecks?.['max-concurrent-runs'] ?? 1000,
      historySize: raw.healthchecks?.['history-size'] ?? 100,
      checks,
    },
    exporters: raw.exporters,
    discovery: raw.discovery,
    streams: {
      directories: (streams.directories ?? [resolve(dataDir, 'streams')]).map((dir) => resolve(dir)),
      snapshotIntervalMs: durationMs(file, 'streams.snapshot-interval', streams['snapshot-interval'] ?? '10s'),
      maxPendingEvents: streams['max-pending-events'] ?? 100_000,
      outputs: (streams.outputs ?? {}) as Record<string, unknown>,
    },
  };
}

/**
 * Validates every `*-checks` entry with its kind's own rules, so that a bad check fails the startup (or is
 * refused by a reload) with `<file>: http-checks[2].port: <problem>`. Names are unique across all lists.
 */
function validateChecks(file: string | null, checks: Record<CheckKey, unknown[]>): void {
  const seen = new Map<string, string>();
  for (const key of CHECK_KEYS) {
    const kind = key.slice(0, -'-checks'.length) as Parameters<typeof parseCheck>[0];
    checks[key].forEach((raw, i) => {
      const at = `${key}[${i}]`;
      let def: ReturnType<typeof parseCheck>;
      try {
        def = parseCheck(kind, raw);
      } catch (error) {
        if (error instanceof CheckValidationError) throw new ConfigError(file, error.field === '' ? at : `${at}.${error.field}`, error.problem);
        throw error;
      }
      if (def.intervalNs <= 0) throw new ConfigError(file, `${at}.interval`, 'is required: a check of the config file runs periodically (one-off checks are an API feature)');
      const first = seen.get(def.name);
      if (first !== undefined) throw new ConfigError(file, `${at}.name`, `duplicate name ${JSON.stringify(def.name)} (also ${first})`);
      seen.set(def.name, at);
    });
  }
}

function durationMs(file: string | null, key: string, text: string): number {
  try {
    const ns = parseDuration(text);
    if (ns <= 0) throw new DurationError(`must be positive, got ${JSON.stringify(text)}`);
    return ns / 1e6;
  } catch (error) {
    throw new ConfigError(file, key, (error as Error).message);
  }
}

function readConfigFile(file: string | null, key: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(file, key, `cannot read ${path}: ${(error as Error).message}`);
  }
}

/** `/http-checks/0/port` → `http-checks[0].port`, the way people write key paths. */
export function jsonPointerToKey(pointer: string): string {
  let key = '';
  for (const part of pointer.split('/').slice(1)) {
    const name = part.replace(/~1/g, '/').replace(/~0/g, '~');
    key += /^\d+$/.test(name) ? `[${name}]` : key === '' ? name : `.${name}`;
  }
  return key;
}

/** Turns a TypeBox error into a sentence about the value the user wrote. */
export function describeSchemaError(error: ValueError): string {
  const schema: TSchema = error.schema;
  const got = describeValue(error.value);
  if (isDurationSchema(schema) && typeof error.value !== 'string') {
    return `must be a duration string such as "10s" or "1m30s", got ${got}`;
  }
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties: {
      const key = String(error.path.split('/').pop());
      const known = Object.keys((schema as { properties?: object }).properties ?? {});
      const close = known.find((candidate) => editDistance(candidate, key) <= 2);
      return `unknown key ${JSON.stringify(key)}${close ? ` (did you mean ${JSON.stringify(close)}?)` : ''}`;
    }
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required';
    case ValueErrorType.String:
      return `must be a string, got ${got}`;
    case ValueErrorType.Integer:
      return `must be an integer, got ${got}`;
    case ValueErrorType.Number:
      return `must be a number, got ${got}`;
    case ValueErrorType.Boolean:
      return `must be true or false, got ${got}`;
    case ValueErrorType.Array:
      return `must be a list, got ${got}`;
    case ValueErrorType.Object:
      return `must be a mapping, got ${got}`;
    default:
      return `${error.message.toLowerCase()}, got ${got}`;
  }
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (typeof value === 'number') return `the number ${value}`;
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'a list';
  return 'a mapping';
}

/** Levenshtein distance, for the "did you mean" hint on a misspelled key. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
    }
    previous = current;
  }
  return previous[b.length] as number;
}
