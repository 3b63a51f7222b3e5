/**
 * Index reads from any node (docs/cluster.md, "Reads"): each node answers, on `vigie.streams.query.<node id>`, what
 * the partitions it runs hold (a search, or each stream's index size and current time); the node that got the HTTP
 * request asks the nodes concerned at once (NATS request/reply; itself without the network) and merges. A node that
 * does not answer in time makes the read a 503 naming it: a partial answer would look like missing events.
 *
 * A search's answer goes in parts, each under NATS' max_payload (1 MiB by default), the last one without `"more":
 * true`: a node holding 30,000 matching events answers 3 MB. Before, such an answer could not be published and the
 * read timed out as if the node were down. The asker stops at the first part that goes past the read's limit.
 *
 * Answers go to `vigie.streams.answer.<asker's node id>.<token>`, not to the asker's `_INBOX`: a node may then
 * publish its answers without NATS' `allow_responses`, which makes nats-server remember the reply subject of every
 * message it delivers to the node (every event-log message, acknowledged only at checkpoints) and scan them all
 * on each delivery past 4,096 of them: half of its CPU under ingest (bench/JOURNAL.md, "Cluster: what an event
 * costs").
 *
 * Requests and answers are untrusted (docs/cluster.md, "What a node does with what it reads"): a request that is not
 * one of the two is answered an error, one whose reply subject is not an answer subject is not answered, an answer
 * that is not what was asked (its events checked as events, src/stream/event.ts) makes the read a 503 naming the
 * node; all are refused and counted (`source="queries"`).
 */
import { randomBytes } from 'node:crypto';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { type Event, eventsProblem } from '../../stream/event.ts';
import type { IndexStats } from '../../stream/partition/placement.ts';
import { type MessageRefusals, WireSchema } from '../refusals.ts';
import { streamId } from './stream-log.ts';
import { ClusterUnavailableError } from '../errors.ts';
import { DEFAULT_MAX_WAITING_READS } from '../settings.ts';

const SUBJECT_PREFIX = 'vigie.streams.query.';
const ANSWER_PREFIX = 'vigie.streams.answer.';
/** How long an asker waits for an answer, and then for each of its next parts. */
const PART_TIMEOUT_MS = 5_000;
/** How long a whole answer may take: a peer dripping one part every few seconds cannot hold a read open longer. */
const ANSWER_TIMEOUT_MS = 30_000;
/** Room left in a part for what is not its events (the envelope, NATS' own headers). */
const PART_ENVELOPE_BYTES = 4_096;
export interface QueryOptions {
  /** How long an asker waits for each part of an answer, and for the whole of it. */
  partMs: number;
  answerMs: number;
  /** Reads from other nodes waiting to be answered at most (`cluster.max-waiting-reads`). They are answered one per
   *  turn of the event loop, so that a burst of them (NATS hands over every request of a socket read at once) does
   *  not hold the loop; past this many a read is answered `busy` at once (a 503 for its asker) and counted
   *  (`reason="busy"`). */
  maxWaitingReads: number;
}

export type QueryRequest = { op: 'search'; stream: string; query: string; limit: number } | { op: 'stats' };

export interface SearchAnswer {
  events: Event[];
  truncated: boolean;
  /** On the wire only: another part of this answer follows. */
  more?: boolean;
}

export type StatsAnswer = Record<string, IndexStats>;

const REQUEST = new WireSchema<QueryRequest>(
  Type.Union([
    Type.Object({
      op: Type.Literal('search'),
      stream: Type.String(),
      query: Type.String(),
      limit: Type.Integer({ minimum: 1 }),
    }),
    Type.Object({ op: Type.Literal('stats') }),
  ]),
);
const FAILED = new WireSchema<{ error: string }>(Type.Object({ error: Type.String() }));
/** A search's events are checked as events (src/stream/event.ts), under the asking service's
 *  `streams.max-event-depth`. */
export const searchAnswerSchema = (nesting: { readonly eventDepth: number }) =>
  new WireSchema<SearchAnswer>(
    Type.Object({
      events: Type.Array(Type.Object({})),
      truncated: Type.Boolean(),
      more: Type.Optional(Type.Boolean()),
    }),
    (answer) => eventsProblem(answer.events, { eventDepth: nesting.eventDepth, timed: true, fromJson: true }),
  );
export const STATS_ANSWER = new WireSchema<StatsAnswer>(
  Type.Record(Type.String(), Type.Object({ size: Type.Integer({ minimum: 0 }), currentTime: Type.Number() })),
);

