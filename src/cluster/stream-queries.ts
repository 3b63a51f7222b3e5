/**
 * Index reads from any node (docs/cluster.md, "Reads"): each node answers, on `vigie.streams.query.<node id>`, what
 * the partitions it runs hold (a search, or each stream's index size and current time); the node that got the HTTP
 * request asks the nodes concerned at once (NATS request/reply; itself without the network) and merges. A node that
 * does not answer in time makes the read a 503 naming it: a partial answer would look like missing events.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { StreamError } from '../stream/errors.ts';
import type { Event } from '../stream/event.ts';
import type { IndexStats } from '../stream/service.ts';
import { streamId } from './stream-log.ts';

const SUBJECT_PREFIX = 'vigie.streams.query.';
const TIMEOUT_MS = 5_000;

export type QueryRequest = { op: 'search'; stream: string; query: string; limit: number } | { op: 'stats' };

export interface SearchAnswer {
  events: Event[];
  truncated: boolean;
}

export type StatsAnswer = Record<string, IndexStats>;

/** What a node answers from the partitions it runs. */
export interface LocalReads {
  search(stream: string, query: string, limit: number): SearchAnswer;
  stats(): StatsAnswer;
}

export function querySubject(node: string): string {
  return `${SUBJECT_PREFIX}${streamId(node)}`;
}

export class StreamQueries {
  private subscription: Subscription | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly node: string,
    private readonly local: LocalReads,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.subscription = this.nc.subscribe(querySubject(this.node), {
      callback: (error, message) => {
        if (error !== null) return;
        let answer: unknown;
        try {
          answer = this.answer(message.json<QueryRequest>());
        } catch (failure) {
          answer = { error: (failure as Error).message };
        }
        message.respond(JSON.stringify(answer));
      },
    });
  }

  private answer(request: QueryRequest): SearchAnswer | StatsAnswer {
    if (request.op === 'search') return this.local.search(request.stream, request.query, request.limit);
    return this.local.stats();
  }

  /** Asks each node (this one locally) and returns their answers, in the order of `nodes`. */
  async ask<T>(nodes: readonly string[], request: QueryRequest): Promise<T[]> {
    const payload = JSON.stringify(request);
    return Promise.all(
      nodes.map(async (node) => {
        if (node === this.node) return this.answer(request) as T;
        let answer: T | { error: string };
        try {
          answer = (await this.nc.request(querySubject(node), payload, { timeout: TIMEOUT_MS })).json<T | { error: string }>();
        } catch (error) {
          this.logger.warn({ node, err: error }, `cluster member ${node} did not answer an index read: ${(error as Error).message}`);
          throw new StreamError('unavailable', `cluster member ${node}, which runs part of this stream, did not answer (${(error as Error).message}); retry`);
        }
        if (typeof answer === 'object' && answer !== null && 'error' in answer) throw new StreamError('unavailable', `cluster member ${node} could not answer: ${answer.error}`);
        return answer as T;
      }),
    );
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }
}

/** Merged answers of a search: every node's events, cut at `limit`. */
export function mergeSearches(answers: readonly SearchAnswer[], limit: number): SearchAnswer {
  const events: Event[] = [];
  let truncated = false;
  for (const answer of answers) {
    truncated ||= answer.truncated;
    for (const event of answer.events) {
      if (events.length < limit) events.push(event);
      else truncated = true;
    }
  }
  return { events, truncated };
}

/** Merged stats: sizes added, the newest current time. */
export function mergeStats(answers: readonly StatsAnswer[]): Map<string, IndexStats> {
  const merged = new Map<string, IndexStats>();
  for (const answer of answers) {
    for (const [stream, stats] of Object.entries(answer)) {
      const seen = merged.get(stream);
      if (seen === undefined) merged.set(stream, { ...stats });
      else {
        seen.size += stats.size;
        seen.currentTime = Math.max(seen.currentTime, stats.currentTime);
      }
    }
  }
  return merged;
}
