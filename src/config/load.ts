/**
 * Loads the config file (YAML) into a resolved `VigieConfig`: validated against the TypeBox schemas, defaults
 * of docs/configuration.md applied, durations parsed, TLS files read. Works with no file at all. Every error names the
 * file, the key path and the problem, so `vigie serve` can exit 1 before listening and a SIGHUP reload can log it and
 * keep running.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { ConfigError } from '../common/config-error.ts';
import { describeSchemaError, jsonPointerToKey } from '../common/schema-errors.ts';
import { type HealthcheckSettings, resolveHealthchecks } from '../healthcheck/settings.ts';
import { type DiscoverySettings, resolveDiscovery } from '../healthcheck/discovery/settings.ts';
import { type ExporterSettings, resolveExporters } from '../healthcheck/exporters/settings.ts';
import { ConfigFileSchema } from './schema.ts';
import { withYaml } from './yaml.ts';
import type { Static } from '@sinclair/typebox';
import { DEFAULT_COMPACT_HEAP_BELOW_BYTES, type HttpSettings, resolveHttp } from '../server/settings.ts';
import { resolveStreams, type StreamSettings } from '../stream/settings.ts';
import { type ClusterSettings, resolveCluster } from '../cluster/settings.ts';
import { DEFAULT_DATABASE_CACHE_BYTES } from '../db/settings.ts';
import { type NotifierSettings, resolveNotifiers } from '../notify/settings.ts';
import { checkAlerting } from '../healthcheck/alerts/settings.ts';

export { ConfigError } from '../common/config-error.ts';

export type ConfigFile = Static<typeof ConfigFileSchema>;

export interface VigieConfig {
  /** The file this was loaded from (absolute), or null on embedded defaults. */
  file: string | null;
  dataDir: string;
  databaseFile: string;
  /** The main SQLite connection's page cache (`database-cache-size`, src/db/client.ts). */
  databaseCacheBytes: number;
  /** `compact-heap-below` (src/process/heap-compaction.ts). */
  compactHeapBelowBytes: number;
  http: HttpSettings;
  healthchecks: HealthcheckSettings;
  /** Set with `cluster:` (docs/cluster.md); absent on a single node. */
  cluster?: ClusterSettings;
  exporters: ExporterSettings;
  discovery: DiscoverySettings;
  streams: StreamSettings;
  /** `notifiers:` by name (docs/alerting.md). */
  notifiers: Record<string, NotifierSettings>;
}

/** What `vigie serve --host/--port/--data-dir` set over the file (docs/configuration.md, "Command line"). */
export interface ConfigOverrides {
  host?: string;
  port?: number;
  dataDir?: string;
}

/**
 * Reads and resolves a config file; `null` gives the embedded defaults. `overrides` replace the file's
 * `http.host`, `http.port` and `data-dir` before anything is derived from them (the default stream directory).
 * Throws ConfigError.
 */
export function loadConfig(file: string | null, overrides: ConfigOverrides = {}): VigieConfig {
  if (file === null) return resolveConfig(withOverrides({}, overrides), null);
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(path, '', `cannot read the file: ${(error as Error).message}`);
  }
  return parseConfigText(text, path, overrides);
}

export function parseConfigText(text: string, file: string | null, overrides: ConfigOverrides = {}): VigieConfig {
  const raw: unknown = withYaml(({ parse, YAMLParseError }) => {
    try {
      return parse(text, { prettyErrors: true, uniqueKeys: true }) ?? {};
    } catch (error) {
      if (error instanceof YAMLParseError) {
        const at = error.linePos?.[0];
        const where = at ? `line ${at.line}, column ${at.col}` : 'YAML';
        throw new ConfigError(file, '', `invalid YAML at ${where}: ${error.message.split('\n')[0]}`);
      }
      // yaml refuses some documents while it builds their value, with errors of its own (an alias bomb is a
      // ReferenceError): they are the file's problem all the same.
      throw new ConfigError(file, '', `invalid YAML: ${(error as Error).message.split('\n')[0]}`);
    }
  });
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(file, '', 'the top level must be a mapping of keys');
  }
  const first = Value.Errors(ConfigFileSchema, raw).First();
  if (first) throw new ConfigError(file, jsonPointerToKey(first.path), describeSchemaError(first));
  return resolveConfig(withOverrides(raw as ConfigFile, overrides), file);
}

function withOverrides(raw: ConfigFile, overrides: ConfigOverrides): ConfigFile {
  const { host, port, dataDir } = overrides;
  if (host === undefined && port === undefined && dataDir === undefined) return raw;
  return {
    ...raw,
    ...(dataDir !== undefined ? { 'data-dir': dataDir } : {}),
    http: { ...raw.http, ...(host !== undefined ? { host } : {}), ...(port !== undefined ? { port } : {}) },
  };
}

function resolveConfig(raw: ConfigFile, file: string | null): VigieConfig {
  const http = resolveHttp(file, raw.http);
  const dataDir = resolve(raw['data-dir'] ?? 'data');
  const healthchecks = resolveHealthchecks(file, raw);
  const notifiers = resolveNotifiers(raw.notifiers, file);
  checkAlerting(file, healthchecks.alerting, healthchecks.checks, new Set(Object.keys(notifiers)));
  healthchecks.notifierNames = Object.keys(notifiers);
  return {
    file,
    dataDir,
    databaseFile: resolve(dataDir, 'vigie.db'),
    databaseCacheBytes: raw['database-cache-size'] ?? DEFAULT_DATABASE_CACHE_BYTES,
    compactHeapBelowBytes: raw['compact-heap-below'] ?? DEFAULT_COMPACT_HEAP_BELOW_BYTES,
    http,
    healthchecks,
    ...(raw.cluster ? { cluster: resolveCluster(file, raw.cluster) } : {}),
    exporters: resolveExporters(raw.exporters, file),
    discovery: resolveDiscovery(raw.discovery, file),
    streams: resolveStreams(file, raw.streams, dataDir, http.bodyLimit),
    notifiers,
  };
}
