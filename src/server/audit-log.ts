/**
 * The audit log's store (docs/http-api.md, "Audit log"): one row of SQLite's `audit_log` per API change, written
 * as its answer goes out (src/server/audit-routes.ts), read back newest first.
 *
 * Never stalled, never fooled:
 * - each change is one synchronous INSERT, nothing waits in memory: API changes are rare, and a flood of them
 *   costs SQLite writes, never a queue that grows;
 * - a write that fails (a full disk) is counted in `audit_write_failures_total` and logged at most once a minute;
 *   the request it was about is answered as if nothing happened;
 * - every string is truncated, so that a hostile client cannot write megabytes per row;
 * - the changes refused at the authentication-failure limit are counted (`audit_rows_skipped_total`), not written:
 *   an address writes at most `http.max-auth-failures` refused rows a window, whatever it sends;
 * - the row cap (`http.audit.max-rows`) holds at every insert, the retention (`http.audit.retention`) at startup
 *   and hourly: an idle service wakes up once an hour for it.
 *
 * In a cluster (src/server/audit-port.ts) each row is stamped with the node that took it, published by the cluster
 * part, and the rows of the other nodes are stored here too: the list is the whole cluster's, in time order.
 */
import type { Static } from '@sinclair/typebox';
import type { Statement } from 'better-sqlite3';
import { and, desc, eq, lt, sql } from 'drizzle-orm';
import { Counter, type Registry } from 'prom-client';
import type { Db } from '../db/client.ts';
import { auditLog } from '../db/schema.ts';
import type { AuditChange, AuditMessage, ReplicatedAuditLog } from './audit-port.ts';
import type { AuditPage } from './audit-wire.ts';
import type { AuditSettings } from './settings.ts';

/** One API change, as the hook sees it. */
export interface AuditEntry extends AuditChange {
  /** When the request was received (milliseconds since the epoch); now when absent. */
  receivedAtMs?: number;
}

export interface AuditQuery {
  limit: number;
  /** Only rows of a smaller id: the `next` of the previous page. */
  before?: number | undefined;
  principal?: string | undefined;
  name?: string | undefined;
}

/** The longest string kept in a row, in UTF-16 code units: longer ones are cut. */
const MAX_TEXT = 512;
const PRUNE_INTERVAL_MS = 3_600_000;
const WARNING_INTERVAL_MS = 60_000;

export interface AuditLogOptions {
  registry: Registry;
  warn: (message: string) => void;
  /** In a cluster, this node's name, stamped on the rows it takes. */
  node?: string | null;
  /** The clock, for tests. */
  now?: () => number;
}

