/**
 * The healthcheck API's verbs over the registry and the repository: create / replace by name, bulk, one-off,
 * delete, and the reads; plus the config file's checks at startup and on reload, applied through the same
 * reconciler as the bulk API (and the coming discovery sources).
 *
 * Ownership of names follows upstream: an API create with the name of a config check takes it over, and the
 * config file takes its names back at the next start or reload. Mutations run one at a time (the registry's
 * `exclusive`), so two requests on one name never interleave between preparing a check and swapping it in.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ConfigError } from '../common/config-error.ts';
import { durationToMs } from '../common/duration.ts';
import type { Db } from '../db/client.ts';
import { type CheckDefinition, CheckFailure, type CheckJson, checkSummary, checkToJson, type KeyedCheck, type LabelLimits, type Prepared, parseCheck } from './kinds/index.ts';
import { HealthcheckMetrics, pendingResultMetrics } from './metrics.ts';
import { CheckPrepareError, type ReconcilePlan, Reconciler, runsAlready } from './reconciler.ts';
import { CheckRegistry, type ResultSink } from './registry.ts';
import {
  type CheckResult,
  type DurationBucket,
  HealthcheckRepository,
  type HistoryEntry,
  type SeriesWindow,
  type StoredCheck,
  type UptimeRatios,
  type UptimeWindow,
  type UptimeWindowName,
} from './repository.ts';
import { HeartbeatReports } from './heartbeat-reports.ts';
import { HeartbeatMonitor } from './kinds/heartbeat.ts';
import { MaintenanceCalendar } from './maintenance.ts';
import { buildResult } from './result.ts';
import type { CheckOwner } from './registry.ts';
import { admitCreate, admitStoredCheck, type AdmissionRules, API_SOURCE, CONFIG_SOURCE, HealthcheckError, notFound, ownedElsewhere, parseBulk, startFailed } from './api-input.ts';
import type { HealthcheckConfig } from './settings.ts';

export { API_SOURCE, CONFIG_SOURCE, HealthcheckError, type HealthcheckErrorReason, parseBulk, unknownKind } from './api-input.ts';

/** One row of the dashboard's check list, lean: 12,000 of them make one answer. */
export interface CheckOverview {
  name: string;
  kind: string;
  source: string;
  description?: string;
  labels?: Record<string, string>;
  /** The latest run: when (unix seconds), how long (ms), and the message of a failure. */
  result: { success: boolean; timestamp: number; duration: number; message?: string; maintenance?: true; node?: string } | null;
  uptime: UptimeRatios;
}

const UPTIME_CACHE_MS = 5000;

export interface OneOffOutcome {
  success: boolean;
  message: string;
  result: CheckResult;
}

export type CreateOutcome = { oneOff: false } | ({ oneOff: true } & OneOffOutcome);

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
  /** Handed every periodic result (the exporters). */
  onResult?: readonly ResultSink[];
  /** Checks of other sources to run from the start (the last good payload of each discovery source). */
  restoredSources?: readonly RestoredSource[];
  /** The maintenance windows that mark results; none unless given. */
  maintenance?: MaintenanceCalendar;
  /** In a cluster (docs/cluster.md): which checks this node runs, its name on results, and the replicated store of
   *  API definitions that every API change goes through first. */
  owner?: CheckOwner;
  node?: string;
  replica?: ApiCheckReplica;
  /** Null when the API may create command checks, else why not (src/healthcheck/command-policy.ts); read at each
   *  change, so that a reload applies. Never refused unless given. */
  commandChecksRefusal?: () => string | null;
}

/** One entry of the cluster's store of API checks: its name (the key's) and what it holds, unchecked. */
export interface ReplicatedCheck {
  name: string;
  kind: string;
  definition: unknown;
}

/** The cluster's store of API definitions: written before the local change, so that every node gets it. */
export interface ApiCheckReplica {
  put(def: CheckDefinition): Promise<void>;
  delete(name: string): Promise<void>;
  /** A bulk: the API checks become exactly `desired` (whatever this node has not heard of yet included). */
  replace(desired: readonly CheckDefinition[]): Promise<void>;
}

export interface RestoredSource {
  source: string;
  checks: readonly KeyedCheck[];
}

