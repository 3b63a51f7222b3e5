/** The result of one run, as the API shows it and the repository stores it (docs/http-api.md, "Results"). */
import type { CheckResult } from './result-types.ts';

export function buildResult(
  name: string,
  summary: string,
  labels: Record<string, string> | undefined,
  source: string,
  failure: unknown,
  durationMs: number,
  maintenance = false,
  node?: string,
): CheckResult {
  const result: CheckResult = {
    name,
    summary,
    ...(labels ? { labels } : {}),
    success: failure === undefined,
    'healthcheck-timestamp': Math.floor(Date.now() / 1000),
    message: failure === undefined ? 'success' : failureMessage(failure),
    duration: Math.max(0, Math.floor(durationMs)),
    source,
  };
  // Only when true: a result outside maintenance keeps upstream's exact shape.
  if (maintenance) result.maintenance = true;
  // In a cluster: the node that ran it (docs/cluster.md).
  if (node !== undefined) result.node = node;
  return result;
}

function failureMessage(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}
