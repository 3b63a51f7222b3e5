/**
 * The state of a check run from several places (docs/checks.md "Locations"). In a cluster a check with `locations`
 * runs on each chosen node; every node keeps each location's latest result and computes the check's state from
 * them: failing when at least `quorum` chosen locations' latest results fail. That state is the check's latest
 * result (API, dashboard, badges, status pages, `healthcheck_up`), and only the first-ranked chosen node hands it to
 * the exporters, when it changes: one export per change, not one per location and run.
 *
 * Every node computes the state from the same results, so when the first-ranked node goes the next one already
 * knows the state and exports only the next change. A node restarted reads each location's latest result back from
 * the history, and the state from its stored latest result.
 *
 * A single node (no cluster) is the one location of every check: `trackLocations` gives it the pass-through, which
 * is each result as it comes, as for a check without locations in a cluster.
 *
 * A state that is up while a chosen location's latest run crossed a `degraded` condition is degraded, saying which
 * (docs/checks.md "States").
 */
import type { LocationSpec } from '../kinds/locations.ts';
import type { CheckResult, HistoryEntry, LocationResult } from '../result-types.ts';

/** What the state of a check is made of (a RunningCheck of src/healthcheck/registry/registry.ts). */
export interface LocatedCheck {
  readonly def: { readonly name: string; readonly locations?: LocationSpec };
  readonly summary: string;
  readonly labels: Record<string, string> | undefined;
  readonly source: string;
}

interface ResultView {
  /** The check's latest result now: the result itself, or the state of a check with locations. */
  state: CheckResult;
  /** Whether this node hands `state` to the exporters. */
  exported: boolean;
}

export interface ResultLocations {
  /** A result of `check`, run here when `ranHere`; `previous` is the check's latest result before it. */
  observe(check: LocatedCheck, result: CheckResult, ranHere: boolean, previous: CheckResult | undefined): ResultView;
  /** When this node last ran the check (Unix s), for the due time of a check it takes over; `latest` is the check's. */
  lastRun(check: LocatedCheck, latest: CheckResult | undefined): number | undefined;
  /** The check is gone. */
  forget(name: string): void;
}

export interface LocationOptions {
  /** This node, in a cluster; undefined on a single node. */
  node: string | undefined;
  /** The nodes chosen to run a check with these locations, best-ranked first (src/cluster/membership/node.ts). */
  chosen(name: string, spec: LocationSpec): readonly string[];
  /** A check's stored history, newest first: each location's latest result after a restart. */
  history(name: string): HistoryEntry[];
}

/** Failing locations that make a check fail: its `quorum`, a majority by default, never more than are chosen. */
export function quorumOf(spec: LocationSpec, chosen: number): number {
  if (chosen === 0) return 0;
  return Math.min(spec.quorum ?? Math.floor(chosen / 2) + 1, chosen);
}

export function trackLocations(options: LocationOptions): ResultLocations {
  return options.node === undefined ? EACH_RESULT : new LocationStates(options.node, options);
}

/** Each result is the check's latest, exported by the node that ran it. */
const EACH_RESULT: ResultLocations = {
  observe: (_check, result, ranHere) => ({ state: result, exported: ranHere }),
  lastRun: (_check, latest) => latest?.['healthcheck-timestamp'],
  forget: () => undefined,
};

interface Located {
  /** Each node's latest result of the check. */
  readonly byNode: Map<string, LocationResult>;
  /** The state last computed; undefined before the first. */
  up: boolean | undefined;
}

class LocationStates implements ResultLocations {
  private readonly checks = new Map<string, Located>();

  constructor(
    private readonly node: string,
    private readonly options: LocationOptions,
  ) {}

