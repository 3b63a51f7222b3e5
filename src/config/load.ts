/**
 * Loads the config file (YAML) into a resolved `VigieConfig`: validated against the TypeBox schemas, defaults
 * of docs/configuration.md applied, durations parsed, TLS files read. Works with no file at all. Every error names the file,
 * the key path and the problem, so `vigie serve` can exit 1 before listening and a SIGHUP reload can log it and
 * keep running.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { ConfigError } from '../common/config-error.ts';
import { durationMs } from '../common/config-values.ts';
import { describeSchemaError, jsonPointerToKey } from '../common/schema-errors.ts';
import { CHECK_KEYS, CheckValidationError, DEFAULT_LABEL_LIMITS, type KeyedCheck, kindOfConfigKey, type LabelLimits, parseCheck } from '../healthcheck/kinds/index.ts';
import { DEFAULT_MAX_PENDING_RESULTS } from '../healthcheck/result-store.ts';
import type { HealthcheckSettings } from '../healthcheck/settings.ts';
import { DEFAULT_MAINTENANCE_LIMITS, type MaintenanceLimits, type MaintenanceWindow, parseWindow } from '../healthcheck/maintenance.ts';
import { type DiscoverySettings, resolveDiscovery } from '../healthcheck/discovery/settings.ts';
import { type ExporterSettings, resolveExporters } from '../healthcheck/exporters/settings.ts';
import { ConfigFileSchema } from './schema.ts';
import type { Static } from '@sinclair/typebox';
import { type HttpSettings, resolveHttp } from '../server/settings.ts';
import { resolveStreams, type StreamSettings } from '../stream/settings.ts';
import { type ClusterSettings, resolveCluster } from '../cluster/settings.ts';

export { ConfigError } from '../common/config-error.ts';

export type ConfigFile = Static<typeof ConfigFileSchema>;

export interface VigieConfig {
  /** The file this was loaded from (absolute), or null on embedded defaults. */
  file: string | null;
  dataDir: string;
  databaseFile: string;
  http: HttpSettings;
  healthchecks: HealthcheckSettings;
  /** Set with `cluster:` (docs/cluster.md); absent on a single node. */
  cluster?: ClusterSettings;
  exporters: ExporterSettings;
  discovery: DiscoverySettings;
  streams: StreamSettings;
}

/** Runs start on a 50 ms grid: measured in docs/performance.md, "Start tick". */
const DEFAULT_START_TICK = '50ms';
const MAX_START_TICK_MS = 1000;
/** Results wait up to 30 s to be written in groups per check: docs/performance.md, "Result writes". */
const DEFAULT_WRITE_DELAY = '30s';
const MAX_WRITE_DELAY_MS = 300_000;

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
  const checks = parseChecks(file, raw, labelLimits(raw));
  const windowLimits = maintenanceLimits(raw);
  return {
    file,
    dataDir,
    databaseFile: resolve(dataDir, 'vigie.db'),
    http,
    healthchecks: {
      labels: raw['healthchecks-labels'] ?? [],
      maxConcurrentRuns: raw.healthchecks?.['max-concurrent-runs'] ?? 1000,
      startTickMs: startTick(file, raw.healthchecks?.['start-tick']),
      historySize: raw.healthchecks?.['history-size'] ?? 100,
      writeDelayS: writeDelay(file, raw.healthchecks?.['write-delay']),
      maxPendingResults: raw.healthchecks?.['max-pending-results'] ?? DEFAULT_MAX_PENDING_RESULTS,
      labelLimits: labelLimits(raw),
      commandChecksApi: raw.healthchecks?.['command-checks-api'] ?? 'auto',
      checks,
      maintenanceLimits: windowLimits,
      maintenance: parseMaintenance(file, raw, windowLimits),
    },
    ...(raw.cluster ? { cluster: resolveCluster(file, raw.cluster) } : {}),
    exporters: resolveExporters(raw.exporters, file),
    discovery: resolveDiscovery(raw.discovery, file),
    streams: resolveStreams(file, raw.streams, dataDir, http.bodyLimit),
  };
}

