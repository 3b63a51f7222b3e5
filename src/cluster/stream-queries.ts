/**
 * Index reads from any node (docs/cluster.md, "Reads"): each node answers, on `vigie.streams.query.<node id>`, what
 * the partitions it runs hold (a search, or each stream's index size and current time); the node that got the HTTP
 * request asks the nodes concerned at once (NATS request/reply; itself without the network) and merges. A node that
 * does not answer in time makes the read a 503 naming it: a partial answer would look like missing events.
 *
 * Answers go to `vigie.streams.answer.<asker's node id>.<token>`, not to the asker's `_INBOX`: a node may then
 * publish its answers without NATS' `allow_responses`, which makes nats-server remember the reply subject of every
 * message it delivers to the node (every event-log message, acknowledged only at checkpoints) and scan them all
 * on each delivery past 4,096 of them: half of its CPU under ingest (docs/performance.md, "Cluster: what an event
 * costs").
 *
 * Requests and answers are untrusted (docs/cluster.md, "What a node does with what it reads"): a request that is not
 * one of the two is answered an error, one whose reply subject is not an answer subject is not answered, an answer
 * that is not what was asked (its events checked as the HTTP ingest checks events) makes the read a 503 naming the
 * node; all are refused and counted (`source="queries"`).
 */
import { randomBytes } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { Event } from '../stream/event.ts';
import type { IndexStats } from '../stream/placement.ts';
import { type MessageRefusals, WireSchema } from './refusals.ts';
import { eventsProblem, streamId } from './stream-log.ts';
import { ClusterUnavailableError } from './errors.ts';

const SUBJECT_PREFIX = 'vigie.streams.query.';
const ANSWER_PREFIX = 'vigie.streams.answer.';
const TIMEOUT_MS = 5_000;

export type QueryRequest = { op: 'search'; stream: string; query: string; limit: number } | { op: 'stats' };

export interface SearchAnswer {
  events: Event[];
  truncated: boolean;
}

export type StatsAnswer = Record<string, IndexStats>;

const REQUEST = new WireSchema<QueryRequest>(
  Type.Union([
    Type.Object({ op: Type.Literal('search'), stream: Type.String(), query: Type.String(), limit: Type.Integer({ minimum: 1 }) }),
    Type.Object({ op: Type.Literal('stats') }),
  ]),
);
const FAILED = new WireSchema<{ error: string }>(Type.Object({ error: Type.String() }));
/** A search's events are checked as the HTTP ingest checks events, under the asking service's `streams.max-event-depth`. */
export const searchAnswerSchema = (nesting: { readonly eventDepth: number }) =>
  new WireSchema<SearchAnswer>(Type.Object({ events: Type.Array(Type.Object({})), truncated: Type.Boolean() }), (answer) => eventsProblem(answer.events, nesting.eventDepth));
export const STATS_ANSWER = new WireSchema<StatsAnswer>(Type.Record(Type.String(), Type.Object({ size: Type.Integer({ minimum: 0 }), currentTime: Type.Number() })));

/** What a node answers from the partitions it runs. */
export interface LocalReads {
  search(stream: string, query: string, limit: number): SearchAnswer;
  stats(): StatsAnswer;
}

export function querySubject(node: string): string {
  return `${SUBJECT_PREFIX}${streamId(node)}`;
}

/** Where the answers to one read of `node` go. */
export function answerSubject(node: string): string {
  return `${ANSWER_PREFIX}${streamId(node)}.${randomBytes(9).toString('base64url')}`;
}

export class StreamQueries {
  private subscription: Subscription | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly node: string,
    private readonly local: LocalReads,
    private readonly refusals: MessageRefusals,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.subscription = this.nc.subscribe(querySubject(this.node), {
      callback: (error, message) => {
        if (error !== null) return;
        this.refusals.guard('queries', () => {
          if (message.reply === undefined || !message.reply.startsWith(ANSWER_PREFIX)) {
            this.refusals.refuse('queries', 'shape', `an index read on ${message.subject} whose reply subject (${message.reply ?? 'none'}) is not under ${ANSWER_PREFIX}: not answered`);
            return;
          }
          const request = REQUEST.decode(message.data);
          let answer: unknown;
          if (!request.ok) {
            this.refusals.refuse('queries', request.reason, `an index read on ${message.subject}: ${request.detail}`);
            answer = { error: `not an index read: ${request.detail}` };
          } else {
            try {
              answer = this.answer(request.value);
            } catch (failure) {
              answer = { error: (failure as Error).message };
            }
          }
          message.respond(JSON.stringify(answer));
        });
      },
    });
  }

  private answer(request: QueryRequest): SearchAnswer | StatsAnswer {
    if (request.op === 'search') return this.local.search(request.stream, request.query, request.limit);
    return this.local.stats();
  }

  /** Asks each node (this one locally) and returns their answers, in the order of `nodes`. */
  async ask<T>(nodes: readonly string[], request: QueryRequest, expected: WireSchema<T>): Promise<T[]> {
    const payload = JSON.stringify(request);
    return Promise.all(
      nodes.map(async (node) => {
        if (node === this.node) return this.answer(request) as T;
        let data: Uint8Array;
        try {
          // noMux: the reply subject is this read's own, under the answer prefix (above), with a subscription of its own.
          data = (await this.nc.request(querySubject(node), payload, { timeout: TIMEOUT_MS, noMux: true, reply: answerSubject(this.node) })).data;
        } catch (error) {
          this.logger.warn({ node, err: error }, `cluster member ${node} did not answer an index read: ${(error as Error).message}`);
          throw new ClusterUnavailableError(`cluster member ${node}, which runs part of this stream, did not answer (${(error as Error).message}); retry`);
        }
        const failed = FAILED.decode(data);
        if (failed.ok) throw new ClusterUnavailableError(`cluster member ${node} could not answer: ${failed.value.error}`);
        const answer = expected.decode(data);
        if (!answer.ok) {
          this.refusals.refuse('queries', answer.reason, `the answer of ${node} to an index read: ${answer.detail}`, { node });
          throw new ClusterUnavailableError(`cluster member ${node} answered something that is not an index read's answer (${answer.detail}); retry`);
        }
        return answer.value;
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
