/**
 * Where the checks come from besides the API's requests: at startup, the stored API checks (a config name takes its
 * own back), the config file's and the last good payload of each discovery source, then the latest results; on
 * each reload, the config file's again. Config and discovery checks go through the same reconciler as the bulk API.
 */
import type { Logger } from 'pino';
import { ConfigError } from '../common/config-error.ts';
import { API_SOURCE, CONFIG_SOURCE } from './admission/api-input.ts';
import { checkFilePolicy } from './admission/api-check-files.ts';
import { type CheckDefinition, CheckFailure, type KeyedCheck, type Prepared, parseCheck } from './kinds/index.ts';
import { CheckPrepareError, type ReconcilePlan, type Reconciler } from './registry/reconciler.ts';
import type { CheckRegistry } from './registry/registry.ts';
import type { HealthcheckRepository } from './results/repository.ts';
import type { HealthcheckConfig, HealthcheckSettings } from './settings.ts';

export interface RestoredSource {
  source: string;
  checks: readonly KeyedCheck[];
}

/** What a start loads besides the database: the config file, and the saved payloads of discovery sources. */
interface StartupOptions {
  config: HealthcheckConfig;
  restoredSources?: readonly RestoredSource[] | undefined;
}

/**
 * Registers the stored API checks (one no longer valid, or naming a file outside `healthchecks.api-files-dir`, is
 * kept in the database, not run), the config file's checks
 * and the restored discovery sources, forgets the results of checks that are gone, and restores the latest results.
 */
export async function loadChecks(
  checks: CheckRegistry,
  reconciler: Reconciler,
  repository: HealthcheckRepository,
  options: StartupOptions,
  logger: Logger,
): Promise<void> {
  const configNames = new Set(options.config.healthchecks.checks.map(({ def }) => def.name));
  const taken: string[] = [];
  for (const stored of repository.listApiChecks()) {
    if (configNames.has(stored.name)) {
      taken.push(stored.name);
      continue;
    }
    let def: CheckDefinition;
    try {
      def = parseCheck(stored.kind, stored.definition, options.config.healthchecks.labelLimits);
      checkFilePolicy(def, { under: options.config.healthchecks.apiFilesDir });
    } catch (error) {
      // Kept in the database untouched: a later version may read it again.
      logger.error(
        { err: error, name: stored.name },
        `stored healthcheck ${stored.name} is not valid any more: ${(error as Error).message}`,
      );
      continue;
    }
    checks.register(checks.create(def, API_SOURCE, await prepareStored(checks, def, logger)));
  }
  repository.deleteDefinitions(taken);
  await applyConfigChecks(reconciler, repository, options.config);
  for (const { source, checks } of options.restoredSources ?? []) {
    try {
      await reconciler.apply(source, checks);
    } catch (error) {
      logger.error({ err: error, source }, `the saved checks of ${source} cannot start: ${(error as Error).message}`);
    }
  }
  const gone = repository.retainOnly(checks.names());
  if (gone.length > 0) logger.info({ checks: gone.length }, 'forgot the stored results of checks that no longer exist');
  checks.restoreResults(repository.loadResults());
}

/** A stored check whose resources cannot be built (a certificate file vanished) still runs, and fails saying why. */
async function prepareStored(checks: CheckRegistry, def: CheckDefinition, logger: Logger): Promise<Prepared> {
  try {
    return await checks.prepare(def);
  } catch (error) {
    const failure = new CheckFailure(`Fail to initialize healthcheck ${def.name}: ${(error as Error).message}`);
    logger.error({ name: def.name }, failure.message);
    return { run: () => Promise.reject(failure), close: () => Promise.resolve() };
  }
}

/** The config file takes its names back from the API (their stored definitions go, their results stay). */
export async function applyConfigChecks(
  reconciler: Reconciler,
  repository: HealthcheckRepository,
  config: HealthcheckConfig,
): Promise<ReconcilePlan> {
  try {
    return await reconciler.apply(CONFIG_SOURCE, config.healthchecks.checks, (plan) => {
      repository.deleteDefinitions(
        plan.replaced.filter((check) => check.source === API_SOURCE).map((check) => check.def.name),
      );
      repository.forgetChecks(plan.removed.map((check) => check.def.name));
    });
  } catch (error) {
    if (error instanceof CheckPrepareError) throw new ConfigError(config.file, error.check.key, error.message);
    throw error;
  }
}

/** The settings a running service cannot change: said once, when a reload changes them. */
export function warnRestartOnlyChanges(previous: HealthcheckSettings, next: HealthcheckSettings, logger: Logger): void {
  if (
    previous.labels.join() !== next.labels.join() ||
    previous.historySize !== next.historySize ||
    previous.writeDelayS !== next.writeDelayS ||
    previous.maxPendingResults !== next.maxPendingResults ||
    previous.maxPendingBytes !== next.maxPendingBytes
  ) {
    logger.warn(
      'changes to healthchecks-labels, healthchecks.history-size, healthchecks.write-delay, healthchecks.max-pending-results and healthchecks.max-pending-bytes take effect at the next restart',
    );
  }
}
