/**
 * Publishes to JetStream and hands each publish's acknowledgement to a callback (bench/JOURNAL.md, "Cluster:
 * streams"). `JetStreamClient.publish` makes a request per message: a promise, a timer and, even when it succeeds,
 * two `Error` objects with their stack traces (the request's context and its "cancelled" rejection), a fifth of
 * what a node taking events spent on them. Here every publish names a reply subject under one inbox of this
 * node, answered by one subscription; the deadlines are swept by one timer.
 *
 * What counts as acknowledged is what `JetStreamClient.publish` counts: a reply of JetStream's that names the
 * stream and a sequence. Anything else (an error reply, a "no responders" status when no server stores the subject,
 * no reply within the timeout, a connection that drops it) fails the publish, and its inputs answer 503.
 */
import { randomBytes } from 'node:crypto';
import type { Msg, NatsConnection } from '@nats-io/transport-node';

/** Called once per publish: no error when JetStream stored the message. */
export type Acknowledged = (error?: Error) => void;

export interface LogPublisher {
  publish(subject: string, data: Uint8Array, done: Acknowledged): void;
}

/** How often waiting publishes are checked against their deadline. */
const SWEEP_MS = 500;

interface Waiting {
  readonly done: Acknowledged;
  readonly deadline: number;
}

export class AckedPublisher implements LogPublisher {
  private readonly inbox = `_INBOX.${randomBytes(12).toString('hex')}.`;
  private readonly waiting = new Map<string, Waiting>();
  private next = 0;
  private sweeper: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly nc: NatsConnection,
    /** The stream every acknowledgement must name. */
    private readonly stream: string,
    private readonly timeoutMs: number,
  ) {
    // Unsubscribed with the connection: publishes still waiting then fail by their deadline.
    nc.subscribe(`${this.inbox}*`, { callback: (error, msg) => (error === null ? this.reply(msg) : undefined) });
  }

  publish(subject: string, data: Uint8Array, done: Acknowledged): void {
    const token = (this.next++).toString(36);
    this.waiting.set(token, { done, deadline: Date.now() + this.timeoutMs });
    this.sweeper ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
    try {
      this.nc.publish(subject, data, { reply: this.inbox + token });
    } catch (error) {
      this.settle(token, error as Error);
    }
  }

  private reply(msg: Msg): void {
    const token = msg.subject.slice(this.inbox.length);
    if (!this.waiting.has(token)) return;
    let problem: string | undefined;
    if (msg.data.length === 0)
      problem =
        msg.headers?.code === 503
          ? 'no JetStream server answers for this subject'
          : `an empty reply (${msg.headers?.code ?? 'no status'})`;
    else {
      try {
        const ack = JSON.parse(msg.string()) as { stream?: unknown; seq?: unknown; error?: { description?: unknown } };
        if (ack.error !== undefined) problem = String(ack.error.description ?? 'an error');
        else if (ack.stream !== this.stream || typeof ack.seq !== 'number')
          problem = 'not an acknowledgement of the event log';
      } catch {
        problem = 'a reply that is not JSON';
      }
    }
    this.settle(token, problem === undefined ? undefined : new Error(problem));
  }

  private settle(token: string, error: Error | undefined): void {
    const waiting = this.waiting.get(token);
    if (waiting === undefined) return;
    this.waiting.delete(token);
    if (this.waiting.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
    waiting.done(error);
  }

  /** Deadlines grow with insertion order: the oldest are first. */
  private sweep(): void {
    const now = Date.now();
    for (const [token, waiting] of this.waiting) {
      if (waiting.deadline > now) break;
      this.settle(token, new Error(`no acknowledgement within ${this.timeoutMs} ms`));
    }
  }
}
