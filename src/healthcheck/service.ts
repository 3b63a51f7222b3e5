/**
 * The healthcheck service, the only place that mutates checks: create / replace by name, bulk, one-off,
 * delete, and the reconciliation of config-file checks on start and on reload. It owns the running checks
 * (definition + prepared resources + scheduler handle), the latest result of each, and wires the scheduler's
 * run outcomes to the metrics and the repository.
 *
 * Ownership of names follows upstream: an API create with the name of a config check takes it over, and the
 * config file takes its names back at the next start or reload. Mutations run one at a time (a promise chain),
 * so two requests on one name never interleave between preparing a check and swapping it in.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { CHECK_KEYS, type CheckKey, ConfigError, type VigieConfig } from '../config/load.ts';
import type { Db } from '../db/client.ts';
import {
  type CheckDefinition,
  CheckFailure,
  CheckValidationError,
  checkSummary,
  checkToJson,
  isKindName,
  type KindName,
  type Prepared,
  parseCheck,
  prepareCheck,
} from './kinds/index.ts';
import { type CheckMetricLabels, HealthcheckMetrics } from './metrics.ts';
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
import { type ScheduledJob, Scheduler, type SchedulerJob } from './scheduler.ts';

export const API_SOURCE = 'api';
export const CONFIG_SOURCE = 'configuration';

/** One row of the dashboard's check list, lean: 12,000 of them make one answer. */
export interface CheckOverview {
  name: string;
  kind: string;
  source: string;
  description?: string;
  labels?: Record<string, string>;
  /** The latest run: when (unix seconds), how long (ms), and the message of a failure. */
  result: { success: boolean; timestamp: number; duration: number; message?: string } | null;
  uptime: UptimeRatios;
}

const UPTIME_CACHE_MS = 5000;

export type HealthcheckErrorReason = 'invalid' | 'unknown-kind' | 'not-found' | 'result-not-found' | 'start-failed';

/** A refused operation; the routes turn `reason` into a status. `message` is the text the client sees. */
export class HealthcheckError extends Error {
  constructor(
    readonly reason: HealthcheckErrorReason,
    message: string,
  ) {
    super(message);
  }
}

export interface OneOffOutcome {
  success: boolean;
  message: string;
  result: CheckResult;
}

export type CreateOutcome = { oneOff: false } | ({ oneOff: true } & OneOffOutcome);

/** A check that is registered: what the scheduler runs and what the listings show. */
class RunningCheck implements SchedulerJob {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly summary: string;
  readonly labels: Record<string, string> | undefined;
  handle: ScheduledJob<RunningCheck> | null = null;
  /** Outcome of the previous run, to log only the transitions between success and failure. */
  lastSuccess: boolean | undefined;

  constructor(
    readonly def: CheckDefinition,
    readonly source: string,
    readonly prepared: Prepared,
    readonly metricLabels: CheckMetricLabels,
  ) {
    this.intervalMs = def.intervalNs / 1e6;
    this.timeoutMs = Math.max(1, Math.ceil(def.timeoutNs / 1e6));
    this.summary = checkSummary(def);
    this.labels = Object.keys(def.labels).length > 0 ? def.labels : undefined;
  }

  run(signal: AbortSignal): Promise<void> {
    return this.prepared.run(signal);
  }
}

export interface ServiceOptions {
  config: VigieConfig;
  db: Db;
  registry: Registry;
  logger: Logger;
  /** Scheduler clock (ms), for tests. */
  now?: () => number;
}

export class HealthcheckService {
  private readonly checks = new Map<string, RunningCheck>();
  private readonly latest = new Map<string, CheckResult>();
  private readonly repository: HealthcheckRepository;
  private readonly scheduler: Scheduler<RunningCheck>;
  private readonly metrics: HealthcheckMetrics;
  private readonly logger: Logger;
  private mutations: Promise<unknown> = Promise.resolve();
  private started = false;
  private config: VigieConfig;
  private uptimeCache: { at: number; ratios: Map<string, UptimeRatios> } | null = null;

