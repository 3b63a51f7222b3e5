/**
 * Results everywhere (docs/cluster.md, "Results"): the node that ran a check keeps its result as a single node does
 * and publishes it on the JetStream stream `vigie_results` (subject `vigie.results.<node>`, batches of up to 500
 * results per message); every other node consumes the stream through its own durable consumer and keeps each result
 * too (latest, history, aggregates, gauges), so any node's API and dashboard show every check.
 *
 * While NATS is unreachable the results wait in a bounded queue (`cluster.max-buffered-results`; past it the oldest
 * are dropped, counted) and go out when it is back. Each batch carries a message ID, so a batch published twice
 * (its ack lost in a disconnect) is stored once (JetStream's duplicate window).
 *
 * A message read is untrusted (docs/cluster.md, "What a node does with what it reads"): a batch that is not JSON or
 * not a list of results is terminated (`term`: never delivered again) and refused; in a valid batch, a result that
 * names another node than the subject it came on (`impersonation`: the documented permissions let a node publish on
 * its own subject only), or is stamped more than `cluster.max-clock-skew` ahead of this node's clock (`future`: it
 * would hold the check's state over the real runs until then), is refused and the others are kept. Refusals are
 * counted in `cluster_messages_refused_total{source="results"}`. Each node heard from is told to `heard` (silent
 * members, src/cluster/membership/silent-members.ts).
 */
