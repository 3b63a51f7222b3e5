/**
 * Where a check's results go, this node's runs and the other nodes' alike (docs/architecture.md, "The flow of a
 * result"): the check's latest result and state (its quorum's for a check with locations), the result store, the
 * state metrics, then the result sinks (the exporters). A run of this node is also published first (in a cluster)
 * and counted in the run metrics.
 */
import { type ResultLocations, trackLocations } from './locations.ts';
import type { CheckOwner } from '../cluster-port.ts';
import type { HealthcheckMetrics } from '../metrics.ts';
import type { HealthcheckRepository } from '../results/repository.ts';
import type { CheckResult } from '../result-types.ts';
import { buildResult } from '../results/result.ts';
import type { RunningCheck } from '../scheduling/running-check.ts';
import type { CheckStates } from '../states/check-states.ts';
import { degradedReason } from '../states/degraded.ts';
import type { StateMachine } from '../states/machine.ts';

/** Handed a result: must return at once and never throw. */
export type ResultSink = (result: CheckResult) => void;

export interface ResultDispatchOptions {
  metrics: HealthcheckMetrics;
  repository: HealthcheckRepository;
  states: CheckStates;
  owner: CheckOwner;
  /** Handed every result this node exports (the exporters' queues). */
  sinks: readonly ResultSink[];
  /** Handed every result this node ran (in a cluster, to publish it to the others). */
  publish: ResultSink;
  inMaintenance: (name: string, labels: Readonly<Record<string, string>>) => boolean;
  /** Set in a cluster: the node name every result of this node carries. */
  node: string | undefined;
}

export class ResultDispatch {
  /** Each check's latest result (its quorum's for a check with locations). */
  readonly latest = new Map<string, CheckResult>();
  /** Each check's state from its locations' results, in a cluster; each result as it comes on a single node. */
  private readonly locations: ResultLocations;

  constructor(private readonly options: ResultDispatchOptions) {
    this.locations = trackLocations({
      node: options.node,
      chosen: (name, locations) => options.owner.chosen(name, locations),
      history: (name) => options.repository.history(name, Infinity),
    });
  }

  /** This node's own last run of the check (another location's does not count). */
  lastRun(check: RunningCheck): number | undefined {
    return this.locations.lastRun(check, this.latest.get(check.def.name));
  }

  forget(name: string): void {
    this.latest.delete(name);
    this.locations.forget(name);
  }

  /** A run of this node: built, published, counted, then kept. */
  ran(check: RunningCheck, failure: unknown, durationMs: number): CheckResult {
    const { states, metrics } = this.options;
    const name = check.def.name;
    const result = buildResult(
      name,
      check.summary,
      check.labels,
      check.source,
      failure,
      durationMs,
      this.options.inMaintenance(name, check.def.labels),
      this.options.node,
    );
    const certificateExpiryS = check.prepared.certificateExpirySeconds?.();
    const domainExpiryS = check.prepared.domainExpirySeconds?.();
    const degraded = check.def.degraded ?? states.defaults.degraded;
    if (degraded !== undefined && result.success) {
      const sight = {
        durationMs,
        certificateExpiryS:
          degraded.expiryWarningNs === undefined
            ? undefined
            : (certificateExpiryS ?? check.prepared.peerCertificateExpirySeconds?.()),
        domainExpiryS,
      };
      const reason = degradedReason(degraded, sight, Date.now());
      if (reason !== undefined) result.degraded = reason;
    }
    this.options.publish(result);
    metrics.observeRun(check.metricSeries, result.success, durationMs / 1000, certificateExpiryS, domainExpiryS);
    this.keep(check, result, true);
    return result;
  }

  /** A result another node ran (a cluster): counted, then kept; its owner exported it. */
  remote(check: RunningCheck, result: CheckResult): void {
    this.options.metrics.observeRun(check.metricSeries, result.success, result.duration / 1000, undefined);
    this.keep(check, result, false);
  }

  /**
   * What every result kept goes through after its run's metrics: the check's latest result and state, the result
   * store, the state metrics, the sinks.
   */
  private keep(check: RunningCheck, result: CheckResult, ranHere: boolean): void {
    const { repository, states, metrics, sinks } = this.options;
    const name = check.def.name;
    const latest = this.latest.get(name);
    const view = this.locations.observe(check, result, ranHere, latest);
    // A result older than the latest kept (results replayed after a restart) does not replace it; it still goes to
    // the history.
    if (latest === undefined || latest['healthcheck-timestamp'] <= view.state['healthcheck-timestamp'])
      this.latest.set(name, view.state);
    repository.record(result, view.state);
    // The same latest result again (a check with locations nobody runs yet) is not a new outcome.
    const machine =
      view.state === latest
        ? (check.machine as StateMachine)
        : states.observe(check, check.machine as StateMachine, view.state);
    metrics.observeState(check.metricSeries, view.state);
    metrics.observeCheckState(check.metricSeries, machine.state);
    if (view.exported) for (let i = 0; i < sinks.length; i++) (sinks[i] as ResultSink)(view.state);
  }
}
