/**
 * The event log that feeds the engine (docs/durability.md, "The journal"): every batch an input acknowledges is
 * appended before the acknowledgement goes out, a checkpoint records how far the engine had got in it, and
 * startup replays what comes after the newest checkpoint. `EventLog` is the seam: a single node's log is this
 * journal in SQLite; a cluster node's is a JetStream subject per partition.
 *
 * Group commit: appends made while the event loop serves one batch of I/O are written by one transaction, on
 * the next turn (`setImmediate`), and each append's `durable` promise settles with it. In WAL mode with
 * `synchronous=NORMAL` a committed transaction survives the process being killed (an OS crash may lose the
 * last ones), which is the guarantee the rest of the database gives.
 */
import type Database from 'better-sqlite3';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Event } from './event.ts';

/** How far the engine got in the log: every entry before `seq`, and the first `offset` events of entry `seq`. */
export interface LogPosition {
  readonly seq: number;
  readonly offset: number;
}

export const LOG_START: LogPosition = { seq: 0, offset: 0 };

export interface LogEntry {
  readonly seq: number;
  /** A stream name, or `default`. */
  readonly target: string;
  /** The input that acknowledged it (`stream`, `remote-write`, `riemann-tcp`...). */
  readonly input: string;
  readonly events: Event[];
}

export interface LogAppend {
  readonly seq: number;
  /** Settles once the entry is durable: the input may acknowledge it then, and not before. */
  readonly durable: Promise<void>;
}

export interface EventLog {
  append(target: string, events: readonly Event[], input: string): LogAppend;
  /** The entries a checkpoint at `position` does not cover, in order (the first may be partly covered). */
  entriesAfter(position: LogPosition): Iterable<LogEntry>;
  /**
   * Everything up to `position` is in a committed checkpoint: the log drops it, a part at a time until
   * `deadline` (performance.now()) so that a long journal does not hold the loop; true once it is all dropped.
   */
  truncate(position: LogPosition, deadline: number): boolean;
  /** Writes the appends waiting for their group commit now (at stop). */
  flush(): void;
}

/** Journal rows read at a time during replay. */
const REPLAY_PAGE = 64;
/** Journal rows deleted per statement when a checkpoint truncates it (each may hold a 16 MB batch). */
const TRUNCATE_BATCH = 16;

/** Thrown to the inputs whose batch could not be written: they answer 503 and the sender retries. */
export class JournalWriteError extends Error {}

interface PendingAppend {
  readonly seq: number;
  readonly target: string;
  readonly input: string;
  readonly count: number;
  readonly json: string;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

interface JournalMetrics {
  readonly entries: Counter;
  readonly bytes: Counter;
  readonly commit: Histogram;
  readonly failures: Counter;
}

function journalMetrics(registry: Registry): JournalMetrics {
  const registers = [registry];
  return {
    entries: new Counter({ name: 'stream_journal_entries_total', help: 'Batches of events written to the journal.', registers }),
    bytes: new Counter({ name: 'stream_journal_bytes_total', help: 'Bytes of events (JSON) written to the journal.', registers }),
    commit: new Histogram({
      name: 'stream_journal_commit_seconds',
      help: 'Time of one group commit of the journal (one transaction for the batches that arrived together).',
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5],
      registers,
    }),
    failures: new Counter({ name: 'stream_journal_failures_total', help: 'Group commits of the journal that failed (their batches were refused with 503).', registers }),
  };
}

export class SqliteJournal implements EventLog {
  private nextSeq: number;
  private pending: PendingAppend[] = [];
  private scheduled: NodeJS.Immediate | null = null;
  private readonly insert: Database.Statement;
  private readonly deleteBefore: Database.Statement;
  private readonly metrics: JournalMetrics;

  constructor(
    private readonly client: Database.Database,
    registry: Registry,
  ) {
    const last = client.prepare<[], { seq: number | null }>('select max(seq) as seq from stream_journal').get();
    this.nextSeq = (last?.seq ?? 0) + 1;
    this.insert = client.prepare('insert into stream_journal (seq, received_at_ms, input, target, event_count, events) values (?, ?, ?, ?, ?, ?)');
    this.deleteBefore = client.prepare('delete from stream_journal where seq in (select seq from stream_journal where seq < ? order by seq limit ?)');
    this.metrics = journalMetrics(registry);
  }

  append(target: string, events: readonly Event[], input: string): LogAppend {
    const seq = this.nextSeq++;
    const json = JSON.stringify(events);
    const durable = new Promise<void>((resolve, reject) => {
      this.pending.push({ seq, target, input, count: events.length, json, resolve, reject });
    });
    this.scheduled ??= setImmediate(this.commit);
    return { seq, durable };
  }

  flush(): void {
    if (this.scheduled !== null) clearImmediate(this.scheduled);
    this.commit();
  }

  *entriesAfter(position: LogPosition): Iterable<LogEntry> {
    // Read in pages, not through one open iterator: pushing the events may use the connection meanwhile.
    const page = this.client.prepare<[number], { seq: number; target: string; input: string; events: string }>(
      `select seq, target, input, events from stream_journal where seq >= ? order by seq limit ${REPLAY_PAGE}`,
    );
    for (let from = position.seq; ; ) {
      const rows = page.all(from);
      for (const row of rows) {
        const events = JSON.parse(row.events) as Event[];
        if (row.seq === position.seq) {
          if (position.offset >= events.length) continue;
          events.splice(0, position.offset);
        }
        yield { seq: row.seq, target: row.target, input: row.input, events };
      }
      if (rows.length < REPLAY_PAGE) return;
      from = (rows.at(-1)?.seq ?? from) + 1;
    }
  }

  truncate(position: LogPosition, deadline: number): boolean {
    // Entry `seq` may still have events after `offset`: it goes with the next truncation.
    for (;;) {
      if (this.deleteBefore.run(position.seq, TRUNCATE_BATCH).changes < TRUNCATE_BATCH) return true;
      if (performance.now() >= deadline) return false;
    }
  }

  private readonly commit = (): void => {
    this.scheduled = null;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    const started = performance.now();
    const receivedAtMs = Date.now();
    let bytes = 0;
    try {
      this.client.transaction(() => {
        for (const entry of batch) {
          this.insert.run(entry.seq, receivedAtMs, entry.input, entry.target, entry.count, entry.json);
          bytes += entry.json.length;
        }
      })();
    } catch (error) {
      this.metrics.failures.inc();
      const failure = new JournalWriteError(`the journal could not be written: ${(error as Error).message}`);
      for (const entry of batch) entry.reject(failure);
      return;
    }
    this.metrics.commit.observe((performance.now() - started) / 1000);
    this.metrics.entries.inc(batch.length);
    this.metrics.bytes.inc(bytes);
    for (const entry of batch) entry.resolve();
  };
}
