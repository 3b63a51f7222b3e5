/**
 * The healthcheck API's verbs over the registry and the repository: create / replace by name, bulk, one-off,
 * delete (api-checks.ts), and the reads (check-reads.ts); plus the checks of the other sources (the config file,
 * discovery, the cluster's store), applied through the same reconciler as the bulk API (check-sources.ts,
 * admission/replicated-checks.ts). The service builds the part's pieces and hands each verb to the one that holds it.
 *
 * Ownership of names follows upstream: an API create with the name of a config check takes it over, and the
 * config file takes its names back at the next start or reload. Mutations run one at a time (the registry's
 * `exclusive`), so two requests on one name never interleave between preparing a check and swapping it in.
 */
import {
  type ApiCaller,
  type ApiCheckRefusals,
  NO_REFUSALS,
  OPERATOR,
  refusalsOf,
} from './admission/api-check-policy.ts';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Db } from '../db/client.ts';
import type { AdmissionRules } from './admission/api-input.ts';
import { ApiChecks, type CreateOutcome } from './api-checks.ts';
import { HealthcheckError } from './errors.ts';
import { type CheckOverview, CheckReads } from './check-reads.ts';
import { applyConfigChecks, loadChecks, type RestoredSource, warnRestartOnlyChanges } from './check-sources.ts';
import { HeartbeatReports } from './heartbeat-reports.ts';
import {
  type CheckDefinition,
  type CheckJson,
  type KeyedCheck,
  type LabelLimits,
  type Prepared,
} from './kinds/index.ts';
import { HeartbeatMonitor } from './kinds/heartbeat/kind.ts';
import { MaintenanceCalendar } from './maintenance/maintenance.ts';
import { HealthcheckMetrics, pendingResultMetrics } from './metrics.ts';
import { type ReconcilePlan, Reconciler } from './registry/reconciler.ts';
import { CheckRegistry } from './registry/registry.ts';
import type { ResultSink } from './registry/result-dispatch.ts';
import type { ApiCheckReplica, CheckOwner } from './cluster-port.ts';
import type { ReplicatedCheck } from './admission/replicated-checks.ts';
import { HealthcheckRepository } from './results/repository.ts';
import type {
  CheckResult,
  DurationBucket,
  HistoryEntry,
  SeriesWindow,
  UptimeWindow,
  UptimeWindowName,
} from './result-types.ts';
import type { HealthcheckConfig } from './settings.ts';
import type { UptimePeriods } from './results/uptime-periods.ts';
import { CheckStates } from './states/check-states.ts';
import { type Outage, StateEvents } from './states/events.ts';
import { PauseStore, pauseKind } from './states/pauses.ts';
import type { MirrorReports } from '../common/state-mirror.ts';
import type { RuntimeState } from '../common/runtime-state.ts';
import { SqliteRuntimeState } from '../db/runtime-state.ts';
import { StateApi } from './states/state-api.ts';

export interface ServiceOptions {
  config: HealthcheckConfig;
  db: Db;
  registry: Registry;
  logger: Logger;
  /** Scheduler clock (ms) and first-run spread, for tests. */
  now?: () => number;
  random?: () => number;
  /** Builds a check's resources; the kinds' own unless a test counts runs. */
  prepare?: (def: CheckDefinition) => Promise<Prepared>;
  /** Handed every result this node exports (the exporters). */
  onResult?: readonly ResultSink[];
  /** Handed every result this node ran (a cluster publishes it to the other nodes). */
  publish?: ResultSink;
  /** Where runtime state (pauses) is kept (src/common/runtime-state.ts): this node's SQLite unless given. */
  state?: RuntimeState;
  /** Checks of other sources to run from the start (the last good payload of each discovery source). */
  restoredSources?: readonly RestoredSource[];
  /** The maintenance windows that mark results; none unless given. */
  maintenance?: MaintenanceCalendar;
  /** In a cluster (docs/cluster.md): which checks this node runs, its name on results, and the replicated store of
   *  API definitions that every API change goes through first. */
  owner?: CheckOwner;
  node?: string;
  replica?: ApiCheckReplica;
  /** Why the API may not create command or network checks now (src/healthcheck/admission/api-check-policy.ts); read at
   *  each change, so that a reload applies. Never refused unless given. */
  apiCheckRefusals?: () => ApiCheckRefusals;
}

export class HealthcheckService {
  private readonly checks: CheckRegistry;
  /** Each check's state and pause (src/healthcheck/states/): the seam of the alerts (`onTransition`). */
  readonly states: CheckStates;
  /** The API's verbs over them: pause, resume, events, the state in results. */
  readonly stateApi: StateApi;
  private readonly events: StateEvents;
  private readonly reconciler: Reconciler;
  private readonly repository: HealthcheckRepository;
  private readonly reads: CheckReads;
  private readonly apiChecks: ApiChecks;
  private readonly logger: Logger;
  private config: HealthcheckConfig;
  private readonly maintenance: MaintenanceCalendar;
  private readonly apiCheckRefusals: () => ApiCheckRefusals;

