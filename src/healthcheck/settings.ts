/**
 * The healthcheck part's keys of the config file (docs/configuration.md): `healthchecks`, `healthchecks-labels`,
 * the `*-checks` lists and `maintenance`. Their schema, their defaults, and their values typed and parsed once
 * when the config is loaded: the part receives these and never reads or re-parses the file itself. Errors name
 * the key path (`http-checks[2].port`).
 */
import { type Static, type TObject, Type } from '@sinclair/typebox';
import { ConfigError } from '../common/config-error.ts';
import { durationMs } from '../common/config-values.ts';
import { Duration } from '../common/duration.ts';
import type { ApiChecksSetting } from './admission/api-check-policy.ts';
import {
  CHECK_KEYS,
  CheckValidationError,
  DEFAULT_LABEL_LIMITS,
  type KeyedCheck,
  kindOfConfigKey,
  type LabelLimits,
  parseCheck,
} from './kinds/index.ts';
import {
  DEFAULT_MAINTENANCE_LIMITS,
  type MaintenanceLimits,
  type MaintenanceWindow,
  parseWindow,
} from './maintenance/maintenance.ts';
import { DEFAULT_MAX_PENDING_BYTES, DEFAULT_MAX_PENDING_RESULTS } from './results/result-store.ts';
import { parseStateFields, stateProperties } from './kinds/states.ts';
import { DEFAULT_STATE_DEFAULTS, type StateDefaults } from './states/check-states.ts';
import { type AlertingSettings, AlertingSchema, resolveAlerting } from './alerts/settings.ts';
import { parseStatusPages, statusLimits } from './status-pages/config.ts';
import type { LoadedPage } from './status-pages/assets.ts';
import type { StatusLimits } from './status-pages/page.ts';
import {
  resolveSubscriptions,
  type SubscriptionSettings,
  SubscriptionSettingsSchema,
} from './status-pages/subscriptions/settings.ts';

const closed = { additionalProperties: false } as const;

const ApiChecks = Type.Union([Type.Literal('auto'), Type.Literal('allow'), Type.Literal('deny')]);

const HealthchecksSettingsSchema = Type.Object(
  {
    'max-concurrent-runs': Type.Optional(Type.Integer({ minimum: 1 })),
    'start-tick': Type.Optional(Duration),
    'write-delay': Type.Optional(Duration),
    'history-size': Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    'max-pending-results': Type.Optional(Type.Integer({ minimum: 1_000 })),
    'max-pending-bytes': Type.Optional(Type.Integer({ minimum: 1024 * 1024 })),
    'max-labels': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-label-key-bytes': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-label-value-bytes': Type.Optional(Type.Integer({ minimum: 0 })),
    'command-checks-api': Type.Optional(ApiChecks),
    'checks-api': Type.Optional(ApiChecks),
    'api-files-dir': Type.Optional(Type.String({ minLength: 1 })),
    'max-maintenance-windows': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-maintenance-window-checks': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-status-pages': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-status-page-groups': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-status-page-checks': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-incidents': Type.Optional(Type.Integer({ minimum: 0 })),
    'max-incident-updates': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-status-title-bytes': Type.Optional(Type.Integer({ minimum: 1 })),
    'max-status-text-bytes': Type.Optional(Type.Integer({ minimum: 1 })),
    'status-page-cache': Type.Optional(Duration),
    'status-subscriptions': Type.Optional(SubscriptionSettingsSchema),
    /** What a check without its own state fields takes (docs/checks.md, "States"). */
    defaults: Type.Optional(Type.Object(stateProperties, closed)),
    'events-retention': Type.Optional(Duration),
    'max-events-per-check': Type.Optional(Type.Integer({ minimum: 1 })),
  },
  closed,
);

/** Each `*-checks` entry is validated by its kind's own schema (src/healthcheck/kinds). */
const CheckList = Type.Array(Type.Unknown());