export class AuditLog implements ReplicatedAuditLog {
  private readonly insert: Statement;
  private readonly insertReceived: Statement;
  private readonly selectUnpublished: Statement<[string, number]>;
  private readonly markPublished: Statement<[number, number]>;
  private readonly storeAndCap: (values: unknown[]) => number;
  private readonly node: string | null;
  private recorded: (() => void) | null = null;
  private readonly cap: Statement<[number]>;
  private readonly expire: Statement<[number]>;
  private readonly writeAndCap: (values: unknown[]) => void;
  private readonly failures: Counter;
  private readonly skipped: Counter<'reason'>;
  private readonly warn: (message: string) => void;
  private readonly now: () => number;
  private lastWarningMs = -Infinity;
  private failedSinceWarning = 0;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly db: Db,
    private readonly settings: AuditSettings,
    options: AuditLogOptions,
  ) {
    const sqlite = db.$client;
    this.insert = sqlite.prepare(
      'insert into audit_log (at_ms, principal, address, method, route, path, name, outcome, node) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    // Another node's row: a message delivered twice (its acknowledgement lost) is ignored the second time.
    this.insertReceived = sqlite.prepare(
      'insert or ignore into audit_log (at_ms, principal, address, method, route, path, name, outcome, node, stream_seq) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    // A seek on the (node, stream_seq) index: this node's rows whose stream_seq is still null.
    this.selectUnpublished = sqlite.prepare(
      'select id, at_ms as time, principal, address, method, route, path, name, outcome from audit_log where node = ? and stream_seq is null order by id limit ?',
    );
    this.markPublished = sqlite.prepare('update audit_log set stream_seq = ? where id = ?');
    // Ids only grow (AUTOINCREMENT never reuses one), so the newest max-rows rows are those above max(id) - max-rows:
    // a seek on the primary key, deleting the one row an insert pushes out.
    this.cap = sqlite.prepare('delete from audit_log where id <= (select coalesce(max(id), 0) from audit_log) - ?');
    this.expire = sqlite.prepare('delete from audit_log where at_ms < ?');
    this.writeAndCap = sqlite.transaction((values: unknown[]) => {
      this.insert.run(...values);
      this.cap.run(this.settings.maxRows);
    });
    this.storeAndCap = sqlite.transaction((values: unknown[]) => {
      const { changes } = this.insertReceived.run(...values);
      if (changes > 0) this.cap.run(this.settings.maxRows);
      return changes;
    });
    this.node = options.node ?? null;
    this.failures = new Counter({
      name: 'audit_write_failures_total',
      help: 'API changes the audit log could not record (a full disk): the requests were answered all the same.',
      registers: [options.registry],
    });
    this.skipped = new Counter({
      name: 'audit_rows_skipped_total',
      help: 'API changes not written to the audit log (auth_limited: refused at http.max-auth-failures, whose first refusals were written).',
      labelNames: ['reason'],
      registers: [options.registry],
    });
    this.warn = options.warn;
    this.now = options.now ?? Date.now;
    this.prune();
    this.timer = setInterval(() => this.prune(), PRUNE_INTERVAL_MS).unref();
  }

  /** Records a change; never throws. */
  record(entry: AuditEntry): void {
    try {
      this.writeAndCap([
        entry.receivedAtMs ?? this.now(),
        cut(entry.principal),
        cut(entry.address),
        cut(entry.method),
        cut(entry.route),
        cut(entry.path),
        entry.name === null ? null : cut(entry.name),
        entry.outcome,
        this.node,
      ]);
    } catch (error) {
      this.failed('record an API change', error);
      return;
    }
    this.recorded?.();
  }

  onRecorded(listener: () => void): void {
    this.recorded = listener;
  }

  unpublished(limit: number): AuditMessage[] {
    if (this.node === null) return [];
    const node = this.node;
    try {
      return (this.selectUnpublished.all(node, limit) as Omit<AuditMessage, 'node'>[]).map((row) => ({ ...row, node }));
    } catch (error) {
      this.failed('read the rows to publish', error);
      return [];
    }
  }

  published(id: number, streamSeq: number): void {
    try {
      this.markPublished.run(streamSeq, id);
    } catch (error) {
      this.failed('mark a row published', error);
    }
  }

  store(row: AuditMessage, streamSeq: number): 'stored' | 'duplicate' | 'failed' {
    try {
      const changes = this.storeAndCap([
        row.time,
        cut(row.principal),
        cut(row.address),
        cut(row.method),
        cut(row.route),
        cut(row.path),
        row.name === null ? null : cut(row.name),
        row.outcome,
        row.node,
        streamSeq,
      ]);
      return changes > 0 ? 'stored' : 'duplicate';
    } catch (error) {
      this.failed(`store a change taken by ${row.node}`, error);
      return 'failed';
    }
  }

  /** A change not written, counted with its reason. */
  skip(reason: 'auth_limited'): void {
    this.skipped.inc({ reason });
  }

  /** Drops the rows past the retention, and the oldest past the row cap (lowered since the last start); answers
   *  how many went. Never throws. */
  prune(): number {
    try {
      return (
        this.expire.run(this.now() - this.settings.retentionMs).changes + this.cap.run(this.settings.maxRows).changes
      );
    } catch (error) {
      this.failed('drop its old rows', error);
      return 0;
    }
  }

  /**
   * Newest first (by time, then id: a cluster's rows arrive out of time order); `next` is set when older rows may
   * remain (the `before` of the next page: the id of the page's last row, whose time places the next page).
   */
  list({ limit, before, principal, name }: AuditQuery): Static<typeof AuditPage> {
    const rows = this.db
      .select()
      .from(auditLog)
      .where(
        and(
          this.olderThan(before),
          principal === undefined ? undefined : eq(auditLog.principal, principal),
          name === undefined ? undefined : eq(auditLog.name, name),
        ),
      )
      .orderBy(desc(auditLog.atMs), desc(auditLog.id))
      .limit(limit + 1)
      .all();
    const result = rows
      .slice(0, limit)
      .map(({ id, atMs, principal, address, method, route, path, name, outcome, node }) => ({
        id,
        time: atMs,
        principal,
        address,
        method,
        route,
        path,
        name,
        outcome,
        // Absent on a single node: its rows are as they always were.
        ...(node === null ? {} : { node }),
      }));
    const last = result.at(-1);
    return rows.length > limit && last !== undefined ? { result, next: last.id } : { result };
  }

  /** The rows after row `before` in the list's order; those of smaller ids when that row is gone (pruned). */
  private olderThan(before: number | undefined) {
    if (before === undefined) return undefined;
    const at = this.db.select({ atMs: auditLog.atMs }).from(auditLog).where(eq(auditLog.id, before)).get();
    if (at === undefined) return lt(auditLog.id, before);
    return sql`(${auditLog.atMs}, ${auditLog.id}) < (${at.atMs}, ${before})`;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private failed(what: string, error: unknown): void {
    this.failures.inc();
    this.failedSinceWarning++;
    const now = this.now();
    if (now - this.lastWarningMs < WARNING_INTERVAL_MS) return;
    const others = this.failedSinceWarning - 1;
    this.warn(
      `the audit log could not ${what} (${(error as Error).message}); requests are answered all the same` +
        (others > 0
          ? ` (${others} other failures since the last warning; audit_write_failures_total counts them)`
          : ''),
    );
    this.lastWarningMs = now;
    this.failedSinceWarning = 0;
  }
}

/** At most MAX_TEXT code units, never half of a surrogate pair. */
function cut(text: string): string {
  if (text.length <= MAX_TEXT) return text;
  const end = /[\uD800-\uDBFF]/.test(text.charAt(MAX_TEXT - 1)) ? MAX_TEXT - 1 : MAX_TEXT;
  return text.slice(0, end);
}
