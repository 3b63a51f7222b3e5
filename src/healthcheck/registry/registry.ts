/**
 * The running checks by name, each with its source (`api`, `configuration`, a discovery), its prepared resources,
 * its scheduler handle and its metric series, plus the latest result of each. The only place that mutates them:
 * `register`, `swap` and `unregister` keep the map, the scheduler, the metric series and the buffered results in
 * step. Callers mutate inside `exclusive`, so that two mutations never interleave between preparing a check and
 * swapping it in. Where each result goes, this node's runs and the other nodes' alike, is result-dispatch.ts's.
 */
import type { Logger } from 'pino';
import { type CheckDefinition, CheckFailure, type Prepared, prepareCheck } from '../kinds/index.ts';
import { isSilence } from '../kinds/heartbeat/kind.ts';
import type { PushReports } from '../kinds/types.ts';
import type { HealthcheckMetrics } from '../metrics.ts';
import type { HealthcheckRepository } from '../results/repository.ts';
import type { StoredState } from '../states/stored-state.ts';
import type { CheckResult } from '../result-types.ts';
import { ResultDispatch, type ResultSink } from './result-dispatch.ts';
import { shareCheckStrings } from '../results/result.ts';
import { RunningCheck } from '../scheduling/running-check.ts';
import { Scheduler } from '../scheduling/scheduler.ts';
import type { CheckStates, Transition } from '../states/check-states.ts';
import type { CheckOwner } from '../cluster-port.ts';

export interface RegistryOptions {
  maxConcurrentRuns: number;
  /** The scheduler's start tick in ms, or `auto` (docs/configuration.md, `healthchecks.start-tick`). */
  startTickMs?: number | 'auto';
  metrics: HealthcheckMetrics;
  /** Where run results are buffered (and dropped again when their check goes). */
  repository: HealthcheckRepository;
  logger: Logger;
  /** Builds a check's resources; the kinds' `prepareCheck` unless a test counts runs. */
  prepare?: (def: CheckDefinition) => Promise<Prepared>;
  /** Scheduler clock (ms) and random source of the first-run spread, for tests. */
  now?: () => number;
  random?: () => number;
  /** Handed every result this node exports (the exporters' queues): each must return at once and never throw. */
  onResult?: readonly ResultSink[];
  /** Handed every result this node ran (in a cluster, to publish it to the others): returns at once, never throws. */
  publish?: ResultSink;
  /**
   * Whether a result of this check finishing now falls in a maintenance window
   * (src/healthcheck/maintenance/maintenance.ts).
   */
  inMaintenance?: (name: string, labels: Readonly<Record<string, string>>) => boolean;
  /** Where pushed checks (heartbeats) keep their last report. */
  pushReports?: PushReports;
  /** Which checks this node runs: all of them on a single node; its share in a cluster (docs/cluster.md). */
  owner?: CheckOwner;
  /** Set in a cluster: the node name every result of this node carries. */
  node?: string;
  /** Each check's state (src/healthcheck/states/), fed every result kept; a paused check does not run. */
  states: CheckStates;
}

/** A single node runs every check, and is the one location of those with locations. */
const ALWAYS_ME: CheckOwner = { owns: () => true, chosen: () => [] };

/** Without a store (in-process tests), pushed checks count their silence from the start. */
const NO_REPORTS: PushReports = { last: () => undefined, save: () => undefined };

export class CheckRegistry {
  readonly prepare: (def: CheckDefinition) => Promise<Prepared>;
  private readonly checks = new Map<string, RunningCheck>();
  /** Where the results go: latest, store, state, metrics, exporters. */
  private readonly results: ResultDispatch;
  private readonly scheduler: Scheduler<RunningCheck>;
  private readonly metrics: HealthcheckMetrics;
  private readonly repository: HealthcheckRepository;
  private readonly logger: Logger;
  private readonly pushReports: PushReports;
  private readonly owner: CheckOwner;
  private readonly states: CheckStates;
  private mutations: Promise<unknown> = Promise.resolve();
  private started = false;

