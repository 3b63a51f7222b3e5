/**
 * The audit log of the whole cluster (docs/cluster.md, "Runtime state"): each node keeps recording the API changes
 * it takes in its own SQLite (src/server/audit-log.ts), stamped with its name, and publishes each row on the
 * JetStream stream `vigie_audit` (subject `vigie.audit.<node>`); every node consumes the stream through its own
 * durable consumer into its `audit_log`, so `GET /api/v1/audit` on any node lists the whole cluster's, in time order.
 *
 * Never stalled, never fooled:
 * - the API never waits for NATS: a row is written to SQLite as on a single node, and published from there in the
 *   background. While NATS is unreachable the rows wait in SQLite (`stream_seq` null), across restarts, and go out
 *   when it is back; a row the row cap (`http.audit.max-rows`) pushes out before then is never published;
 * - a row published twice (its acknowledgement lost) is stored once in the stream (JetStream's duplicate window) and
 *   a message delivered twice is stored once (unique on the node and the stream sequence);
 * - a node's consumer is durable: a node that was away reads on from where it stopped; a new node reads the stream
 *   from its start. The stream keeps `http.audit.retention` and `http.audit.max-rows` messages at most (of the node
 *   that created it), each at most 16 KiB: a flood pushes out the oldest, never fills the disk;
 * - what is read is untrusted: a message that is not JSON, not a row within the API's caps (512 code units a string),
 *   or stamped beyond `cluster.max-clock-skew` ahead is refused (`term`: never delivered again), as is a row naming
 *   another node than its subject's (`impersonation`: the shipped permissions let a node publish on its own subject
 *   only); refusals are counted in `cluster_messages_refused_total{source="audit"}`.
 */
