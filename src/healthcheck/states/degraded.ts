/**
 * Whether a successful run crossed a `degraded` condition of its check (docs/checks.md, "States"): slower than
 * `response-time`, or it saw a certificate (TLS, HTTPS, gRPC with TLS, the mail kinds' TLS) or a domain's registration
 * (domain checks) expiring within `expiry-warning`. Judged by the node that ran the check, which alone saw the
 * expiry; the result carries the answer (`degraded`) to the other nodes of a cluster.
 */
import { formatDuration } from '../../common/duration.ts';
import type { DegradedSpec } from '../kinds/states.ts';
import { goUtcTime } from '../kinds/certificates.ts';

/** What a run saw: its duration, and the expiries it met (Unix s; undefined when it met none). */
export interface RunSight {
  durationMs: number;
  certificateExpiryS: number | undefined;
  domainExpiryS: number | undefined;
}

/** The condition crossed, in words, or undefined. */
export function degradedReason(spec: DegradedSpec, run: RunSight, nowMs: number): string | undefined {
  if (spec.responseTimeNs !== undefined && run.durationMs * 1e6 > spec.responseTimeNs)
    return `response time ${Math.floor(run.durationMs)}ms is over ${formatDuration(spec.responseTimeNs)} (degraded.response-time)`;
  const warning = spec.expiryWarningNs;
  if (warning === undefined) return undefined;
  const limitMs = nowMs + warning / 1e6;
  const within = `within ${formatDuration(warning)} (degraded.expiry-warning)`;
  if (run.certificateExpiryS !== undefined && run.certificateExpiryS * 1000 < limitMs)
    return `the certificate expires at ${goUtcTime(new Date(run.certificateExpiryS * 1000))}, ${within}`;
  if (run.domainExpiryS !== undefined && run.domainExpiryS * 1000 < limitMs)
    return `the domain expires at ${goUtcTime(new Date(run.domainExpiryS * 1000))}, ${within}`;
  return undefined;
}
