import { durationToMs } from '../../common/duration.ts';
import { type CheckDefinition, checkSummary, type Prepared } from '../kinds/index.ts';
import type { CheckSeries } from '../metrics.ts';
import type { ScheduledJob, SchedulerJob } from './scheduler.ts';
import type { StateMachine } from '../states/machine.ts';

/** A check that is registered: what the scheduler runs and what the listings show. */
export class RunningCheck implements SchedulerJob {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly summary: string;
  readonly labels: Record<string, string> | undefined;
  handle: ScheduledJob<RunningCheck> | null = null;
  /** A pushed check whose silence this node watches (it owns it). */
  pushStarted = false;
  /** Outcome of the previous run, to log only the transitions between success and failure. */
  lastSuccess: boolean | undefined;
  /** Its state (src/healthcheck/states/), set when it is registered: every result of the check feeds it. */
  machine: StateMachine | null = null;

  constructor(
    readonly def: CheckDefinition,
    readonly source: string,
    readonly prepared: Prepared,
    readonly metricSeries: CheckSeries,
  ) {
    this.intervalMs = durationToMs(def.intervalNs);
    this.timeoutMs = durationToMs(def.timeoutNs);
    this.summary = checkSummary(def);
    this.labels = Object.keys(def.labels).length > 0 ? def.labels : undefined;
  }

  run(signal: AbortSignal): Promise<void> {
    return this.prepared.run(signal);
  }
}