/** The top-level keys of the part (Cabourotte's layout: the check lists sit at the top of the file). */
export const HealthcheckKeys = {
  'healthchecks-labels': Type.Optional(Type.Array(Type.String({ pattern: '^[a-zA-Z_][a-zA-Z0-9_]*$' }))),
  healthchecks: Type.Optional(HealthchecksSettingsSchema),
  'http-checks': Type.Optional(CheckList),
  'tcp-checks': Type.Optional(CheckList),
  'dns-checks': Type.Optional(CheckList),
  'tls-checks': Type.Optional(CheckList),
  'websocket-checks': Type.Optional(CheckList),
  'grpc-checks': Type.Optional(CheckList),
  'smtp-checks': Type.Optional(CheckList),
  'imap-checks': Type.Optional(CheckList),
  'pop3-checks': Type.Optional(CheckList),
  'domain-checks': Type.Optional(CheckList),
  'icmp-checks': Type.Optional(CheckList),
  'command-checks': Type.Optional(CheckList),
  'heartbeat-checks': Type.Optional(CheckList),
  /** Each window is validated by src/healthcheck/maintenance/maintenance.ts. */
  maintenance: Type.Optional(Type.Array(Type.Unknown())),
  /** Each page is validated by src/healthcheck/status-pages/page.ts. */
  'status-pages': Type.Optional(Type.Array(Type.Unknown())),
  /** The alerts of the checks (src/healthcheck/alerts/settings.ts). */
  alerting: Type.Optional(AlertingSchema),
};

type HealthcheckFile = Static<TObject<typeof HealthcheckKeys>>;

export interface HealthcheckSettings {
  /** Check labels that become metric labels (`healthchecks-labels`). */
  labels: string[];
  maxConcurrentRuns: number;
  /** `healthchecks.start-tick` in ms, or `auto`: runs start on this grid (src/healthcheck/scheduling/scheduler.ts). */
  startTickMs: number | 'auto';
  historySize: number;
  /** `healthchecks.write-delay` in seconds: how long a check's results may wait to be written in a group. */
  writeDelayS: number;
  /** `healthchecks.max-pending-results`: raw results held in memory for all checks until they are written. */
  maxPendingResults: number;
  /** `healthchecks.max-pending-bytes`: the bytes of their messages. */
  maxPendingBytes: number;
  /** `healthchecks.max-labels`, `max-label-key-bytes`, `max-label-value-bytes`, for every check of every source. */
  labelLimits: LabelLimits;
  /** Whether the API may create command checks, and network checks (src/healthcheck/admission/api-check-policy.ts). */
  commandChecksApi: ApiChecksSetting;
  checksApi: ApiChecksSetting;
  /** `healthchecks.api-files-dir`: where the files named by API checks must be; null: API checks name none
   *  (src/healthcheck/admission/api-check-files.ts). */
  apiFilesDir: string | null;
  /** The `*-checks` lists, parsed by their kinds, in file order, each with its key path (`http-checks[2]`). */
  checks: KeyedCheck[];
  /** `healthchecks.max-maintenance-windows`, `max-maintenance-window-checks`, and the label caps for windows. */
  maintenanceLimits: MaintenanceLimits;
  /** The `maintenance:` windows of the config file (src/healthcheck/maintenance/maintenance.ts). */
  maintenance: MaintenanceWindow[];
  /** The caps on status pages and incidents (`healthchecks.max-status-*`, `max-incident*`). */
  statusLimits: StatusLimits;
  /** `healthchecks.status-page-cache`: how long a rendered public answer of a status page is served again (0:
   *  never). */
  statusPageCacheMs: number;
  /** The `status-pages:` of the config file (src/healthcheck/status-pages/). */
  statusPages: LoadedPage[];
  /** `healthchecks.status-subscriptions`; null: pages take no subscribers. */
  statusSubscriptions: SubscriptionSettings | null;
  /** `healthchecks.defaults`: the thresholds and degraded conditions of checks without their own. */
  stateDefaults: StateDefaults;
  /** `healthchecks.events-retention` in ms: changes of state older than this are deleted. */
  eventsRetentionMs: number;
  /** `healthchecks.max-events-per-check`: a check's oldest changes of state beyond it are deleted. */
  maxEventsPerCheck: number;
  /** `alerting:` (docs/alerting.md). */
  alerting: AlertingSettings;
  /** The names of `notifiers:`, which API checks' `alerts.notify` may name (set by the config loader). */
  notifierNames: string[];
}