  private constructor(options: ServiceOptions) {
    this.config = options.config;
    this.logger = options.logger;
    const settings = options.config.healthchecks;
    const folded = pendingResultMetrics(options.registry, () => this.repository.results.pending);
    this.repository = new HealthcheckRepository(options.db, {
      // The machine holds what the row keeps of the state (src/healthcheck/states/machine.ts).
      stateOf: (name) => this.states.get(name),
      maxEventsPerCheck: () => this.config.healthchecks.maxEventsPerCheck,
      historySize: settings.historySize,
      writeDelayS: settings.writeDelayS,
      maxPendingResults: settings.maxPendingResults,
      maxPendingBytes: settings.maxPendingBytes,
      onFolded: folded,
      onFlushError: (error) =>
        this.logger.error({ err: error }, `cannot write healthcheck results: ${(error as Error).message}`),
    });
    this.maintenance = options.maintenance ?? new MaintenanceCalendar();
    const maintenance = this.maintenance;
    const runtime = options.state ?? new SqliteRuntimeState(options.db, stateReports(this.logger));
    const pauses = new PauseStore(runtime.collection(pauseKind(options.db)));
    this.events = new StateEvents(options.db, this.repository.results.pending);
    const events = this.events;
    this.states = new CheckStates({
      events: {
        add: (name, event) => this.repository.results.addEvent(name, event),
        insertNow: (name, event) => {
          events.insertNow(name, event);
          this.repository.results.recountEvents(name);
        },
      },
      pauses,
      defaults: settings.stateDefaults,
      lookup: (name) => this.checks.get(name),
      onPauseError: (name, error) =>
        this.logger.error({ err: error, name }, `cannot resume healthcheck ${name}: ${(error as Error).message}`),
      ...(options.node !== undefined ? { node: options.node } : {}),
    });
    this.checks = new CheckRegistry({
      states: this.states,
      inMaintenance: (name, labels) => maintenance.inMaintenance(name, labels),
      pushReports: new HeartbeatReports(options.db),
      maxConcurrentRuns: settings.maxConcurrentRuns,
      startTickMs: settings.startTickMs,
      metrics: new HealthcheckMetrics(options.registry, settings.labels),
      repository: this.repository,
      logger: this.logger,
      ...(options.prepare ? { prepare: options.prepare } : {}),
      ...(options.now ? { now: options.now } : {}),
      ...(options.random ? { random: options.random } : {}),
      ...(options.onResult ? { onResult: options.onResult } : {}),
      ...(options.publish ? { publish: options.publish } : {}),
      ...(options.owner ? { owner: options.owner } : {}),
      ...(options.node !== undefined ? { node: options.node } : {}),
    });
    this.apiCheckRefusals = options.apiCheckRefusals ?? (() => NO_REFUSALS);
    this.stateApi = new StateApi({
      exists: (name) => this.checks.get(name) !== undefined,
      states: this.states,
      pauses,
      events,
    });
    this.reconciler = new Reconciler(this.checks);
    this.reads = new CheckReads(this.checks, this.repository, this.stateApi);
    this.apiChecks = new ApiChecks({
      checks: this.checks,
      reconciler: this.reconciler,
      repository: this.repository,
      maintenance: this.maintenance,
      replica: options.replica,
      logger: this.logger,
      rules: (caller) => this.admissionRules(caller),
    });
  }

  /**
   * Loads the stored API checks and the latest results, and prepares the config checks (a config check that
   * cannot be prepared fails the startup, naming its key). Nothing runs before `start`.
   */
  static async create(options: ServiceOptions): Promise<HealthcheckService> {
    const service = new HealthcheckService(options);
    await loadChecks(service.checks, service.reconciler, service.repository, options, service.logger);
    service.checks.restoreStates(service.repository.results.loadStates());
    service.states.retainPauses(service.checks.names());
    return service;
  }

  /** The registry, for in-process tests of what runs. */
  get registry(): CheckRegistry {
    return this.checks;
  }

  start(): void {
    this.checks.start();
    this.states.start();
    this.repository.start();
    this.events.startPruning(() => this.config.healthchecks.eventsRetentionMs);
  }

  /** Lets the runs in flight finish (their results recorded), writes every buffered result, releases resources. */
  async stop(): Promise<void> {
    this.states.stop();
    this.events.stopPruning();
    await this.checks.exclusive(async () => {
      await this.checks.stop();
      this.repository.stop();
    });
  }

  // Reads (check-reads.ts)

  list(): CheckJson[] {
    return this.reads.list();
  }

  get(name: string): CheckJson {
    return this.reads.get(name);
  }

  results(): CheckResult[] {
    return this.reads.results();
  }

  result(name: string): CheckResult {
    return this.reads.result(name);
  }

  history(name: string, limit: number): HistoryEntry[] {
    return this.reads.history(name, limit);
  }

  uptime(name: string): Record<UptimeWindowName, UptimeWindow> {
    return this.reads.uptime(name);
  }

  overview(): CheckOverview[] {
    return this.reads.overview();
  }

  recentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    return this.reads.recentResults(names, limit);
  }

  durationSeries(name: string, window: SeriesWindow): DurationBucket[] {
    return this.reads.durationSeries(name, window);
  }

  /** Each named check's periods down overlapping [fromMs, toMs), for the uptime report. */
  outages(names: readonly string[], fromMs: number, toMs: number): Map<string, Outage[]> {
    return this.events.outages(names, fromMs, toMs);
  }

  /** Daily runs and period totals over the aggregates, for status pages and the uptime report. */
  get periods(): UptimePeriods {
    return this.repository.periods;
  }

  get historySize(): number {
    return this.config.healthchecks.historySize;
  }

  /** The label caps every definition is validated with (they follow reloads). */
  get labelLimits(): LabelLimits {
    return this.config.healthchecks.labelLimits;
  }

  /**
   * What every API change is admitted under (src/healthcheck/admission/api-input.ts `admitCreate`,
   * `admitStoredCheck`).
   */
  private admissionRules(caller: ApiCaller = OPERATOR): AdmissionRules {
    return {
      labelLimits: this.labelLimits,
      refusals: refusalsOf(caller, this.apiCheckRefusals()),
      files: { under: this.config.healthchecks.apiFilesDir },
      notifiers: new Set(this.config.healthchecks.notifierNames),
    };
  }

  // Mutations of the API checks (api-checks.ts)

  /**
   * Creates or replaces an API check of `kind` (same definition: nothing restarts), or runs it at once when it
   * is one-off. `caller`: who asks (a command check needs the scope `admin`).
   */
  create(kind: string, raw: unknown, caller: ApiCaller = OPERATOR): Promise<CreateOutcome> {
    return this.apiChecks.create(kind, raw, caller);
  }

  /** Makes the set of API checks exactly the payload's, atomically. */
  bulk(body: unknown, caller: ApiCaller = OPERATOR): Promise<void> {
    return this.apiChecks.bulk(body, caller);
  }

  /** Removes an API check, with its latest result, history, aggregates and metric series. */
  delete(name: string): Promise<void> {
    return this.apiChecks.delete(name);
  }

  /** The cluster's API definitions changed (docs/cluster.md): the API checks become exactly `desired`. */
  applyReplicated(
    desired: readonly ReplicatedCheck[],
    refused: (name: string, refusal: HealthcheckError) => void,
  ): Promise<ReconcilePlan> {
    return this.apiChecks.applyReplicated(desired, refused);
  }

  /** The API checks' definitions as the cluster store keeps them (to seed an empty store). */
  apiDefinitions(): CheckDefinition[] {
    return this.apiChecks.definitions();
  }

  /** Reconciles the config-file checks with a reloaded config: unchanged keep running, changed restart, removed
   *  stop. */
  async reload(config: HealthcheckConfig): Promise<void> {
    const previous = this.config.healthchecks;
    const next = config.healthchecks;
    warnRestartOnlyChanges(previous, next, this.logger);
    this.checks.maxConcurrentRuns = next.maxConcurrentRuns;
    this.checks.startTickMs = next.startTickMs;
    const plan = await applyConfigChecks(this.reconciler, this.repository, config);
    this.config = config;
    this.states.defaults = next.stateDefaults;
    this.logger.info(
      { added: plan.started.length, removed: plan.removed.length, kept: plan.kept.length },
      'config healthchecks reconciled',
    );
  }

  /**
   * Makes the checks of a discovery source exactly `desired` through the same reconciler as the config file and
   * the bulk API; `persist` (the source's last good payload) is written before anything changes.
   */
  applySource(source: string, desired: readonly KeyedCheck[], persist: () => void): Promise<ReconcilePlan> {
    return this.reconciler.apply(source, desired, persist);
  }

  /**
   * A job's report to a heartbeat check (`/api/v1/heartbeat/<name>`): recorded as a result now, and committed
   * before this returns, so that a restart counts the silence from it.
   */
  reportHeartbeat(name: string, success: boolean, message: string): void {
    const check = this.checks.get(name);
    if (check === undefined || !(check.prepared instanceof HeartbeatMonitor)) {
      throw new HealthcheckError(
        'not-found',
        check === undefined
          ? `Heartbeat check ${name} not found`
          : `Healthcheck ${name} is a ${check.def.kind} check, not a heartbeat check`,
      );
    }
    this.checks.reportPushed(check, success, message);
  }

  /** The SHA-256 of a heartbeat check's own token (src/server/credentials.ts `ownTokenRoute`). */
  heartbeatTokenSha256(name: string): string | undefined {
    const def = this.checks.get(name)?.def;
    return def?.kind === 'heartbeat' ? def.tokenSha256 : undefined;
  }
}

/** Without the process's runtime state (in-process tests), what its store cannot read is logged. */
function stateReports(logger: Logger): MirrorReports {
  return {
    skipped: (skip) => logger.warn(skip, `runtime state ${skip.kind} ${skip.key} skipped: ${skip.reason}`),
    listenerFailed: (kind, error) => logger.error({ err: error, kind }, 'a listener of runtime state failed'),
  };
}