export class HealthcheckService {
  private readonly checks: CheckRegistry;
  private readonly reconciler: Reconciler;
  private readonly repository: HealthcheckRepository;
  private readonly logger: Logger;
  private config: HealthcheckConfig;
  private uptimeCache: { at: number; ratios: Map<string, UptimeRatios> } | null = null;
  private readonly restoredSources: readonly RestoredSource[];
  private readonly maintenance: MaintenanceCalendar;
  private readonly replica: ApiCheckReplica | undefined;
  private readonly commandChecksRefusal: () => string | null;

  private constructor(options: ServiceOptions) {
    this.config = options.config;
    this.logger = options.logger;
    const settings = options.config.healthchecks;
    const folded = pendingResultMetrics(options.registry, () => this.repository.results.pending.size);
    this.repository = new HealthcheckRepository(options.db, {
      historySize: settings.historySize,
      writeDelayS: settings.writeDelayS,
      maxPendingResults: settings.maxPendingResults,
      onFolded: folded,
      onFlushError: (error) => this.logger.error({ err: error }, `cannot write healthcheck results: ${(error as Error).message}`),
    });
    this.maintenance = options.maintenance ?? new MaintenanceCalendar();
    const maintenance = this.maintenance;
    this.checks = new CheckRegistry({
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
      ...(options.owner ? { owner: options.owner } : {}),
      ...(options.node !== undefined ? { node: options.node } : {}),
    });
    this.replica = options.replica;
    this.commandChecksRefusal = options.commandChecksRefusal ?? (() => null);
    this.restoredSources = options.restoredSources ?? [];
    this.reconciler = new Reconciler(this.checks);
  }

  /**
   * Loads the stored API checks and the latest results, and prepares the config checks (a config check that
   * cannot be prepared fails the startup, naming its key). Nothing runs before `start`.
   */
  static async create(options: ServiceOptions): Promise<HealthcheckService> {
    const service = new HealthcheckService(options);
    await service.load();
    return service;
  }

  /** The registry, for in-process tests of what runs. */
  get registry(): CheckRegistry {
    return this.checks;
  }

  private async load(): Promise<void> {
    const configNames = new Set(this.config.healthchecks.checks.map(({ def }) => def.name));
    const taken: string[] = [];
    for (const stored of this.repository.listApiChecks()) {
      if (configNames.has(stored.name)) {
        taken.push(stored.name);
        continue;
      }
      let def: CheckDefinition;
      try {
        def = parseCheck(stored.kind, stored.definition, this.labelLimits);
      } catch (error) {
        // Kept in the database untouched: a later version may read it again.
        this.logger.error({ err: error, name: stored.name }, `stored healthcheck ${stored.name} is not valid any more: ${(error as Error).message}`);
        continue;
      }
      this.checks.register(this.checks.create(def, API_SOURCE, await this.prepareStored(def)));
    }
    this.repository.deleteDefinitions(taken);
    await this.applyConfigChecks(this.config);
    for (const { source, checks } of this.restoredSources) {
      try {
        await this.reconciler.apply(source, checks);
      } catch (error) {
        this.logger.error({ err: error, source }, `the saved checks of ${source} cannot start: ${(error as Error).message}`);
      }
    }
    const gone = this.repository.retainOnly(this.checks.names());
    if (gone.length > 0) this.logger.info({ checks: gone.length }, 'forgot the stored results of checks that no longer exist');
    this.checks.restoreResults(this.repository.loadResults());
  }

  /** A stored check whose resources cannot be built (a certificate file vanished) still runs, and fails saying why. */
  private async prepareStored(def: CheckDefinition): Promise<Prepared> {
    try {
      return await this.checks.prepare(def);
    } catch (error) {
      const failure = new CheckFailure(`Fail to initialize healthcheck ${def.name}: ${(error as Error).message}`);
      this.logger.error({ name: def.name }, failure.message);
      return { run: () => Promise.reject(failure), close: () => Promise.resolve() };
    }
  }

  start(): void {
    this.checks.start();
    this.repository.start();
  }

