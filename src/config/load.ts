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
import { durationMs, readConfigFile } from '../common/config-values.ts';
import { describeSchemaError, jsonPointerToKey } from '../common/schema-errors.ts';
import { CHECK_KEYS, CheckValidationError, DEFAULT_LABEL_LIMITS, type KeyedCheck, kindOfConfigKey, type LabelLimits, parseCheck } from '../healthcheck/kinds/index.ts';
import { DEFAULT_MAX_PENDING_RESULTS } from '../healthcheck/result-store.ts';
import type { HealthcheckSettings } from '../healthcheck/settings.ts';
import { DEFAULT_MAINTENANCE_LIMITS, type MaintenanceLimits, type MaintenanceWindow, parseWindow } from '../healthcheck/maintenance.ts';
import { type OutputSettings, resolveOutputs } from '../stream/outputs/schema.ts';
import { type DiscoverySettings, resolveDiscovery } from '../healthcheck/discovery/settings.ts';
import { type ExporterSettings, resolveExporters } from '../healthcheck/exporters/settings.ts';
import { ConfigFileSchema } from './schema.ts';
import { DEFAULT_ASYNC_QUEUE_SIZE } from '../stream/async-queues.ts';
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from '../stream/limits.ts';
import { DEFAULT_KEPT_DAMAGED } from '../stream/journal.ts';
import { DEFAULT_MAX_EDN_DEPTH, DEFAULT_MAX_EVENT_DEPTH, type NestingLimits } from '../stream/nesting.ts';
import { DEFAULT_MAX_BUFFERED_BYTES, DEFAULT_MAX_CONNECTIONS as DEFAULT_WEBSOCKET_MAX_CONNECTIONS } from '../stream/pubsub/channels.ts';
import type { Static } from '@sinclair/typebox';
import { DEFAULT_HOST, type HttpSettings, resolveHttp, type ServerTls } from '../server/settings.ts';
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
  streams: {
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
    /** `max-edn-depth` and `max-event-depth` (src/stream/nesting.ts). */
    nesting: NestingLimits;
  };
}

export interface RiemannTcpSettings {
  host: string;
  port: number;
  /** Mutual TLS: set only when key, cert and cacert all are. */
  tls?: Required<ServerTls>;
  maxFrameBytes: number;
  maxConnections: number;
}

/** Runs start on a 50 ms grid: measured in docs/performance.md, "Start tick". */
const DEFAULT_START_TICK = '50ms';
const MAX_START_TICK_MS = 1000;
/** Results wait up to 30 s to be written in groups per check: docs/performance.md, "Result writes". */
const DEFAULT_WRITE_DELAY = '30s';
const MAX_WRITE_DELAY_MS = 300_000;
export const DEFAULT_RIEMANN_PORT = 5555;
export const DEFAULT_SEARCH_LIMIT = 10_000;
export const DEFAULT_MAX_SEARCH_LIMIT = 100_000;

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
  const streams = raw.streams ?? {};
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
    streams: {
      directories: (streams.directories ?? [resolve(dataDir, 'streams')]).map((dir) => resolve(dir)),
      snapshotIntervalMs: durationMs(file, 'streams.snapshot-interval', streams['snapshot-interval'] ?? '10s'),
      journal: streams.journal === undefined || streams.journal === 'on' || streams.journal === true,
      journalDamagedSegments: streams['journal-damaged-segments'] ?? DEFAULT_KEPT_DAMAGED,
      maxPendingEvents: streams['max-pending-events'] ?? 100_000,
      outputs: resolveOutputs(streams.outputs ?? {}, file),
      asyncQueues: Object.fromEntries(
        Object.entries(streams['async-queues'] ?? {}).map(([name, queue]) => [name, { queueSize: queue['queue-size'] ?? DEFAULT_ASYNC_QUEUE_SIZE }]),
      ),
      websocketMaxBufferedBytes: streams.websocket?.['max-buffered-bytes'] ?? DEFAULT_MAX_BUFFERED_BYTES,
      websocketMaxConnections: streams.websocket?.['max-connections'] ?? DEFAULT_WEBSOCKET_MAX_CONNECTIONS,
      ...(streams.tcp ? { tcp: resolveRiemannTcp(file, streams.tcp, http.bodyLimit) } : {}),
      searchLimit: Math.min(streams['search-limit'] ?? DEFAULT_SEARCH_LIMIT, streams['max-search-limit'] ?? DEFAULT_MAX_SEARCH_LIMIT),
      maxSearchLimit: streams['max-search-limit'] ?? DEFAULT_MAX_SEARCH_LIMIT,
      nesting: {
        ednDepth: streams['max-edn-depth'] ?? DEFAULT_MAX_EDN_DEPTH,
        eventDepth: streams['max-event-depth'] ?? DEFAULT_MAX_EVENT_DEPTH,
      },
      limits: {
        maxForks: streams['max-forks'] ?? DEFAULT_STREAM_LIMITS.maxForks,
        maxIndexEntries: streams['max-index-entries'] ?? DEFAULT_STREAM_LIMITS.maxIndexEntries,
        forkIdleNs:
          streams['fork-idle-timeout'] === undefined ? DEFAULT_STREAM_LIMITS.forkIdleNs : durationMs(file, 'streams.fork-idle-timeout', streams['fork-idle-timeout']) * 1e6,
      },
    },
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

/** `streams.tcp`: the certificate options go all three together (TLS with mandatory client certificates). */
function resolveRiemannTcp(file: string | null, tcp: NonNullable<NonNullable<ConfigFile['streams']>['tcp']>, bodyLimit: number): RiemannTcpSettings {
  const certs = (['key', 'cert', 'cacert'] as const).filter((key) => tcp[key] !== undefined);
  if (certs.length > 0 && certs.length < 3) {
    const missing = (['key', 'cert', 'cacert'] as const).filter((key) => tcp[key] === undefined);
    throw new ConfigError(file, `streams.tcp.${missing[0]}`, 'TLS on the Riemann TCP input needs key, cert and cacert together (clients must present a certificate)');
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