  constructor(options: RegistryOptions) {
    this.metrics = options.metrics;
    this.repository = options.repository;
    this.logger = options.logger;
    this.prepare = options.prepare ?? prepareCheck;
    this.pushReports = options.pushReports ?? NO_REPORTS;
    this.owner = options.owner ?? ALWAYS_ME;
    this.states = options.states;
    // A pause stops the check's runs here, a resume starts them again (src/healthcheck/states/pauses.ts).
    this.states.onTransition((check, transition) => this.pauseChanged(check as RunningCheck, transition));
    this.results = new ResultDispatch({
      metrics: options.metrics,
      repository: options.repository,
      states: options.states,
      owner: this.owner,
      sinks: options.onResult ?? [],
      publish: options.publish ?? (() => undefined),
      inMaintenance: options.inMaintenance ?? (() => false),
      node: options.node,
    });
    this.scheduler = new Scheduler<RunningCheck>({
      maxConcurrentRuns: options.maxConcurrentRuns,
      ...(options.startTickMs !== undefined ? { tickMs: options.startTickMs } : {}),
      onRunFinished: (check, failure, durationMs) => this.recordRun(check, failure, durationMs),
      onRunStarted: (lagMs) => this.metrics.observeLag(lagMs / 1000),
      ...(options.now ? { now: options.now } : {}),
      ...(options.random ? { random: options.random } : {}),
    });
  }

  // Reads

  get(name: string): RunningCheck | undefined {
    return this.checks.get(name);
  }

  all(): IterableIterator<RunningCheck> {
    return this.checks.values();
  }

  names(): Set<string> {
    return new Set(this.checks.keys());
  }

  latestResult(name: string): CheckResult | undefined {
    return this.results.latest.get(name);
  }

  latestResults(): IterableIterator<CheckResult> {
    return this.results.latest.values();
  }

  set maxConcurrentRuns(cap: number) {
    this.scheduler.maxConcurrentRuns = cap;
  }

  set startTickMs(tick: number | 'auto') {
    this.scheduler.tickMs = tick;
  }

  // Mutations (inside `exclusive`)

  /** Runs `work` after every mutation queued before it has settled. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.mutations.then(work);
    this.mutations = run.catch(() => undefined);
    return run;
  }

  /** A check ready to register: its metric series are created when it first runs. */
  create(def: CheckDefinition, source: string, prepared: Prepared): RunningCheck {
    return new RunningCheck(def, source, prepared, this.metrics.labelsFor(def.name, def.labels));
  }

  /** The latest results loaded from the database at startup. */
  restoreResults(results: Iterable<CheckResult>): void {
    for (const result of results) this.results.latest.set(result.name, result);
  }

  /** The states stored beside the latest results, and the pauses (startup): each check's, in its metrics too. */
  restoreStates(stored: Iterable<StoredState>): void {
    this.states.restore(stored);
    for (const check of this.checks.values()) this.track(check);
  }

  register(check: RunningCheck): void {
    this.checks.set(check.def.name, check);
    this.track(check);
    if (this.started) this.activate(check);
  }

  /** Gives a check its state machine (a new one, or the one its name has), and the state's metric series. */
  private track(check: RunningCheck): void {
    check.machine = this.states.track(check.def.name);
    this.metrics.observeCheckState(check.metricSeries, check.machine.state);
  }

  /**
   * Hands a check this node owns to the scheduler, or lets a pushed check record its own results. `takenOver`: the
   * check ran on another node until now, so it is due one interval after its last result (at once when that is
   * past) rather than after the random first-run spread.
   */
  private activate(check: RunningCheck, takenOver = false): void {
    if (!this.runsHere(check)) return;
    const pushed = check.prepared.pushed;
    if (pushed !== undefined) {
      if (!check.pushStarted) pushed.start((failure) => this.recordRun(check, failure, 0), this.pushReports);
      check.pushStarted = true;
      return;
    }
    if (check.handle !== null) return;
    // This node's own last run: another location's does not delay it.
    const lastS = takenOver ? this.results.lastRun(check) : undefined;
    // Result timestamps are wall-clock seconds; the scheduler's clock is its own: hand it a delay.
    check.handle = this.scheduler.add(
      check,
      lastS !== undefined ? lastS * 1000 + check.intervalMs - Date.now() : undefined,
    );
  }

  /**
   * The owners changed (a member joined or left): checks this node now owns start, at the next due time after
   * their last result; checks it no longer owns stop. Returns how many started and stopped.
   */
  reassign(): { started: number; stopped: number } {
    let started = 0;
    let stopped = 0;
    if (!this.started) return { started, stopped };
    for (const check of this.checks.values()) {
      const owned = this.runsHere(check);
      const running = check.handle !== null || check.pushStarted;
      if (owned && !running) {
        this.activate(check, true);
        started++;
      } else if (!owned && running) {
        this.deactivate(check);
        stopped++;
      }
    }
    return { started, stopped };
  }