  /** Lets the runs in flight finish (their results recorded), writes every buffered result, releases resources. */
  async stop(): Promise<void> {
    await this.checks.exclusive(async () => {
      await this.checks.stop();
      this.repository.stop();
    });
  }

  // Reads

  list(): CheckJson[] {
    return [...this.checks.all()].sort((a, b) => compareNames(a.def.name, b.def.name)).map((check) => checkToJson(check.def, check.source));
  }

  get(name: string): CheckJson {
    const check = this.checks.get(name);
    if (!check) throw notFound(name);
    return checkToJson(check.def, check.source);
  }

  results(): CheckResult[] {
    return [...this.checks.latestResults()].sort((a, b) => compareNames(a.name, b.name));
  }

  result(name: string): CheckResult {
    const result = this.checks.latestResult(name);
    if (!result) throw new HealthcheckError('result-not-found', `Result not found for healthcheck ${name}`);
    return result;
  }

  history(name: string, limit: number): HistoryEntry[] {
    if (!this.checks.get(name)) throw notFound(name);
    return this.repository.history(name, limit);
  }

  uptime(name: string): Record<UptimeWindowName, UptimeWindow> {
    if (!this.checks.get(name)) throw notFound(name);
    return this.repository.uptime(name);
  }

  // Dashboard reads: a few queries for every check, never one per check.

  /** Every check with its latest result and uptime ratios, sorted by name. */
  overview(): CheckOverview[] {
    const uptime = this.uptimeRatios();
    const none: UptimeRatios = { '24h': null, '7d': null, '30d': null };
    const rows: CheckOverview[] = [];
    // Plain property writes, no spreads: this runs for every check on every poll of every open dashboard.
    for (const { def, source } of this.checks.all()) {
      const row: CheckOverview = { name: def.name, kind: def.kind, source, result: null, uptime: uptime.get(def.name) ?? none };
      if (def.description !== '') row.description = def.description;
      for (const _label in def.labels) {
        row.labels = def.labels;
        break;
      }
      const latest = this.checks.latestResult(def.name);
      if (latest !== undefined) {
        row.result = { success: latest.success, timestamp: latest['healthcheck-timestamp'], duration: latest.duration };
        if (!latest.success) row.result.message = latest.message;
        if (latest.maintenance) row.result.maintenance = true;
        if (latest.node !== undefined) row.result.node = latest.node;
      }
      rows.push(row);
    }
    return rows.sort((a, b) => compareNames(a.name, b.name));
  }

  /**
   * The uptime ratios of every check, recomputed at most every UPTIME_CACHE_MS: they move slowly, and every open
   * dashboard polls them. They count the results still waiting to be written.
   */
  private uptimeRatios(): Map<string, UptimeRatios> {
    const now = Date.now();
    if (this.uptimeCache === null || now - this.uptimeCache.at >= UPTIME_CACHE_MS) this.uptimeCache = { at: now, ratios: this.repository.uptimeOfAll() };
    return this.uptimeCache.ratios;
  }

