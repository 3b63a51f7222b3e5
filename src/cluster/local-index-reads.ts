/**
 * The index reads this node answers for the partitions it runs (src/cluster/stream-queries.ts asks them of every
 * owner and merges their answers).
 */
import type { Condition } from '../stream/condition.ts';
import { mergeSearches, type SearchAnswer, type StatsAnswer } from './stream-queries.ts';
import type { PartitionRunner } from './partition-runner.ts';

/** The events of `stream` matching `condition` in the partitions run here, at most `limit`. */
export function searchRunners(
  runners: Iterable<PartitionRunner>,
  stream: string,
  condition: Condition,
  limit: number,
): SearchAnswer {
  const answers: SearchAnswer[] = [];
  for (const runner of runners) if (runner.stream === stream) answers.push(runner.search(condition, limit));
  return mergeSearches(answers, limit);
}

/** Each stream's index size and current time over the partitions run here. */
export function statsOfRunners(runners: Iterable<PartitionRunner>): StatsAnswer {
  const stats: StatsAnswer = {};
  for (const runner of runners) {
    const index = runner.index;
    if (index === undefined) continue;
    const seen = stats[runner.stream];
    if (seen === undefined) stats[runner.stream] = { size: index.size, currentTime: index.currentTime };
    else {
      seen.size += index.size;
      seen.currentTime = Math.max(seen.currentTime, index.currentTime);
    }
  }
  return stats;
}