import { randomUUID } from 'node:crypto';
import type { AckPolicy, Consumer, DeliverPolicy, JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { type CheckResult, CheckResultSchema } from '../../healthcheck/cluster-port.ts';
import type { ClusterConnection } from '../connection.ts';
import { permissionsHint } from '../errors.ts';
import { addStreamIfAbsent } from '../nats.ts';
import { type MessageRefusals, WireSchema } from '../refusals.ts';
import { WakeableSleep } from '../wakeable-sleep.ts';

const RESULTS_STREAM = 'vigie_results';
const SUBJECT_PREFIX = 'vigie.results.';
const BATCH = 500;
/**
 * A result waits at most this long for others to go out with it. Each message costs a publish, a delivery and an
 * ack on every other node, whatever it carries (docs/performance.md, "Cluster"): at 50 ms a node of three published
 * 20 messages a second under 12,000 checks, and its NATS client took a fifth of its CPU.
 */
const LINGER_MS = 1_000;
/** Results are kept this long in the stream: a node down for longer misses the oldest (its uptime has gaps). */
const RETENTION_NS = 3_600 * 1e9;
const MAX_STREAM_BYTES = 1024 ** 3;
/** Deliveries of one message at most: one that cannot be stored after this many tries is given up (and counted by
 *  JetStream's advisories), never redelivered for ever. */
const MAX_DELIVER = 5;

/** A node publishes what it ran: results, never the state of a check with locations (each node computes that). */
const BATCH_SCHEMA = new WireSchema<CheckResult[]>(
  Type.Array(Type.Omit(CheckResultSchema, ['quorum', 'locations']), { maxItems: BATCH }),
);

export async function ensureResultsStream(jsm: JetStreamManager, replicas: number): Promise<void> {
  await addStreamIfAbsent(jsm, RESULTS_STREAM, SUBJECT_PREFIX, {
    max_age: RETENTION_NS,
    max_bytes: MAX_STREAM_BYTES,
    num_replicas: replicas,
    duplicate_window: 120 * 1e9,
  });
}

export class ResultMetrics {
  readonly published: Counter;
  readonly received: Counter;
  readonly dropped: Counter<'reason'>;

  constructor(registry: Registry) {
    this.published = new Counter({
      name: 'cluster_results_published_total',
      help: 'Results of checks this node ran, published to the cluster.',
      registers: [registry],
    });
    this.received = new Counter({
      name: 'cluster_results_received_total',
      help: 'Results of checks other nodes ran, stored here.',
      registers: [registry],
    });
    this.dropped = new Counter({
      name: 'cluster_results_dropped_total',
      help: 'Results not published (buffer_full: NATS unreachable for too long) or not stored (unknown_check: no such check here).',
      labelNames: ['reason'],
      registers: [registry],
    });
  }
}

/** The sink of the results this node runs: queued, published in batches. */
export class ResultPublisher {
  /** What waits is `queue` from `head` on: dropping the oldest at the cap moves `head`, where `shift()` moved every
   *  entry (97 µs a result at the default cap of 100,000, through a NATS outage). */
  private queue: (CheckResult | undefined)[] = [];
  private head = 0;
  private readonly pause = new WakeableSleep();
  private running = false;
  private pump: Promise<void> | null = null;
  private batchNumber = 0;
  /** Message IDs unique across restarts of this node. */
  private readonly boot = randomUUID();
  private lastError = 0;

  constructor(
    private readonly js: JetStreamClient,
    private readonly connection: ClusterConnection,
    private readonly node: string,
    private readonly maxBuffered: number,
    private readonly metrics: ResultMetrics,
    private readonly logger: Logger,
  ) {
    connection.onChange((connected) => {
      if (connected) this.pause.wake();
    });
  }

  /** A result sink (src/healthcheck/registry/registry.ts): returns at once, never throws. */
  readonly offer = (result: CheckResult): void => {
    if (this.waiting >= this.maxBuffered) {
      this.queue[this.head++] = undefined;
      this.metrics.dropped.inc({ reason: 'buffer_full' });
      this.compact();
    }
    this.queue.push(result);
    // The first result ends the pump's idle wait (it then lingers); a full batch ends the linger.
    const waiting = this.waiting;
    if (waiting === 1 || waiting >= BATCH) this.pause.wake();
  };

  /** Drops the slots before `head` once they are half of the array. */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  start(): void {
    this.running = true;
    this.pump = this.run();
  }

  private async run(): Promise<void> {
    while (this.running || this.waiting > 0) {
      if (this.waiting === 0) {
        if (!this.running) break;
        // Nothing to send: no timer, the next offer wakes the pump (an idle node does not wake for this).
        await this.pause.sleep(null);
        continue;
      }
      if (!this.connection.connected) {
        if (!this.running) break;
        await this.pause.sleep(1_000);
        continue;
      }
      // Lingers for the results that come after the first (a full batch, or a stop, goes at once).
      if (this.running && this.waiting < BATCH) await this.pause.sleep(LINGER_MS);
      if (this.waiting === 0 || !this.connection.connected) continue;
      const batch = this.queue.slice(this.head, this.head + BATCH) as CheckResult[];
      try {
        await this.js.publish(`${SUBJECT_PREFIX}${this.node}`, JSON.stringify(batch), {
          msgID: `${this.node}:${this.boot}:${this.batchNumber}`,
          timeout: 5_000,
        });
        this.batchNumber++;
        this.removeSent(batch);
        this.metrics.published.inc(batch.length);
      } catch (error) {
        if (Date.now() - this.lastError > 10_000) {
          this.lastError = Date.now();
          this.logger.warn(
            { err: error, waiting: this.queue.length },
            `cannot publish results to the cluster yet: ${(error as Error).message}${permissionsHint(error)}`,
          );
        }
        if (!this.running) break;
        await this.pause.sleep(1_000);
      }
    }
  }

  /**
   * Removes a published batch from the front. The cap may have dropped its oldest meanwhile: what is left of the
   * batch is then a tail of it, still at the front.
   */
  private removeSent(batch: readonly CheckResult[]): void {
    for (let i = 0; i < batch.length && this.head < this.queue.length; i++) {
      if (this.queue[this.head] === batch[i]) this.queue[this.head++] = undefined;
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else this.compact();
  }

  get waiting(): number {
    return this.queue.length - this.head;
  }

  /** Publishes what waits (for at most `graceMs`), then stops. */
  async stop(graceMs = 3_000): Promise<void> {
    this.running = false;
    this.pause.wake();
    await Promise.race([this.pump, new Promise((resolve) => setTimeout(resolve, graceMs))]);
  }
}

/** Durable consumer names allow letters, digits, `-` and `_`. */
function consumerName(node: string): string {
  return `results_${node.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** The other nodes' results, into this node's registry. */
export interface ResultConsumerOptions {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** This node: its own messages are acknowledged and skipped. */
  readonly node: string;
  /** Stores another node's result; false when this node does not know its check. */
  readonly record: (result: CheckResult) => boolean;
  /** A message of `node` held at least one result that was not refused. */
  readonly heard: (node: string) => void;
  readonly metrics: ResultMetrics;
  readonly refusals: MessageRefusals;
  /** `cluster.max-clock-skew`. */
  readonly maxClockSkewMs: number;
}

export class ResultConsumer {
  private messages: { stop(): void } | null = null;
  private consumer: Consumer | null = null;
  private readonly js: JetStreamClient;
  private readonly jsm: JetStreamManager;
  private readonly node: string;
  private readonly record: (result: CheckResult) => boolean;
  private readonly heard: (node: string) => void;
  private readonly metrics: ResultMetrics;
  private readonly refusals: MessageRefusals;
  private readonly maxClockSkewMs: number;

  constructor(options: ResultConsumerOptions) {
    this.js = options.js;
    this.jsm = options.jsm;
    this.node = options.node;
    this.record = options.record;
    this.heard = options.heard;
    this.metrics = options.metrics;
    this.refusals = options.refusals;
    this.maxClockSkewMs = options.maxClockSkewMs;
  }

  /** Starts consuming; resolves once what was published before is stored (or after `catchUpMs`). */
  async start(catchUpMs = 15_000): Promise<void> {
    const name = consumerName(this.node);
    let existing: number | undefined;
    try {
      existing = (await this.jsm.consumers.info(RESULTS_STREAM, name)).config.max_deliver;
    } catch {
      // New: from now on (a node joining does not import the stream's last hour).
      await this.jsm.consumers.add(RESULTS_STREAM, {
        durable_name: name,
        ack_policy: 'explicit' as AckPolicy,
        deliver_policy: 'new' as DeliverPolicy,
        max_ack_pending: 1_000,
        max_deliver: MAX_DELIVER,
      });
    }
    // A consumer created by an earlier version redelivered without end.
    if (existing !== undefined && existing !== MAX_DELIVER)
      await this.jsm.consumers.update(RESULTS_STREAM, name, { max_deliver: MAX_DELIVER });
    this.consumer = await this.js.consumers.get(RESULTS_STREAM, name);
    const pending = (await this.consumer.info()).num_pending;
    // Pull requests renewed every 5 s rather than 30: after a NATS server dies (a stream leader moves), the
    // consumer notices within seconds instead of half a minute.
    const messages = await this.consumer.consume({ max_messages: 100, expires: 5_000 });
    this.messages = messages;
    let handled = 0;
    let caughtUp!: () => void;
    const done = new Promise<void>((resolve) => (caughtUp = resolve));
    if (pending === 0) caughtUp();
    void (async () => {
      for await (const message of messages) {
        this.handle(message);
        if (++handled >= pending) caughtUp();
      }
    })();
    await Promise.race([done, new Promise((resolve) => setTimeout(resolve, catchUpMs))]);
  }

  /** Stores the results of another node's message; never throws (what it cannot process is terminated). */
  private handle(message: JsMsg): void {
    const node = message.subject.slice(SUBJECT_PREFIX.length);
    if (node === this.node) {
      message.ack();
      return;
    }
    const handled = this.refusals.guard('results', () => {
      const decoded = BATCH_SCHEMA.decode(message.data);
      if (!decoded.ok) {
        this.refusals.refuse(
          'results',
          decoded.reason,
          `message ${message.seq} on ${message.subject}: ${decoded.detail}`,
          { seq: message.seq },
        );
        message.term();
        return;
      }
      const latest = (Date.now() + this.maxClockSkewMs) / 1000;
      let received = 0;
      let unknown = 0;
      try {
        for (const result of decoded.value) {
          if (result.node !== node) {
            this.refusals.refuse(
              'results',
              'impersonation',
              `a result of ${result.name} on ${message.subject} names node ${JSON.stringify(result.node)}: a node publishes only its own`,
              { seq: message.seq },
            );
          } else if ('locations' in result || 'quorum' in result) {
            this.refusals.refuse(
              'results',
              'shape',
              `a result of ${result.name} from ${node} carries locations or a quorum: a run's result has neither`,
              { seq: message.seq },
            );
          } else if (result['healthcheck-timestamp'] > latest) {
            this.refusals.refuse(
              'results',
              'future',
              `a result of ${result.name} from ${node} is stamped ${result['healthcheck-timestamp']}, more than ${this.maxClockSkewMs / 1000} s ahead of this node's clock (cluster.max-clock-skew)`,
              { seq: message.seq },
            );
          } else {
            // One string for the node of every result of the message, rather than a copy each.
            result.node = node;
            if (this.record(result)) received++;
            else unknown++;
          }
        }
      } finally {
        // Counted once per message, not per result.
        if (received > 0) this.metrics.received.inc(received);
        if (unknown > 0) this.metrics.dropped.inc({ reason: 'unknown_check' }, unknown);
        if (received + unknown > 0) this.heard(node);
      }
      message.ack();
    });
    if (!handled) message.term();
  }

  stop(): void {
    this.messages?.stop();
  }
}