  /** The newest `limit` raw results of each named check (unknown names are skipped), oldest first. */
  recentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    return this.repository.recentResults(
      names.filter((name) => this.checks.get(name) !== undefined),
      limit,
    );
  }

  durationSeries(name: string, window: SeriesWindow): DurationBucket[] {
    if (!this.checks.get(name)) throw notFound(name);
    return this.repository.durationSeries(name, window);
  }

  get historySize(): number {
    return this.config.healthchecks.historySize;
  }

  /** The label caps every definition is validated with (they follow reloads). */
  get labelLimits(): LabelLimits {
    return this.config.healthchecks.labelLimits;
  }

  /** What every API change is admitted under (src/healthcheck/api-input.ts `admitCreate`, `admitStoredCheck`). */
  private admissionRules(): AdmissionRules {
    return { labelLimits: this.labelLimits, commandRefusal: this.commandChecksRefusal() };
  }

  // Mutations

  /**
   * Creates or replaces an API check of `kind` (same definition: nothing restarts), or runs it at once when it
   * is one-off. The definition is committed to SQLite before this resolves.
   */
  async create(kind: string, raw: unknown): Promise<CreateOutcome> {
    const def = admitCreate(kind, raw, this.admissionRules());
    if (def.oneOff) return { oneOff: true, ...(await this.runOneOff(def)) };
    await this.checks.exclusive(async () => {
      const existing = this.checks.get(def.name);
      if (existing !== undefined && existing.source !== API_SOURCE) throw ownedElsewhere(existing.def.name, existing.source);
      if (runsAlready(existing, API_SOURCE, def)) return;
      const check = this.checks.create(def, API_SOURCE, await this.prepareForApi(def));
      try {
        await this.replica?.put(def);
        this.repository.saveCheck(storedForm(def));
      } catch (error) {
        void check.prepared.close();
        throw error;
      }
      this.checks.swap(existing, check);
    });
    return { oneOff: false };
  }

  /**
   * Makes the set of API checks exactly the payload's, atomically: everything is validated and prepared first,
   * then one transaction writes it; checks of the config file are left alone, and a payload naming one of them (or
   * a discovered check) is refused whole.
   */
  async bulk(body: unknown): Promise<void> {
    const desired = parseBulk(body, this.labelLimits, this.commandChecksRefusal());
    try {
      await this.reconciler.apply(API_SOURCE, desired, async (plan) => {
        // Checked here, under the registry's lock, so that a reload cannot slip a config name in meanwhile.
        const owned = plan.replaced.find((check) => check.source !== API_SOURCE);
        if (owned !== undefined) throw ownedElsewhere(owned.def.name, owned.source);
        await this.replica?.replace(desired.map(({ def }) => def));
        this.repository.replaceChecks(
          plan.started.map((check) => storedForm(check.def)),
          plan.removed.map((check) => check.def.name),
        );
      });
    } catch (error) {
      if (error instanceof CheckPrepareError) throw startFailed(error.check.def.name, error.message);
      throw error;
    }
  }

  /** Removes an API check, with its latest result, history, aggregates and metric series. */
  async delete(name: string): Promise<void> {
    await this.checks.exclusive(async () => {
      const check = this.checks.get(name);
      if (!check) throw notFound(name);
      if (check.source !== API_SOURCE) throw ownedElsewhere(name, check.source);
      await this.replica?.delete(name);
      this.repository.forgetChecks([name]);
      this.checks.unregister(check);
    });
  }

  /**
   * The cluster's API definitions changed (docs/cluster.md): the API checks become exactly `desired`, as a bulk
   * would make them, without writing to the cluster again. Whoever can write to NATS wrote them, so each goes through
   * what the API admits (`admitStoredCheck`: validation, label caps, `healthchecks.command-checks-api`) and must
   * carry the name of its key; what fails is handed to `refused` and neither runs nor is listed here. Names this node
   * holds from its config file (or a discovery source) are skipped, logged: that check stays the file's here.
   */
  async applyReplicated(desired: readonly ReplicatedCheck[], refused: (name: string, refusal: HealthcheckError) => void): Promise<ReconcilePlan> {
    const rules = this.admissionRules();
    const keyed: KeyedCheck[] = [];
    for (const { name, kind, definition } of desired) {
      const where = `replicated check ${JSON.stringify(name)}: `;
      let def: CheckDefinition;
      try {
        def = admitStoredCheck(kind, definition, rules, where);
        if (def.name !== name) throw new HealthcheckError('invalid', `Invalid healthcheck configuration: ${where}name: the definition is named ${JSON.stringify(def.name)}`);
      } catch (error) {
        refused(name, error instanceof HealthcheckError ? error : new HealthcheckError('invalid', `Invalid healthcheck configuration: ${where}${(error as Error).message}`));
        continue;
      }
      const existing = this.checks.get(def.name);
      if (existing !== undefined && existing.source !== API_SOURCE) {
        this.logger.warn({ name: def.name, source: existing.source }, `replicated API check ${def.name} is ignored here: this node has it from ${existing.source}`);
        continue;
      }
      keyed.push({ key: `replicated ${def.name}`, def });
    }
    return this.reconciler.apply(API_SOURCE, keyed, (plan) =>
      this.repository.replaceChecks(
        plan.started.map((check) => storedForm(check.def)),
        plan.removed.map((check) => check.def.name),
      ),
    );
  }

  /** The API checks' definitions as the cluster store keeps them (to seed an empty store). */
  apiDefinitions(): CheckDefinition[] {
    return [...this.checks.all()].filter((check) => check.source === API_SOURCE).map((check) => check.def);
  }

  /** Reconciles the config-file checks with a reloaded config: unchanged keep running, changed restart, removed stop. */
  async reload(config: HealthcheckConfig): Promise<void> {
    const previous = this.config.healthchecks;
    const next = config.healthchecks;
    if (
      previous.labels.join() !== next.labels.join() ||
      previous.historySize !== next.historySize ||
      previous.writeDelayS !== next.writeDelayS ||
      previous.maxPendingResults !== next.maxPendingResults
    ) {
      this.logger.warn('changes to healthchecks-labels, healthchecks.history-size, healthchecks.write-delay and healthchecks.max-pending-results take effect at the next restart');
    }
    this.checks.maxConcurrentRuns = next.maxConcurrentRuns;
    this.checks.startTickMs = next.startTickMs;
    const plan = await this.applyConfigChecks(config);
    this.config = config;
    this.logger.info({ added: plan.started.length, removed: plan.removed.length, kept: plan.kept.length }, 'config healthchecks reconciled');
  }

  /**
   * Makes the checks of a discovery source exactly `desired` through the same reconciler as the config file and
   * the bulk API; `persist` (the source's last good payload) is written before anything changes.
   */
  applySource(source: string, desired: readonly KeyedCheck[], persist: () => void): Promise<ReconcilePlan> {
    return this.reconciler.apply(source, desired, persist);
  }

  /** The config file takes its names back from the API (their stored definitions go, their results stay). */
  private async applyConfigChecks(config: HealthcheckConfig): Promise<ReconcilePlan> {
    try {
      return await this.reconciler.apply(CONFIG_SOURCE, config.healthchecks.checks, (plan) => {
        this.repository.deleteDefinitions(plan.replaced.filter((check) => check.source === API_SOURCE).map((check) => check.def.name));
        this.repository.forgetChecks(plan.removed.map((check) => check.def.name));
      });
    } catch (error) {
      if (error instanceof CheckPrepareError) throw new ConfigError(config.file, error.check.key, error.message);
      throw error;
    }
  }

  /**
   * A job's report to a heartbeat check (`/api/v1/heartbeat/<name>`): recorded as a result now, and committed
   * before this returns, so that a restart counts the silence from it.
   */
  reportHeartbeat(name: string, success: boolean, message: string): void {
    const check = this.checks.get(name);
    if (check === undefined || !(check.prepared instanceof HeartbeatMonitor)) {
      throw new HealthcheckError('not-found', check === undefined ? `Heartbeat check ${name} not found` : `Healthcheck ${name} is a ${check.def.kind} check, not a heartbeat check`);
    }
    this.checks.reportPushed(check, success, message);
  }

  // Runs

  /** Runs a check once, now, bounded by its timeout; nothing is registered, stored or counted. */
  private async runOneOff(def: CheckDefinition): Promise<OneOffOutcome> {
    let prepared: Prepared;
    try {
      prepared = await this.checks.prepare(def);
    } catch (error) {
      throw new HealthcheckError('start-failed', `Fail to initialize one off healthcheck ${def.name}: ${(error as Error).message}`);
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
    const result = buildResult(def.name, checkSummary(def), labels, API_SOURCE, failure, performance.now() - startedAt, this.maintenance.inMaintenance(def.name, def.labels));
    return failure === undefined
      ? { success: true, message: `One-off healthcheck ${def.name} successfully executed`, result }
      : { success: false, message: `Execution of one off healthcheck ${def.name} failed: ${result.message}`, result };
  }

  private async prepareForApi(def: CheckDefinition): Promise<Prepared> {
    try {
      return await this.checks.prepare(def);
    } catch (error) {
      throw startFailed(def.name, `Fail to initialize healthcheck ${def.name}: ${(error as Error).message}`);
    }
  }
}

/** Byte-wise order, as upstream's Go sort. */
function compareNames(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

function storedForm(def: CheckDefinition): StoredCheck {
  return { name: def.name, kind: def.kind, definition: checkToJson(def, API_SOURCE) };
}