  observe(check: LocatedCheck, result: CheckResult, ranHere: boolean, previous: CheckResult | undefined): ResultView {
    const spec = check.def.locations;
    if (spec === undefined) return EACH_RESULT.observe(check, result, ranHere, previous);
    const name = check.def.name;
    const located = this.located(name);
    located.up ??= previous?.success;
    if (result.node !== undefined) keepNewest(located.byNode, result.node, locationOf(result.node, result));
    const chosen = this.options.chosen(name, spec);
    // Nobody runs it (no member eligible, or this node has not joined yet): nothing to judge from.
    if (chosen.length === 0) return { state: previous ?? result, exported: false };
    const state = stateOf(check, chosen, located.byNode, quorumOf(spec, chosen.length), result);
    const changed = located.up !== state.success;
    located.up = state.success;
    return { state, exported: changed && chosen[0] === this.node };
  }

  lastRun(check: LocatedCheck, latest: CheckResult | undefined): number | undefined {
    if (check.def.locations === undefined) return EACH_RESULT.lastRun(check, latest);
    return this.located(check.def.name).byNode.get(this.node)?.['healthcheck-timestamp'];
  }

  forget(name: string): void {
    this.checks.delete(name);
  }

  /** A check's locations, read back from its history the first time (a restart, or the check just added). */
  private located(name: string): Located {
    let located = this.checks.get(name);
    if (located === undefined) {
      located = { byNode: new Map(), up: undefined };
      for (const entry of this.options.history(name)) {
        if (entry.node !== undefined && !located.byNode.has(entry.node))
          located.byNode.set(entry.node, locationOf(entry.node, entry));
      }
      this.checks.set(name, located);
    }
    return located;
  }
}

/** A result older than the one kept (results replayed after a restart) does not replace it. */
function keepNewest(byNode: Map<string, LocationResult>, node: string, location: LocationResult): void {
  const kept = byNode.get(node);
  if (kept === undefined || (kept['healthcheck-timestamp'] as number) <= (location['healthcheck-timestamp'] as number))
    byNode.set(node, location);
}

function locationOf(node: string, result: CheckResult | HistoryEntry): LocationResult {
  const location: LocationResult = {
    node,
    success: result.success,
    'healthcheck-timestamp': result['healthcheck-timestamp'],
    message: result.message,
    duration: result.duration,
  };
  if (result.maintenance) location.maintenance = true;
  if ('degraded' in result && result.degraded !== undefined) location.degraded = result.degraded;
  return location;
}

/** The check's state from its chosen locations' latest results; `result`, the one just in, dates it when no chosen
 *  location has reported yet. */
function stateOf(
  check: LocatedCheck,
  chosen: readonly string[],
  byNode: ReadonlyMap<string, LocationResult>,
  quorum: number,
  result: CheckResult,
): CheckResult {
  const locations: LocationResult[] = [];
  const failures: string[] = [];
  let degraded: string | undefined;
  let newest: LocationResult | CheckResult = result;
  let reported = false;
  for (const node of chosen) {
    const latest = byNode.get(node);
    if (latest === undefined) {
      locations.push({ node });
      continue;
    }
    locations.push(latest);
    if (!latest.success) failures.push(`${node}: ${latest.message}`);
    else if (latest.degraded !== undefined) degraded ??= `${node}: ${latest.degraded}`;
    if (!reported || (latest['healthcheck-timestamp'] as number) > (newest['healthcheck-timestamp'] as number))
      newest = latest;
    reported = true;
  }
  const up = failures.length < quorum;
  const state: CheckResult = {
    name: check.def.name,
    summary: check.summary,
    ...(check.labels !== undefined ? { labels: check.labels } : {}),
    success: up,
    'healthcheck-timestamp': newest['healthcheck-timestamp'] as number,
    message: up
      ? 'success'
      : `${failures.length} of ${chosen.length} locations failing (quorum ${quorum}): ${failures.join('; ')}`,
    duration: newest.duration as number,
    source: check.source,
    ...(newest.maintenance ? { maintenance: true as const } : {}),
    quorum,
    locations,
  };
  // Up with a location's run degraded: the check is degraded (docs/checks.md "States").
  if (up && degraded !== undefined) state.degraded = degraded;
  return state;
}