/** The caps on every check's labels (docs/hardening.md, "Labels"). */
function labelLimits(raw: ConfigFile): LabelLimits {
  const settings = raw.healthchecks;
  return {
    maxLabels: settings?.['max-labels'] ?? DEFAULT_LABEL_LIMITS.maxLabels,
    maxKeyBytes: settings?.['max-label-key-bytes'] ?? DEFAULT_LABEL_LIMITS.maxKeyBytes,
    maxValueBytes: settings?.['max-label-value-bytes'] ?? DEFAULT_LABEL_LIMITS.maxValueBytes,
  };
}

/** The caps on maintenance windows (docs/hardening.md, "Maintenance windows"); labels as a check's. */
function maintenanceLimits(raw: ConfigFile): MaintenanceLimits {
  return {
    maxWindows: raw.healthchecks?.['max-maintenance-windows'] ?? DEFAULT_MAINTENANCE_LIMITS.maxWindows,
    window: { labels: labelLimits(raw), maxChecks: raw.healthchecks?.['max-maintenance-window-checks'] ?? DEFAULT_MAINTENANCE_LIMITS.window.maxChecks },
  };
}

/** `healthchecks.write-delay` in whole seconds (result timestamps are seconds): 1s to 5m. */
function writeDelay(file: string | null, text: string | undefined): number {
  const delayMs = durationMs(file, 'healthchecks.write-delay', text ?? DEFAULT_WRITE_DELAY);
  if (delayMs < 1000 || delayMs > MAX_WRITE_DELAY_MS) {
    throw new ConfigError(file, 'healthchecks.write-delay', `must be between 1s and 5m, got ${JSON.stringify(text)}`);
  }
  return Math.floor(delayMs / 1000);
}

/** `healthchecks.start-tick`: 50 ms unless set, at most a second (a run may start up to one tick late). */
function startTick(file: string | null, text: string | undefined): number {
  const tick = durationMs(file, 'healthchecks.start-tick', text ?? DEFAULT_START_TICK);
  if (tick > MAX_START_TICK_MS) throw new ConfigError(file, 'healthchecks.start-tick', `must be at most 1s, got ${JSON.stringify(text)}`);
  return tick;
}

/** `maintenance:` windows, each validated as the API validates one; names are unique. */
function parseMaintenance(file: string | null, raw: ConfigFile, limits: MaintenanceLimits): MaintenanceWindow[] {
  const seen = new Set<string>();
  const entries = raw.maintenance ?? [];
  if (entries.length > limits.maxWindows) {
    throw new ConfigError(file, 'maintenance', `has ${entries.length} windows, more than the limit of ${limits.maxWindows} (healthchecks.max-maintenance-windows)`);
  }
  return entries.map((entry, i) => {
    let window: MaintenanceWindow;
    try {
      window = parseWindow(entry, limits.window);
    } catch (error) {
      if (error instanceof CheckValidationError) throw new ConfigError(file, error.field === '' ? `maintenance[${i}]` : `maintenance[${i}].${error.field}`, error.problem);
      throw error;
    }
    if (seen.has(window.name)) throw new ConfigError(file, `maintenance[${i}].name`, `duplicate name ${JSON.stringify(window.name)}`);
    seen.add(window.name);
    return window;
  });
}

/**
 * Parses every `*-checks` entry with its kind's own rules, so that a bad check fails the startup (or is
 * refused by a reload) with `<file>: http-checks[2].port: <problem>`. Names are unique across all lists.
 */
function parseChecks(file: string | null, raw: ConfigFile, limits: LabelLimits): KeyedCheck[] {
  const checks: KeyedCheck[] = [];
  const seen = new Map<string, string>();
  for (const key of CHECK_KEYS) {
    const kind = kindOfConfigKey(key);
    (raw[key] ?? []).forEach((entry, i) => {
      const at = `${key}[${i}]`;
      let def: KeyedCheck['def'];
      try {
        def = parseCheck(kind, entry, limits);
      } catch (error) {
        if (error instanceof CheckValidationError) throw new ConfigError(file, error.field === '' ? at : `${at}.${error.field}`, error.problem);
        throw error;
      }
      if (def.intervalNs <= 0) throw new ConfigError(file, `${at}.interval`, 'is required: a check of the config file runs periodically (one-off checks are an API feature)');
      const first = seen.get(def.name);
      if (first !== undefined) throw new ConfigError(file, `${at}.name`, `duplicate name ${JSON.stringify(def.name)} (also ${first})`);
      seen.set(def.name, at);
      checks.push({ key: at, def });
    });
  }
  return checks;
}