/** What a node answers from the partitions it runs. */
export interface LocalReads {
  search(stream: string, query: string, limit: number): SearchAnswer;
  stats(): StatsAnswer;
  /** This node's `streams.max-search-limit` (a reload changes it): a read asking for more gets at most this many,
   *  `truncated` if cut. */
  maxSearchLimit(): number;
}

export function querySubject(node: string): string {
  return `${SUBJECT_PREFIX}${streamId(node)}`;
}

/** Where the answers to one read of `node` go. */
export function answerSubject(node: string): string {
  return `${ANSWER_PREFIX}${streamId(node)}.${randomBytes(9).toString('base64url')}`;
}

export interface StreamQueriesOptions extends Partial<QueryOptions> {
  nc: NatsConnection;
  /** This node's name: it answers on its own subject. */
  node: string;
  /** What this node answers from the partitions it runs. */
  local: LocalReads;
  refusals: MessageRefusals;
  logger: Logger;
}

export class StreamQueries {
  private subscription: Subscription | null = null;
  private readonly waiting: Msg[] = [];
  private draining = false;
  private readonly options: QueryOptions;

  private readonly nc: NatsConnection;
  private readonly node: string;
  private readonly local: LocalReads;
  private readonly refusals: MessageRefusals;
  private readonly logger: Logger;

  constructor({ nc, node, local, refusals, logger, ...options }: StreamQueriesOptions) {
    this.nc = nc;
    this.node = node;
    this.local = local;
    this.refusals = refusals;
    this.logger = logger;
    this.options = {
      partMs: PART_TIMEOUT_MS,
      answerMs: ANSWER_TIMEOUT_MS,
      maxWaitingReads: DEFAULT_MAX_WAITING_READS,
      ...options,
    };
  }

  start(): void {
    this.subscription = this.nc.subscribe(querySubject(this.node), {
      callback: (error, message) => {
        if (error !== null) return;
        this.refusals.guard('queries', () => {
          if (message.reply === undefined || !message.reply.startsWith(ANSWER_PREFIX)) {
            this.refusals.refuse(
              'queries',
              'shape',
              `an index read on ${message.subject} whose reply subject (${message.reply ?? 'none'}) is not under ${ANSWER_PREFIX}: not answered`,
            );
            return;
          }
          const max = this.options.maxWaitingReads;
          if (this.waiting.length >= max) {
            this.refusals.refuse(
              'queries',
              'busy',
              `an index read on ${message.subject}: ${max} are waiting already (cluster.max-waiting-reads); answered busy`,
            );
            message.respond(JSON.stringify({ error: `busy: ${max} index reads are waiting on this node` }));
            return;
          }
          this.waiting.push(message);
          if (!this.draining) {
            this.draining = true;
            setImmediate(() => this.drain());
          }
        });
      },
    });
  }

  /** Answers the oldest waiting read, then comes back for the next one at the next turn of the event loop. */
  private drain(): void {
    const message = this.waiting.shift();
    if (message === undefined) {
      this.draining = false;
      return;
    }
    this.refusals.guard('queries', () => this.respond(message));
    setImmediate(() => this.drain());
  }

  /** Answers one read: a search in parts, a stats read or an error in one message. */
  private respond(message: Msg): void {
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
    const reply = message.reply as string;
    if (this.nc.isClosed()) return;
    if (request.ok && request.value.op === 'search' && !('error' in (answer as object))) {
      for (const part of this.parts(answer as SearchAnswer)) this.nc.publish(reply, part);
    } else message.respond(JSON.stringify(answer));
  }

  /** A search's answer as the parts it is sent in, each under the server's max_payload; one when it fits. Each
   *  event is encoded once, and the parts are joined from those texts. */
  private parts(answer: SearchAnswer): string[] {
    const room = (this.nc.info?.max_payload ?? 1_048_576) - PART_ENVELOPE_BYTES;
    const parts: string[] = [];
    let texts: string[] = [];
    let bytes = 0;
    const close = (more: boolean) =>
      parts.push(`{"events":[${texts.join(',')}],"truncated":${answer.truncated},"more":${more}}`);
    for (const event of answer.events) {
      const text = JSON.stringify(event);
      const size = Buffer.byteLength(text) + 1;
      if (size > room)
        return [
          JSON.stringify({
            error: `an event of this answer is ${size} bytes, more than NATS' max_payload allows in one message`,
          }),
        ];
      if (bytes + size > room) {
        close(true);
        texts = [];
        bytes = 0;
      }
      texts.push(text);
      bytes += size;
    }
    close(false);
    return parts;
  }