/** What the part needs of a loaded config: its section, and the file to name in errors. */
export interface HealthcheckConfig {
  file: string | null;
  healthchecks: HealthcheckSettings;
}

const MAX_START_TICK_MS = 1000;
/** Results wait up to 30 s to be written in groups per check: docs/performance.md, "Result writes". */
const DEFAULT_WRITE_DELAY = '30s';
const MAX_WRITE_DELAY_MS = 300_000;
/** 400 days: a year of changes, and the same weeks of the year before to compare with. */
const DEFAULT_EVENTS_RETENTION = '9600h';

export function resolveHealthchecks(file: string | null, raw: HealthcheckFile): HealthcheckSettings {
  const checks = parseChecks(file, raw, labelLimits(raw));
  const windowLimits = maintenanceLimits(raw);
  const pageLimits = statusLimits(raw.healthchecks, labelLimits(raw));
  return {
    labels: raw['healthchecks-labels'] ?? [],
    maxConcurrentRuns: raw.healthchecks?.['max-concurrent-runs'] ?? 1000,
    startTickMs: startTick(file, raw.healthchecks?.['start-tick']),
    historySize: raw.healthchecks?.['history-size'] ?? 100,
    writeDelayS: writeDelay(file, raw.healthchecks?.['write-delay']),
    maxPendingResults: raw.healthchecks?.['max-pending-results'] ?? DEFAULT_MAX_PENDING_RESULTS,
    maxPendingBytes: raw.healthchecks?.['max-pending-bytes'] ?? DEFAULT_MAX_PENDING_BYTES,
    labelLimits: labelLimits(raw),
    commandChecksApi: raw.healthchecks?.['command-checks-api'] ?? 'auto',
    checksApi: raw.healthchecks?.['checks-api'] ?? 'auto',
    apiFilesDir: raw.healthchecks?.['api-files-dir'] ?? null,
    checks,
    maintenanceLimits: windowLimits,
    maintenance: parseMaintenance(file, raw, windowLimits),
    statusLimits: pageLimits,
    statusPageCacheMs: durationMs(
      file,
      'healthchecks.status-page-cache',
      raw.healthchecks?.['status-page-cache'] ?? '5s',
      { zero: true },
    ),
    statusPages: parseStatusPages(file, raw['status-pages'] ?? [], pageLimits),
    statusSubscriptions: resolveSubscriptions(file, raw.healthchecks?.['status-subscriptions']),
    stateDefaults: stateDefaults(file, raw.healthchecks?.defaults),
    eventsRetentionMs: durationMs(
      file,
      'healthchecks.events-retention',
      raw.healthchecks?.['events-retention'] ?? DEFAULT_EVENTS_RETENTION,
    ),
    maxEventsPerCheck: raw.healthchecks?.['max-events-per-check'] ?? 100_000,
    alerting: resolveAlerting(file, raw.alerting),
    notifierNames: [],
  };
}

/** `healthchecks.defaults`, validated as a check's own fields; errors name `healthchecks.defaults.<field>`. */
function stateDefaults(file: string | null, raw: Parameters<typeof parseStateFields>[0] | undefined): StateDefaults {
  if (raw === undefined) return DEFAULT_STATE_DEFAULTS;
  try {
    const fields = parseStateFields(raw);
    return {
      failureThreshold: fields.failureThreshold ?? DEFAULT_STATE_DEFAULTS.failureThreshold,
      successThreshold: fields.successThreshold ?? DEFAULT_STATE_DEFAULTS.successThreshold,
      ...(fields.degraded !== undefined ? { degraded: fields.degraded } : {}),
    };
  } catch (error) {
    if (error instanceof CheckValidationError)
      throw new ConfigError(file, `healthchecks.defaults.${error.field}`, error.problem);
    throw error;
  }
}

