/** The result of one run, as the API shows it and the repository stores it (docs/http-api.md, "Results"). */
import { sameLabels } from '../../common/labels.ts';
import type { CheckResult } from '../result-types.ts';

const SUCCESS = 'success';

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
    message: failure === undefined ? SUCCESS : failureMessage(failure),
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

/**
 * Makes a result another node ran (decoded from its message) hold its check's own strings instead of the copies
 * decoding made: the check's name, summary, source and labels, and the message of a success. A result lives in
 * memory until its group is written (`healthchecks.write-delay`, 30 s), so that its copies outlived the young
 * generation, and on a node of three, which keeps twice as many results of others as its own, they were most of
 * what its old generation gained (bench/JOURNAL.md, "Cluster: the other nodes' results").
 */
export function shareCheckStrings(
  result: CheckResult,
  name: string,
  summary: string,
  labels: Record<string, string> | undefined,
  source: string,
): void {
  result.name = name;
  if (result.summary === summary) result.summary = summary;
  if (result.source === source) result.source = source;
  if (result.message === SUCCESS) result.message = SUCCESS;
  if (result.labels !== undefined && labels !== undefined && sameLabels(result.labels, labels)) result.labels = labels;
}
