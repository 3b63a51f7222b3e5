/**
 * The healthcheck part's config values, typed and parsed once by the config loader (docs/configuration.md): the part
 * receives these and never reads or re-parses the file itself.
 */
import type { CommandChecksApi } from './command-policy.ts';
import type { KeyedCheck, LabelLimits } from './kinds/index.ts';
import type { MaintenanceLimits, MaintenanceWindow } from './maintenance.ts';

export interface HealthcheckSettings {
  /** Check labels that become metric labels (`healthchecks-labels`). */
  labels: string[];
  maxConcurrentRuns: number;
  /** `healthchecks.start-tick` in ms: runs start on this grid (src/healthcheck/scheduler.ts). */
  startTickMs: number;
  historySize: number;
  /** `healthchecks.write-delay` in seconds: how long a check's results may wait to be written in a group. */
  writeDelayS: number;
  /** `healthchecks.max-pending-results`: raw results held in memory for all checks until they are written. */
  maxPendingResults: number;
  /** `healthchecks.max-labels`, `max-label-key-bytes`, `max-label-value-bytes`, for every check of every source. */
  labelLimits: LabelLimits;
  /** Whether the API may create command checks (src/healthcheck/command-policy.ts). */
  commandChecksApi: CommandChecksApi;
  /** The `*-checks` lists, parsed by their kinds, in file order, each with its key path (`http-checks[2]`). */
  checks: KeyedCheck[];
  /** `healthchecks.max-maintenance-windows`, `max-maintenance-window-checks`, and the label caps for windows. */
  maintenanceLimits: MaintenanceLimits;
  /** The `maintenance:` windows of the config file (src/healthcheck/maintenance.ts). */
  maintenance: MaintenanceWindow[];
}

/** What the part needs of a loaded config: its section, and the file to name in errors. */
export interface HealthcheckConfig {
  file: string | null;
  healthchecks: HealthcheckSettings;
}