  private constructor(options: ServiceOptions) {
    this.config = options.config;
    this.logger = options.logger;
    const settings = options.config.healthchecks;
    this.repository = new HealthcheckRepository(options.db, {
      historySize: settings.historySize,
      onFlushError: (error) => this.logger.error({ err: error }, `cannot write healthcheck results: ${(error as Error).message}`),
    });
    this.metrics = new HealthcheckMetrics(options.registry, settings.labels);
    this.scheduler = new Scheduler<RunningCheck>({
      maxConcurrentRuns: settings.maxConcurrentRuns,
      onRunFinished: (check, failure, durationMs) => this.recordRun(check, failure, durationMs),
      onRunStarted: (lagMs) => this.metrics.observeLag(lagMs / 1000),
      ...(options.now ? { now: options.now } : {}),
    });
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

  private async load(): Promise<void> {
    const configDefs = parseConfigChecks(this.config);
    const configNames = new Set(configDefs.map(({ def }) => def.name));
    const taken: string[] = [];
    for (const stored of this.repository.listApiChecks()) {
      if (configNames.has(stored.name)) {
        taken.push(stored.name);
        continue;
      }
      let def: CheckDefinition;
      try {
        def = parseCheck(stored.kind, stored.definition);
      } catch (error) {
        // Kept in the database untouched: a later version may read it again.
        this.logger.error({ err: error, name: stored.name }, `stored healthcheck ${stored.name} is not valid any more: ${(error as Error).message}`);
        continue;
      }
      this.register(new RunningCheck(def, API_SOURCE, await this.prepareStored(def), this.metricLabels(def)));
    }
    this.repository.deleteDefinitions(taken);
    for (const check of await this.prepareConfigChecks(configDefs)) this.register(check);
    const gone = this.repository.retainOnly(new Set(this.checks.keys()));
    if (gone.length > 0) this.logger.info({ checks: gone.length }, 'forgot the stored results of checks that no longer exist');
    for (const result of this.repository.loadResults()) this.latest.set(result.name, result);
  }

  /** A stored check whose resources cannot be built (a certificate file vanished) still runs, and fails saying why. */
  private async prepareStored(def: CheckDefinition): Promise<Prepared> {
    try {
      return await prepareCheck(def);
    } catch (error) {
      const failure = new CheckFailure(`Fail to initialize healthcheck ${def.name}: ${(error as Error).message}`);
      this.logger.error({ name: def.name }, failure.message);
      return { run: () => Promise.reject(failure), close: () => Promise.resolve() };
    }
  }

  start(): void {
    this.started = true;
    for (const check of this.checks.values()) check.handle ??= this.scheduler.add(check);
    this.scheduler.start();
    this.repository.start();
  }

  /** Lets the runs in flight finish (their results recorded), writes every buffered result, releases resources. */
  async stop(): Promise<void> {
    await this.exclusive(async () => {
      await this.scheduler.stop();
      this.repository.stop();
      await Promise.allSettled([...this.checks.values()].map((check) => check.prepared.close()));
    });
  }

  // Reads

  list(): Record<string, unknown>[] {
    return [...this.checks.values()].sort((a, b) => compareNames(a.def.name, b.def.name)).map((check) => checkToJson(check.def, check.source));
  }

  get(name: string): Record<string, unknown> {
    const check = this.checks.get(name);
    if (!check) throw notFound(name);
    return checkToJson(check.def, check.source);
  }

  results(): CheckResult[] {
    return [...this.latest.values()].sort((a, b) => compareNames(a.name, b.name));
  }

  result(name: string): CheckResult {
    const result = this.latest.get(name);
    if (!result) throw new HealthcheckError('result-not-found', `Result not found for healthcheck ${name}`);
    return result;
  }

  history(name: string, limit: number): HistoryEntry[] {
    if (!this.checks.has(name)) throw notFound(name);
    this.repository.flush();
    return this.repository.history(name, limit);
  }

  uptime(name: string): Record<UptimeWindowName, UptimeWindow> {
    if (!this.checks.has(name)) throw notFound(name);
    this.repository.flush();
    return this.repository.uptime(name);
  }

  // Dashboard reads: a few queries for every check, never one per check.

  /** Every check with its latest result and uptime ratios, sorted by name. */
  overview(): CheckOverview[] {
    const uptime = this.uptimeRatios();
    const none: UptimeRatios = { '24h': null, '7d': null, '30d': null };
    const rows: CheckOverview[] = [];
    // Plain property writes, no spreads: this runs for every check on every poll of every open dashboard.
    for (const { def, source } of this.checks.values()) {
      const row: CheckOverview = { name: def.name, kind: def.kind, source, result: null, uptime: uptime.get(def.name) ?? none };
      if (def.description !== '') row.description = def.description;
      for (const _label in def.labels) {
        row.labels = def.labels;
        break;
      }
      const latest = this.latest.get(def.name);
      if (latest !== undefined) {
        row.result = { success: latest.success, timestamp: latest['healthcheck-timestamp'], duration: latest.duration };
        if (!latest.success) row.result.message = latest.message;
      }
      rows.push(row);
    }
    return rows.sort((a, b) => compareNames(a.name, b.name));
  }

  /**
   * The uptime ratios of every check, recomputed at most every UPTIME_CACHE_MS: they move slowly, and every open
   * dashboard polls them. Results still buffered (under a second old) are left for the next computation.
   */
  private uptimeRatios(): Map<string, UptimeRatios> {
    const now = Date.now();
    if (this.uptimeCache === null || now - this.uptimeCache.at >= UPTIME_CACHE_MS) this.uptimeCache = { at: now, ratios: this.repository.uptimeOfAll() };
    return this.uptimeCache.ratios;
  }

  /** The newest `limit` raw results of each named check (unknown names are skipped), oldest first. */
  recentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    this.repository.flush();
    return this.repository.recentResults(
      names.filter((name) => this.checks.has(name)),
      limit,
    );
  }