  /** Whether this node runs the check: it owns it (or is one of its locations), and the check is not paused. */
  private runsHere(check: RunningCheck): boolean {
    return this.owner.owns(check.def.name, check.def.locations) && this.states.pause(check.def.name) === undefined;
  }

  /** A change of state shows in the metrics at once; a paused check stops at once (a run in flight finishes, its
   *  result dropped), a resumed one is due one interval after its last result, at once when that is past. */
  private pauseChanged(check: RunningCheck, transition: Transition): void {
    if (this.checks.get(check.def.name) !== check) return;
    this.metrics.observeCheckState(check.metricSeries, transition.to);
    if (!this.started) return;
    if (transition.to === 'paused') this.deactivate(check);
    else if (transition.from === 'paused') this.activate(check, true);
  }

  /** Stops running a check here (its owner is another node now); its definition and results stay. */
  private deactivate(check: RunningCheck): void {
    const handle = check.handle;
    check.handle = null;
    if (handle) void this.scheduler.remove(handle);
    if (check.pushStarted) {
      check.pushStarted = false;
      check.prepared.pushed?.stop();
    }
  }

  /**
   * A result another node ran (a cluster): kept as if it had run here (latest, history, aggregates, metric
   * series), but not exported again (its owner exported it), unless it changes the state of a check with locations
   * that this node exports. Dropped when the check is unknown here.
   */
  recordRemote(result: CheckResult): boolean {
    const check = this.checks.get(result.name);
    if (check === undefined) return false;
    // Paused on this node (a pause holds on the node it was made on, docs/cluster.md): counted nowhere here.
    if (check.machine?.paused === true) return true;
    shareCheckStrings(result, check.def.name, check.summary, check.labels, check.source);
    this.results.remote(check, result);
    const pushed = check.prepared.pushed;
    if (pushed !== undefined && !isSilence(result.message)) {
      const report = { atMs: result['healthcheck-timestamp'] * 1000, success: result.success, message: result.message };
      this.pushReports.save(result.name, report);
      pushed.observe(report);
    }
    return true;
  }

  /**
   * A job's report to a pushed check (a heartbeat), whichever node owns it: committed, recorded as a result of this
   * node (and so published in a cluster), and the silence counted from it.
   */
  reportPushed(check: RunningCheck, success: boolean, message: string): void {
    const report = { atMs: Date.now(), success, message };
    this.pushReports.save(check.def.name, report);
    this.recordRun(check, success ? undefined : new CheckFailure(message), 0);
    check.prepared.pushed?.observe(report);
  }

  /** Replaces `previous` (if any) by `next`: the old check never runs again and its metric series go. */
  swap(previous: RunningCheck | undefined, next: RunningCheck): void {
    if (previous) this.retire(previous);
    this.register(next);
  }

  /** Removes a check with its latest result and its buffered results. */
  unregister(check: RunningCheck): void {
    this.retire(check);
    this.checks.delete(check.def.name);
    this.results.forget(check.def.name);
    this.states.forget(check.def.name);
    this.repository.dropBuffered(new Set([check.def.name]));
  }

  // Lifecycle

  start(): void {
    this.started = true;
    for (const check of this.checks.values()) this.activate(check);
    this.scheduler.start();
  }

  /** Lets the runs in flight finish (their results recorded), then releases every check's resources. */
  async stop(): Promise<void> {
    await this.scheduler.stop();
    await Promise.allSettled([...this.checks.values()].map((check) => check.prepared.close()));
  }

  private retire(check: RunningCheck): void {
    check.pushStarted = false;
    this.metrics.remove(check.metricSeries);
    const handle = check.handle;
    check.handle = null;
    const idle = handle ? this.scheduler.remove(handle) : Promise.resolve();
    // The API answers at once; the aborted run and the release of connections finish in the background.
    void idle
      .then(() => check.prepared.close())
      .catch((error: unknown) =>
        this.logger.warn({ err: error, name: check.def.name }, 'releasing a removed healthcheck failed'),
      );
  }

  /** A run of this node, or a pushed check's report: dropped when the check is paused, else dispatched. */
  private recordRun(check: RunningCheck, failure: unknown, durationMs: number): void {
    // A run in flight when its check was paused, or a report to a paused heartbeat check: dropped.
    if (check.machine?.paused === true) return;
    const result = this.results.ran(check, failure, durationMs);
    if (result.success !== check.lastSuccess) {
      if (!result.success) this.logger.warn({ name: result.name, cause: result.message }, 'healthcheck failed');
      else if (check.lastSuccess === false) this.logger.info({ name: result.name }, 'healthcheck recovered');
    }
    check.lastSuccess = result.success;
  }
}
