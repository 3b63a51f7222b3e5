/**
 * The healthcheck part's door to a cluster (docs/architecture.md, "Ports"): what the part uses of one
 * (`CheckCluster`: who runs which check, where results go, where API checks are stored) and what it lets the cluster
 * do (`CheckHost`). Both are written here, in the part's own words, so that healthcheck/ imports nothing from
 * cluster/: the cluster part (src/cluster/part.ts) implements `CheckCluster` and src/process/parts.ts hands it over. A
 * single node has none.
 *
 * It is also all a cluster may import of the part (lint keeps it so): the contracts are declared here, and the
 * part's vocabulary they speak (a check's definition, its result and the result's wire schema, its locations, the
 * API's refusal) is named here for the cluster, from where the part keeps it.
 */
import type { CheckDefinition } from './kinds/index.ts';
import type { LocationSpec } from './kinds/locations.ts';
import type { HealthcheckError } from './errors.ts';
import type { CheckResult } from './result-types.ts';
import type { ReplicatedCheck } from './admission/replicated-checks.ts';

export type { CheckDefinition, CheckResult, LocationSpec };
/** A definition as the API lists it and the cluster stores it; the refusal the API answers with. */
export { checkToJson } from './kinds/index.ts';
export { HealthcheckError } from './errors.ts';
/** The wire schema of a result, which the cluster checks the results of other nodes against. */
export { CheckResult as CheckResultSchema } from './wire.ts';

/** Who runs which check: a single node runs all of them; a cluster, its share (src/cluster/membership/node.ts). */
export interface CheckOwner {
  /** Whether this node runs the check: its owner, or one of its chosen locations when it has `locations`. */
  owns(name: string, locations?: LocationSpec): boolean;
  /** The nodes chosen to run a check with locations, best-ranked first (docs/checks.md "Locations"). */
  chosen(name: string, locations: LocationSpec): readonly string[];
}

/** The cluster's store of API definitions: written before the local change, so that every node gets it. */
export interface ApiCheckReplica {
  put(def: CheckDefinition): Promise<void>;
  delete(name: string): Promise<void>;
  /** A bulk: the API checks become exactly `desired` (whatever this node has not heard of yet included). */
  replace(desired: readonly CheckDefinition[]): Promise<void>;
}

/** What the cluster sees of a check: who runs it, and how often its runners publish a result of it. */
export interface HostedCheck {
  readonly name: string;
  readonly locations?: LocationSpec;
  /** A heartbeat check's results come from the reports of its jobs, not from runs on a schedule. */
  readonly kind: string;
  /** 0 for a one-off check given without interval. */
  readonly intervalNs: number;
  readonly timeoutNs: number;
  /** Runs once, on the node that was asked. */
  readonly oneOff: boolean;
}

/** What an apply of the cluster's API checks changed (the reconciler's plan, as far as a cluster reads it). */
interface AppliedChecks {
  readonly started: readonly unknown[];
  readonly removed: readonly unknown[];
  readonly kept: readonly unknown[];
}

/** What the cluster may do with this node's checks. */
export interface CheckHost {
  /** A result another node ran: this node's latest result and history for the check. */
  recordRemote(result: CheckResult): boolean;
  /** The members changed: the checks this node now owns start, the others stop. */
  reassign(): { started: number; stopped: number };
  /** Every check this node knows, from its config file, discovery or the API, with its locations when it has some. */
  checks(): Iterable<HostedCheck>;
  /** The check is paused (docs/checks.md, "Pause"): it runs nowhere, so no owner owes its results. */
  paused(name: string): boolean;
  /** The API checks, to seed an empty cluster store. */
  apiDefinitions(): CheckDefinition[];
  /** The cluster's store changed: the API checks become exactly `desired`; what the API would refuse goes to
   *  `refused`. */
  applyReplicated(
    desired: readonly ReplicatedCheck[],
    refused: (name: string, refusal: HealthcheckError) => void,
  ): Promise<AppliedChecks>;
}

/** What this part uses of its cluster. */
export interface CheckCluster extends CheckOwner, ApiCheckReplica {
  /** This node's name, carried by every result it runs. */
  readonly node: string;
  /** Where the results of the checks this node ran go, besides its own store. */
  readonly offer: (result: CheckResult) => void;
  /** The part started: the cluster joins, runs this node's share of `host`'s checks and mirrors the others'. */
  serve(host: CheckHost): void;
}