  durationSeries(name: string, window: SeriesWindow): DurationBucket[] {
    if (!this.checks.has(name)) throw notFound(name);
    this.repository.flush();
    return this.repository.durationSeries(name, window);
  }

  get historySize(): number {
    return this.config.healthchecks.historySize;
  }

  // Mutations

  /**
   * Creates or replaces an API check of `kind` (same definition: nothing restarts), or runs it at once when it
   * is one-off. The definition is committed to SQLite before this resolves.
   */
  async create(kind: string, raw: unknown): Promise<CreateOutcome> {
    if (!isKindName(kind)) {
      throw new HealthcheckError('unknown-kind', `Unknown healthcheck kind ${JSON.stringify(kind)}: expected http, tcp, dns, tls, command or bulk`);
    }
    const def = parseOrThrow(kind, raw, '');
    if (def.oneOff) return { oneOff: true, ...(await this.runOneOff(def)) };
    await this.exclusive(async () => {
      const existing = this.checks.get(def.name);
      if (existing?.source === API_SOURCE && sameValue(existing.def, def)) return;
      const check = new RunningCheck(def, API_SOURCE, await prepareOrThrow(def), this.metricLabels(def));
      try {
        this.repository.saveCheck(storedForm(def));
      } catch (error) {
        void check.prepared.close();
        throw error;
      }
      this.swap(existing, check);
    });
    return { oneOff: false };
  }

  /**
   * Makes the set of API checks exactly the payload's, atomically: everything is validated and prepared first,
   * then one transaction writes it; checks of the config file are left alone.
   */
  async bulk(body: unknown): Promise<void> {
    const defs = parseBulk(body);
    await this.exclusive(async () => {
      const names = new Set(defs.map((def) => def.name));
      const changed = defs.filter((def) => {
        const existing = this.checks.get(def.name);
        return !(existing?.source === API_SOURCE && sameValue(existing.def, def));
      });
      const prepared = await prepareAll(changed);
      const removed = [...this.checks.values()].filter((check) => check.source === API_SOURCE && !names.has(check.def.name));
      const removedNames = removed.map((check) => check.def.name);
      try {
        this.repository.replaceChecks(changed.map(storedForm), removedNames);
      } catch (error) {
        await Promise.allSettled(prepared.map((p) => p.close()));
        throw error;
      }
      for (const check of removed) this.unregister(check);
      changed.forEach((def, i) => {
        this.swap(this.checks.get(def.name), new RunningCheck(def, API_SOURCE, prepared[i] as Prepared, this.metricLabels(def)));
      });
    });
  }

  /** Removes a check of any source, with its latest result, history, aggregates and metric series. */
  async delete(name: string): Promise<void> {
    await this.exclusive(async () => {
      const check = this.checks.get(name);
      if (!check) throw notFound(name);
      this.repository.forgetChecks([name]);
      this.unregister(check);
    });
  }

  /** Reconciles the config-file checks with a reloaded config: unchanged keep running, changed restart, removed stop. */
  async reload(config: VigieConfig): Promise<void> {
    await this.exclusive(async () => {
      const previous = this.config.healthchecks;
      const next = config.healthchecks;
      if (previous.labels.join() !== next.labels.join() || previous.historySize !== next.historySize) {
        this.logger.warn('changes to healthchecks-labels and healthchecks.history-size take effect at the next restart');
      }
      this.scheduler.maxConcurrentRuns = next.maxConcurrentRuns;
      const parsed = parseConfigChecks(config);
      const incoming = await this.prepareConfigChecks(parsed.filter(({ def }) => !this.isRunningFromConfig(def)));
      const names = new Set(parsed.map(({ def }) => def.name));
      const removed = [...this.checks.values()].filter((check) => check.source === CONFIG_SOURCE && !names.has(check.def.name));
      const takenBack = incoming.filter((check) => this.checks.get(check.def.name)?.source === API_SOURCE).map((check) => check.def.name);
      this.repository.deleteDefinitions(takenBack);
      this.repository.forgetChecks(removed.map((check) => check.def.name));
      for (const check of removed) this.unregister(check);
      for (const check of incoming) this.swap(this.checks.get(check.def.name), check);
      this.config = config;
      this.logger.info({ added: incoming.length, removed: removed.length, kept: parsed.length - incoming.length }, 'config healthchecks reconciled');
    });
  }

