/**
 * A one-off check (`"one-off": true` in a create): run once at the request, its outcome the answer. It never
 * enters the registry, so it is neither stored, scheduled nor counted in the metrics; it only borrows how checks
 * are prepared and whether a maintenance window marks its result.
 */
import { durationToMs } from '../common/duration.ts';
import { type CheckDefinition, checkSummary, type Prepared } from './kinds/index.ts';
import { API_SOURCE } from './admission/api-input.ts';
import { HealthcheckError } from './errors.ts';
import type { MaintenanceCalendar } from './maintenance/maintenance.ts';
import { buildResult } from './results/result.ts';
import type { CheckResult } from './result-types.ts';

export interface OneOffOutcome {
  success: boolean;
  message: string;
  result: CheckResult;
}

/** Runs a check once, now, bounded by its timeout; nothing is registered, stored or counted. */
export async function runOneOff(
  def: CheckDefinition,
  prepare: (def: CheckDefinition) => Promise<Prepared>,
  maintenance: MaintenanceCalendar,
): Promise<OneOffOutcome> {
  let prepared: Prepared;
  try {
    prepared = await prepare(def);
  } catch (error) {
    throw new HealthcheckError(
      'start-failed',
      `Fail to initialize one off healthcheck ${def.name}: ${(error as Error).message}`,
    );
  }
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), durationToMs(def.timeoutNs));
  const startedAt = performance.now();
  let failure: unknown;
  try {
    await prepared.run(controller.signal);
  } catch (error) {
    failure = error ?? new Error('the run failed');
  } finally {
    clearTimeout(timer);
    void prepared.close().catch(() => undefined);
  }
  const labels = Object.keys(def.labels).length > 0 ? def.labels : undefined;
  const result = buildResult(
    def.name,
    checkSummary(def),
    labels,
    API_SOURCE,
    failure,
    performance.now() - startedAt,
    maintenance.inMaintenance(def.name, def.labels),
  );
  return failure === undefined
    ? { success: true, message: `One-off healthcheck ${def.name} successfully executed`, result }
    : { success: false, message: `Execution of one off healthcheck ${def.name} failed: ${result.message}`, result };
}
