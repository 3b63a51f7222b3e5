/**
 * The contract between a check kind and the rest of the healthcheck part. The scheduler, the service and the
 * routes only ever hold a `CheckDefinition` and a `Prepared`; everything kind-specific stays in the kind's file.
 */
import type { TSchema } from '@sinclair/typebox';
import type { CHECK_KIND_NAMES } from '../../common/check-kinds.ts';
import type { LocationSpec } from './locations.ts';
import type { AlertFields } from './alerting.ts';
import type { StateFields } from './states.ts';

export type KindName = (typeof CHECK_KIND_NAMES)[number];

/** Fields every normalised definition has. Durations are nanoseconds (see src/common/duration.ts). The state
 *  fields (`failure-threshold`, `success-threshold`, `degraded`) are set only when given (kinds/states.ts). */
export interface BaseDefinition extends StateFields, AlertFields {
  kind: KindName;
  name: string;
  description: string;
  /** 0 for a one-off check given without interval. */
  intervalNs: number;
  timeoutNs: number;
  oneOff: boolean;
  /** Empty when the check has none. */
  labels: Record<string, string>;
  /** `public`: its badges answer anyone under `http.public: [badges]` (docs/hardening.md, "Public pages and
   *  badges"). */
  badge?: 'public';
  /** In a cluster: the nodes that run it and its quorum (docs/checks.md "Locations"); absent, one owner. */
  locations?: LocationSpec;
}

/** A check's listing: the base fields in upstream order, then the kind's own, `timeout` and `kind`. */
export interface CheckJson {
  name: string;
  description: string;
  interval: string;
  'one-off': boolean;
  source: string;
  labels?: Record<string, string>;
  [field: string]: unknown;
}

/** Per-check resources, built once when the check is added and reused by every run. */
export interface Prepared {
  /**
   * One execution. Resolves on success, rejects with a CheckFailure whose message is the result message.
   * `signal` must fire at the check's timeout: it is what bounds the run.
   */
  run(signal: AbortSignal): Promise<void>;
  /** Releases the resources (keep-alive connections); the check will not run again. */
  close(): Promise<void>;
  /** TLS checks: the earliest certificate expiry the last handshake saw (Unix seconds), for the metrics. */
  certificateExpirySeconds?(): number | undefined;
  /** Domain checks: the registration's expiry the last RDAP answer gave (Unix seconds), for the metrics. */
  domainExpirySeconds?(): number | undefined;
  /** HTTPS and gRPC checks with TLS: the earliest certificate expiry of the last run's connection (Unix seconds),
   *  read when asked, for `degraded.expiry-warning` only (their metrics do not show it). */
  peerCertificateExpirySeconds?(): number | undefined;
  /** Set on checks whose results are pushed to them (heartbeats): the scheduler never runs them; the registry
   *  starts them instead, and they record their results themselves. */
  pushed?: PushedChecks;
}

/** What a pushed check records through: a result now (`failure` undefined is a success). */
export type RecordResult = (failure: unknown) => void;

interface PushedChecks {
  /** This node owns the check: it watches for silence from the last report (at startup, when added, on takeover). */
  start(record: RecordResult, reports: PushReports): void;
  /** Another node owns it now. */
  stop(): void;
  /** A report arrived, here or (in a cluster) at another node: the silence is counted from it. */
  observe(report: PushReport): void;
}

/** The last report pushed to a check, kept in SQLite so that a restart knows how long it has been silent. */
export interface PushReport {
  atMs: number;
  success: boolean;
  message: string;
}

export interface PushReports {
  last(name: string): PushReport | undefined;
  /** Committed before it returns: the job's request is answered after it. */
  save(name: string, report: PushReport): void;
}

export interface CheckKind<D extends BaseDefinition> {
  kind: D['kind'];
  /** TypeBox schema of the JSON/YAML input (kebab-case keys, as upstream). */
  schema: TSchema;
  /** Validates (schema and the rules of docs/checks.md) and normalises; throws CheckValidationError. */
  parse(raw: unknown): D;
  /**
   * Listing form: upstream key order (docs/http-api.md), Go durations, plus the read-only `kind`.
   * `source` is not part of the definition: the service owns it and passes it here.
   */
  toJson(def: D, source?: string): CheckJson;
  /** Upstream's per-kind summary, e.g. `TCP healthcheck on 127.0.0.1:80`. */
  summary(def: D): string;
  /** Builds the per-check resources; rejects with CheckFailure (`Fail to load certificates: ...`). */
  prepare(def: D): Promise<Prepared>;
}

/** A failed run; the message is the result message. */
export class CheckFailure extends Error {}