  // Runs

  /** Runs a check once, now, bounded by its timeout; nothing is registered, stored or counted. */
  private async runOneOff(def: CheckDefinition): Promise<OneOffOutcome> {
    let prepared: Prepared;
    try {
      prepared = await prepareCheck(def);
    } catch (error) {
      throw new HealthcheckError('start-failed', `Fail to initialize one off healthcheck ${def.name}: ${(error as Error).message}`);
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), Math.max(1, Math.ceil(def.timeoutNs / 1e6)));
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
    const result = buildResult(def.name, checkSummary(def), Object.keys(def.labels).length > 0 ? def.labels : undefined, API_SOURCE, failure, performance.now() - startedAt);
    return failure === undefined
      ? { success: true, message: `One-off healthcheck ${def.name} successfully executed`, result }
      : { success: false, message: `Execution of one off healthcheck ${def.name} failed: ${result.message}`, result };
  }

  private recordRun(check: RunningCheck, failure: unknown, durationMs: number): void {
    const result = buildResult(check.def.name, check.summary, check.labels, check.source, failure, durationMs);
    this.latest.set(result.name, result);
    this.repository.record(result);
    this.metrics.observeRun(check.metricLabels, result.success, durationMs / 1000);
    if (result.success !== check.lastSuccess) {
      if (!result.success) this.logger.warn({ name: result.name, cause: result.message }, 'healthcheck failed');
      else if (check.lastSuccess === false) this.logger.info({ name: result.name }, 'healthcheck recovered');
    }
    check.lastSuccess = result.success;
  }

  // Registry of running checks

  private register(check: RunningCheck): void {
    this.checks.set(check.def.name, check);
    if (this.started) check.handle = this.scheduler.add(check);
  }

  /** Replaces `previous` (if any) by `next`: the old check never runs again and its metric series go. */
  private swap(previous: RunningCheck | undefined, next: RunningCheck): void {
    if (previous) this.retire(previous);
    this.register(next);
  }

  private unregister(check: RunningCheck): void {
    this.retire(check);
    this.checks.delete(check.def.name);
    this.latest.delete(check.def.name);
    this.repository.dropBuffered(new Set([check.def.name]));
  }

  private retire(check: RunningCheck): void {
    this.metrics.remove(check.metricLabels);
    const handle = check.handle;
    check.handle = null;
    const idle = handle ? this.scheduler.remove(handle) : Promise.resolve();
    // The API answers at once; the aborted run and the release of connections finish in the background.
    void idle
      .then(() => check.prepared.close())
      .catch((error: unknown) => this.logger.warn({ err: error, name: check.def.name }, 'releasing a removed healthcheck failed'));
  }

  private isRunningFromConfig(def: CheckDefinition): boolean {
    const existing = this.checks.get(def.name);
    return existing?.source === CONFIG_SOURCE && sameValue(existing.def, def);
  }

  private async prepareConfigChecks(defs: readonly { def: CheckDefinition; key: string }[]): Promise<RunningCheck[]> {
    const prepared = await Promise.allSettled(defs.map(({ def }) => prepareCheck(def)));
    const failed = prepared.findIndex((outcome) => outcome.status === 'rejected');
    if (failed >= 0) {
      await Promise.allSettled(prepared.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value.close() : undefined)));
      const { def, key } = defs[failed] as { def: CheckDefinition; key: string };
      const reason = (prepared[failed] as PromiseRejectedResult).reason as Error;
      throw new ConfigError(this.config.file, key, `Fail to initialize healthcheck ${def.name}: ${reason.message}`);
    }
    return defs.map(({ def }, i) => new RunningCheck(def, CONFIG_SOURCE, (prepared[i] as PromiseFulfilledResult<Prepared>).value, this.metricLabels(def)));
  }

  private metricLabels(def: CheckDefinition): CheckMetricLabels {
    return this.metrics.labelsFor(def.name, def.labels);
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.mutations.then(work);
    this.mutations = run.catch(() => undefined);
    return run;
  }
}