/** The caps on every check's labels (docs/hardening.md, "Labels"). */
function labelLimits(raw: HealthcheckFile): LabelLimits {
  const settings = raw.healthchecks;
  return {
    maxLabels: settings?.['max-labels'] ?? DEFAULT_LABEL_LIMITS.maxLabels,
    maxKeyBytes: settings?.['max-label-key-bytes'] ?? DEFAULT_LABEL_LIMITS.maxKeyBytes,
    maxValueBytes: settings?.['max-label-value-bytes'] ?? DEFAULT_LABEL_LIMITS.maxValueBytes,
  };
}

/** The caps on maintenance windows (docs/hardening.md, "Maintenance windows"); labels as a check's. */
function maintenanceLimits(raw: HealthcheckFile): MaintenanceLimits {
  return {
    maxWindows: raw.healthchecks?.['max-maintenance-windows'] ?? DEFAULT_MAINTENANCE_LIMITS.maxWindows,
    window: {
      labels: labelLimits(raw),
      maxChecks: raw.healthchecks?.['max-maintenance-window-checks'] ?? DEFAULT_MAINTENANCE_LIMITS.window.maxChecks,
    },
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

/**
 * `healthchecks.start-tick`: `auto` unless set (2 s, 1 s, 500 ms or 250 ms as the runs due grow: docs/performance.md,
 * "Start tick"), or a duration of at most a second (a run may start up to one tick late).
 */
function startTick(file: string | null, text: string | undefined): number | 'auto' {
  if (text === undefined || text === 'auto') return 'auto';
  const tick = durationMs(file, 'healthchecks.start-tick', text);
  if (tick > MAX_START_TICK_MS)
    throw new ConfigError(file, 'healthchecks.start-tick', `must be at most 1s, got ${JSON.stringify(text)}`);
  return tick;
}

/** `maintenance:` windows, each validated as the API validates one; names are unique. */
function parseMaintenance(file: string | null, raw: HealthcheckFile, limits: MaintenanceLimits): MaintenanceWindow[] {
  const seen = new Set<string>();
  const entries = raw.maintenance ?? [];
  if (entries.length > limits.maxWindows) {
    throw new ConfigError(
      file,
      'maintenance',
      `has ${entries.length} windows, more than the limit of ${limits.maxWindows} (healthchecks.max-maintenance-windows)`,
    );
  }
  return entries.map((entry, i) => {
    let window: MaintenanceWindow;
    try {
      window = parseWindow(entry, limits.window);
    } catch (error) {
      if (error instanceof CheckValidationError)
        throw new ConfigError(
          file,
          error.field === '' ? `maintenance[${i}]` : `maintenance[${i}].${error.field}`,
          error.problem,
        );
      throw error;
    }
    if (seen.has(window.name))
      throw new ConfigError(file, `maintenance[${i}].name`, `duplicate name ${JSON.stringify(window.name)}`);
    seen.add(window.name);
    return window;
  });
}

/**
 * Parses every `*-checks` entry with its kind's own rules, so that a bad check fails the startup (or is
 * refused by a reload) with `<file>: http-checks[2].port: <problem>`. Names are unique across all lists.
 */
function parseChecks(file: string | null, raw: HealthcheckFile, limits: LabelLimits): KeyedCheck[] {
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
        if (error instanceof CheckValidationError)
          throw new ConfigError(file, error.field === '' ? at : `${at}.${error.field}`, error.problem);
        throw error;
      }
      if (def.intervalNs <= 0)
        throw new ConfigError(
          file,
          `${at}.interval`,
          'is required: a check of the config file runs periodically (one-off checks are an API feature)',
        );
      const first = seen.get(def.name);
      if (first !== undefined)
        throw new ConfigError(file, `${at}.name`, `duplicate name ${JSON.stringify(def.name)} (also ${first})`);
      seen.set(def.name, at);
      checks.push({ key: at, def });
    });
  }
  return checks;
}