  private answer(request: QueryRequest): SearchAnswer | StatsAnswer {
    if (request.op === 'stats') return this.local.stats();
    const { stream, query, limit } = request;
    const allowed = this.local.maxSearchLimit();
    if (limit <= allowed) return this.local.search(stream, query, limit);
    // More than this node answers any client: the most it allows, said to be cut if there is more.
    const answer = this.local.search(stream, query, allowed + 1);
    return answer.events.length > allowed ? { events: answer.events.slice(0, allowed), truncated: true } : answer;
  }

  /** Asks each node (this one locally) and returns their answers, in the order of `nodes`. */
  async ask<T>(nodes: readonly string[], request: QueryRequest, expected: WireSchema<T>): Promise<T[]> {
    const payload = JSON.stringify(request);
    // The most events a search's parts may bring together: what it asked for.
    const maxEvents = request.op === 'search' ? request.limit : 0;
    return Promise.all(
      nodes.map(async (node) => {
        if (node === this.node) return this.answer(request) as T;
        const parts = await this.request(node, payload, expected, maxEvents);
        if (parts.length === 1) return parts[0] as T;
        // The parts of a search, put back together.
        const events = (parts as SearchAnswer[]).flatMap((part) => part.events);
        return { events, truncated: (parts as SearchAnswer[]).some((part) => part.truncated) } as T;
      }),
    );
  }

  /**
   * Sends a read to `node` and collects its answer's parts: each must check, and one announcing more must hold
   * events, all of them together no more than `maxEvents`. Waits `partMs` for the first part and for each next,
   * and `answerMs` for them all.
   */
  private request<T>(node: string, payload: string, expected: WireSchema<T>, maxEvents: number): Promise<T[]> {
    const reply = answerSubject(this.node);
    return new Promise<T[]>((resolve, reject) => {
      const parts: T[] = [];
      let events = 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = setTimeout(
        () => unavailable(`its answer took more than ${this.options.answerMs / 1000} s`),
        this.options.answerMs,
      );
      const finish = (error: Error | null) => {
        clearTimeout(timer);
        clearTimeout(deadline);
        subscription?.unsubscribe();
        if (error === null) resolve(parts);
        else reject(error);
      };
      const unavailable = (why: string) => {
        this.logger.warn({ node }, `cluster member ${node} did not answer an index read: ${why}`);
        finish(
          new ClusterUnavailableError(
            `cluster member ${node}, which runs part of this stream, did not answer (${why}); retry`,
          ),
        );
      };
      const refused = (reason: 'shape' | 'not_json', detail: string) => {
        this.refusals.refuse('queries', reason, `the answer of ${node} to an index read: ${detail}`, { node });
        finish(
          new ClusterUnavailableError(
            `cluster member ${node} answered something that is not an index read's answer (${detail}); retry`,
          ),
        );
      };
      const wait = () => {
        clearTimeout(timer);
        timer = setTimeout(() => unavailable('timeout'), this.options.partMs);
      };
      // A subscription of this read's own, under the answer prefix (above): several parts may come.
      let subscription: Subscription | undefined;
      try {
        subscription = this.nc.subscribe(reply, {
          callback: (error, message) => {
            if (error !== null) return unavailable(error.message);
            // No node listens on its subject: nats-server says so at once (a 503 status, no data).
            if (message.data.length === 0 && message.headers?.code === 503) return unavailable('no responders');
            let value: unknown;
            try {
              value = message.json();
            } catch (failure) {
              return refused('not_json', (failure as Error).message);
            }
            if (FAILED.validate(value).ok)
              return finish(
                new ClusterUnavailableError(
                  `cluster member ${node} could not answer: ${(value as { error: string }).error}`,
                ),
              );
            const answer = expected.validate(value);
            if (!answer.ok) return refused(answer.reason, answer.detail);
            const more = (value as { more?: unknown }).more === true;
            if (more || parts.length > 0) {
              const held = (value as SearchAnswer).events.length;
              events += held;
              if (events > maxEvents) return refused('shape', `more than the ${maxEvents} events asked for`);
              if (more && held === 0) return refused('shape', 'a part with no event that announces more');
            }
            parts.push(answer.value);
            if (more) wait();
            else finish(null);
          },
        });
        wait();
        this.nc.publish(querySubject(node), payload, { reply });
      } catch (error) {
        // The connection is closed or closing: the same 503 as a member that does not answer.
        unavailable((error as Error).message);
      }
    });
  }

  stop(): void {
    this.subscription?.unsubscribe();
    this.waiting.length = 0;
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