function buildResult(
  name: string,
  summary: string,
  labels: Record<string, string> | undefined,
  source: string,
  failure: unknown,
  durationMs: number,
): CheckResult {
  return {
    name,
    summary,
    ...(labels ? { labels } : {}),
    success: failure === undefined,
    'healthcheck-timestamp': Math.floor(Date.now() / 1000),
    message: failure === undefined ? 'success' : failureMessage(failure),
    duration: Math.max(0, Math.floor(durationMs)),
    source,
  };
}

function failureMessage(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

function notFound(name: string): HealthcheckError {
  return new HealthcheckError('not-found', `Healthcheck ${name} not found`);
}

/** Byte-wise order, as upstream's Go sort. */
function compareNames(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

function storedForm(def: CheckDefinition): StoredCheck {
  return { name: def.name, kind: def.kind, definition: checkToJson(def, API_SOURCE) };
}

function parseOrThrow(kind: KindName, raw: unknown, where: string): CheckDefinition {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new HealthcheckError('invalid', `Invalid healthcheck configuration: ${where}the definition must be a JSON object`);
  }
  try {
    return parseCheck(kind, raw);
  } catch (error) {
    if (error instanceof CheckValidationError) throw new HealthcheckError('invalid', `Invalid healthcheck configuration: ${where}${error.message}`);
    throw error;
  }
}

async function prepareOrThrow(def: CheckDefinition): Promise<Prepared> {
  try {
    return await prepareCheck(def);
  } catch (error) {
    throw new HealthcheckError('start-failed', `Fail to start the healthcheck ${def.name}: Fail to initialize healthcheck ${def.name}: ${(error as Error).message}`);
  }
}

async function prepareAll(defs: readonly CheckDefinition[]): Promise<Prepared[]> {
  const outcomes = await Promise.allSettled(defs.map((def) => prepareCheck(def)));
  const failed = outcomes.findIndex((outcome) => outcome.status === 'rejected');
  if (failed < 0) return outcomes.map((outcome) => (outcome as PromiseFulfilledResult<Prepared>).value);
  await Promise.allSettled(outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value.close() : undefined)));
  const name = (defs[failed] as CheckDefinition).name;
  const reason = (outcomes[failed] as PromiseRejectedResult).reason as Error;
  throw new HealthcheckError('start-failed', `Fail to start the healthcheck ${name}: Fail to initialize healthcheck ${name}: ${reason.message}`);
}

/** Validates a whole bulk payload; the first problem names the list, the position, the check and the field. */
function parseBulk(body: unknown): CheckDefinition[] {
  const invalid = (text: string) => new HealthcheckError('invalid', `Invalid healthcheck configuration: ${text}`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid(`the body must be an object with the lists ${CHECK_KEYS.join(', ')}`);
  }
  for (const key of Object.keys(body)) {
    if (!(CHECK_KEYS as readonly string[]).includes(key)) throw invalid(`unknown key ${JSON.stringify(key)} (expected ${CHECK_KEYS.join(', ')})`);
  }
  const defs: CheckDefinition[] = [];
  const seen = new Map<string, string>();
  for (const key of CHECK_KEYS) {
    const list = (body as Partial<Record<CheckKey, unknown>>)[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) throw invalid(`${key}: must be a list`);
    list.forEach((raw: unknown, i) => {
      const at = `${key}[${i}]`;
      const name = (raw as { name?: unknown } | null)?.name;
      const which = typeof name === 'string' ? `check ${JSON.stringify(name)} (${at})` : at;
      const def = parseOrThrow(kindOfKey(key), raw, `${which}: `);
      if (def.oneOff) throw invalid(`${which}: one-off: one-off healthchecks are not supported in bulk requests`);
      const first = seen.get(def.name);
      if (first !== undefined) throw invalid(`${which}: name: duplicate name ${JSON.stringify(def.name)} (also ${first})`);
      seen.set(def.name, at);
      defs.push(def);
    });
  }
  return defs;
}

/** The config file's checks, parsed; config/load.ts has already validated them. */
function parseConfigChecks(config: VigieConfig): { def: CheckDefinition; key: string }[] {
  return CHECK_KEYS.flatMap((key) => config.healthchecks.checks[key].map((raw, i) => ({ def: parseCheck(kindOfKey(key), raw), key: `${key}[${i}]` })));
}

function kindOfKey(key: CheckKey): KindName {
  return key.slice(0, -'-checks'.length) as KindName;
}

/** Structural equality of two normalised definitions (plain data: objects, arrays, primitives). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (const key of keysA) {
    if (!Object.hasOwn(b, key) || !sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}