import type {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from '@nats-io/jetstream';
import { Type } from '@sinclair/typebox';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import type { AuditMessage, AuditReplication, ReplicatedAuditLog } from '../server/audit-port.ts';
import type { AuditSettings } from '../server/settings.ts';
import type { ClusterConnection } from './connection.ts';
import { permissionsHint } from './errors.ts';
import { addStreamIfAbsent } from './nats.ts';
import { WakeableSleep } from './wakeable-sleep.ts';
import type { JoinedCluster } from './membership/node.ts';
import { type MessageRefusals, WireSchema } from './refusals.ts';

const AUDIT_STREAM = 'vigie_audit';
const SUBJECT_PREFIX = 'vigie.audit.';
/** The audit log's cut (src/server/audit-log.ts): a longer string is not one a node writes. */
const MAX_TEXT = 512;
const MAX_MESSAGE_BYTES = 16 * 1024;
/** Rows read from SQLite per round of the publisher, and messages per pull of the consumer. */
const BATCH = 100;
const MAX_DELIVER = 5;

const text = Type.String({ maxLength: MAX_TEXT });
const MESSAGE = new WireSchema<AuditMessage>(
  Type.Object(
    {
      node: text,
      id: Type.Integer({ minimum: 1 }),
      time: Type.Integer({ minimum: 0 }),
      principal: text,
      address: text,
      method: text,
      route: text,
      path: text,
      name: Type.Union([text, Type.Null()]),
      outcome: Type.Integer({ minimum: 100, maximum: 599 }),
    },
    { additionalProperties: false },
  ),
);

export class AuditMetrics {
  readonly published: Counter;
  readonly received: Counter;
  readonly publishFailures: Counter;

  constructor(registry: Registry) {
    this.published = new Counter({
      name: 'cluster_audit_published_total',
      help: "Rows of this node's audit log published to the cluster.",
      registers: [registry],
    });
    this.received = new Counter({
      name: 'cluster_audit_received_total',
      help: "Rows of other nodes' audit logs stored here.",
      registers: [registry],
    });
    this.publishFailures = new Counter({
      name: 'cluster_audit_publish_failures_total',
      help: 'Attempts to publish an audit row that failed (NATS unreachable): the row waits in SQLite and is tried again.',
      registers: [registry],
    });
  }
}

export interface ClusterAuditOptions {
  readonly node: string;
  readonly settings: AuditSettings;
  /** `cluster.max-clock-skew`. */
  readonly maxClockSkewMs: number;
  readonly registry: Registry;
  readonly logger: Logger;
}

/** The audit log's replication (src/server/audit-port.ts): started once this node has joined. */
export class ClusterAudit implements AuditReplication {
  readonly node: string;
  private log: ReplicatedAuditLog | null = null;
  private readonly metrics: AuditMetrics;
  private running = false;
  private pump: Promise<void> | null = null;
  private readonly pause = new WakeableSleep();
  private messages: { stop(): void } | null = null;
  private lastWarningMs = 0;

  constructor(private readonly options: ClusterAuditOptions) {
    this.node = options.node;
    this.metrics = new AuditMetrics(options.registry);
  }

  attach(log: ReplicatedAuditLog): void {
    this.log = log;
    log.onRecorded(() => this.pause.wake());
  }

  /** Creates the stream if needed, starts publishing and consuming; never throws (a failure is logged). */
  async start(joined: JoinedCluster, replicas: number): Promise<void> {
    const log = this.log;
    if (log === null || this.running) return;
    this.running = true;
    try {
      await this.ensureStream(joined.jsm, replicas);
      this.pump = this.publish(joined.js, joined.connection, log);
      joined.connection.onChange((connected) => {
        if (connected) this.pause.wake();
      });
      await this.consume(joined, log);
    } catch (error) {
      this.options.logger.error(
        { err: error },
        `the cluster's audit log cannot be followed: ${(error as Error).message}${permissionsHint(error)}`,
      );
    }
  }

  private async ensureStream(jsm: JetStreamManager, replicas: number): Promise<void> {
    await addStreamIfAbsent(jsm, AUDIT_STREAM, SUBJECT_PREFIX, {
      discard: 'old' as DiscardPolicy,
      max_age: this.options.settings.retentionMs * 1e6,
      max_msgs: this.options.settings.maxRows,
      max_msg_size: MAX_MESSAGE_BYTES,
      num_replicas: replicas,
      duplicate_window: 120 * 1e9,
    });
  }

  /** This node's rows not published yet, oldest first, one message each; waits in SQLite while NATS is away. */
  private async publish(js: JetStreamClient, connection: ClusterConnection, log: ReplicatedAuditLog): Promise<void> {
    const subject = `${SUBJECT_PREFIX}${this.node}`;
    while (this.running) {
      const rows = connection.connected ? log.unpublished(BATCH) : [];
      if (rows.length === 0) {
        await this.pause.sleep(connection.connected ? null : 1_000);
        continue;
      }
      try {
        for (const row of rows) {
          // The row's id and time: a row published again after a lost acknowledgement is the same message.
          const ack = await js.publish(subject, JSON.stringify(row), {
            msgID: `${this.node}:${row.id}:${row.time}`,
            timeout: 5_000,
          });
          log.published(row.id, ack.seq);
          this.metrics.published.inc();
        }
      } catch (error) {
        this.metrics.publishFailures.inc();
        if (Date.now() - this.lastWarningMs > 10_000) {
          this.lastWarningMs = Date.now();
          this.options.logger.warn(
            { err: error },
            `cannot publish the audit log to the cluster yet (its rows wait in SQLite): ${(error as Error).message}${permissionsHint(error)}`,
          );
        }
        await this.pause.sleep(1_000);
      }
    }
  }

  private async consume({ js, jsm, refusals }: JoinedCluster, log: ReplicatedAuditLog): Promise<void> {
    const name = `audit_${this.node.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    try {
      await jsm.consumers.info(AUDIT_STREAM, name);
    } catch {
      // From the stream's start: a new node lists the changes made before it joined.
      await jsm.consumers.add(AUDIT_STREAM, {
        durable_name: name,
        ack_policy: 'explicit' as AckPolicy,
        deliver_policy: 'all' as DeliverPolicy,
        max_ack_pending: 1_000,
        max_deliver: MAX_DELIVER,
      });
    }
    const consumer = await js.consumers.get(AUDIT_STREAM, name);
    const messages = await consumer.consume({ max_messages: BATCH, expires: 5_000 });
    this.messages = messages;
    void (async () => {
      for await (const message of messages) {
        if (!refusals.guard('audit', () => this.handle(message, log, refusals))) message.term();
      }
    })().catch((error: unknown) => {
      this.options.logger.error(
        { err: error },
        `the cluster's audit log is no longer followed: ${(error as Error).message}`,
      );
    });
  }

  private handle(message: JsMsg, log: ReplicatedAuditLog, refusals: MessageRefusals): void {
    const node = message.subject.slice(SUBJECT_PREFIX.length);
    if (node === this.node) {
      message.ack();
      return;
    }
    const refuse = (reason: Parameters<MessageRefusals['refuse']>[1], detail: string) => {
      refusals.refuse('audit', reason, `message ${message.seq} on ${message.subject}: ${detail}`, {
        seq: message.seq,
      });
      message.term();
    };
    const decoded = MESSAGE.decode(message.data);
    if (!decoded.ok) return refuse(decoded.reason, decoded.detail);
    const row = decoded.value;
    if (row.node !== node) {
      return refuse('impersonation', `a row naming node ${JSON.stringify(row.node)}: a node publishes only its own`);
    }
    if (row.time > Date.now() + this.options.maxClockSkewMs) {
      return refuse('future', `a row stamped ${row.time}, ahead of this node's clock (cluster.max-clock-skew)`);
    }
    const stored = log.store(row, message.seq);
    if (stored === 'failed') {
      // The disk, not the message: tried again a few times (max_deliver), counted by the log.
      message.nak(5_000);
      return;
    }
    if (stored === 'stored') this.metrics.received.inc();
    message.ack();
  }

  /** Stops consuming, and publishing after the row on its way (for at most `graceMs`). */
  async stop(graceMs = 2_000): Promise<void> {
    this.running = false;
    this.messages?.stop();
    this.pause.wake();
    await Promise.race([this.pump, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
  }
}
