/**
 * The event log that feeds the engine (docs/durability.md, "The journal"): every batch an input acknowledges is
 * appended before the acknowledgement goes out, a checkpoint records how far the engine had got in it, and
 * startup replays what comes after the newest checkpoint (src/stream/durability/journal-log.ts: the journal as the
 * single node's partition reads it, src/stream/durability/event-log.ts).
 *
 * On a single node the journal is a directory of append-only segment files (`<data-dir>/journal/`), not SQLite
 * rows: a batch is written once, sequentially, and a checkpoint drops whole segments, where SQLite wrote every
 * batch twice (its WAL, then the database file) and deleted it page by page (docs/performance.md, "Journal").
 *
 * Group commit: one write is in flight at a time (on libuv's thread pool, off the event loop); the batches
 * appended meanwhile go together in the next one, and each batch's `durable` settles when its write returns. A
 * written batch is in the OS's page cache: it survives the process being killed, not the OS crashing, the same
 * guarantee the SQLite database gives at `synchronous=NORMAL`.
 */
import {
  closeSync,
  copyFileSync,
  ftruncate,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writev,
} from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { LogEntry, LogPosition, LogRecord } from './event-log.ts';
import { decodeRecords, encodeRecord, type ScanDamage, scanRecords } from './journal-format.ts';

export interface LogAppend {
  readonly seq: number;
  /** Settles once the entry is durable: the input may acknowledge it then, and not before. */
  readonly durable: Promise<void>;
}

export interface EventLog {
  append(record: LogRecord): LogAppend;
  /** The entries a checkpoint at `position` does not cover, in order; the first may be entry `position.seq`, whose
   *  first `position.offset` events are covered. */
  entriesAfter(position: LogPosition): Iterable<LogEntry>;
  /** Everything up to `position` is in a committed checkpoint: the log may drop it. */
  truncate(position: LogPosition): void;
  /** Writes what waits, waits for what is in flight, and closes (at stop); appends are refused afterwards, and a
   *  truncation may drop every segment. */
  close(): Promise<void>;
}

/** Thrown to the inputs whose batch could not be written: they answer 503 and the sender retries. */
export class JournalWriteError extends Error {}

/** A segment is closed and a new one started past this size; whole segments are what a checkpoint drops. */
const SEGMENT_BYTES = 64 * 1024 * 1024;
const SEGMENT_NAME = /^(\d{16})\.log$/;
/** A damaged segment as it was found, kept for a person to look at (docs/durability.md, "Damage"). */
const DAMAGED_SUFFIX = '.damaged';
/** A repaired segment being written; renamed over the segment once whole. */
const REPAIR_SUFFIX = '.repair';
/** `streams.journal-damaged-segments` by default: enough to compare a few occurrences, at most 64 MB each. */
export const DEFAULT_KEPT_DAMAGED = 3;

interface Segment {
  readonly firstSeq: number;
  readonly path: string;
  /** The last sequence number written to it (firstSeq - 1 while empty). */
  lastSeq: number;
  bytes: number;
}

interface Pending {
  readonly seq: number;
  readonly buffers: Buffer[];
  readonly bytes: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

interface JournalMetrics {
  readonly entries: Counter;
  readonly bytes: Counter;
  readonly write: Histogram;
  readonly failures: Counter;
  readonly damaged: Counter;
}

function journalMetrics(registry: Registry, journal: FileJournal): JournalMetrics {
  const registers = [registry];
  new Gauge({
    name: 'stream_journal_bytes',
    help: 'Bytes in the journal segments not yet dropped by a checkpoint.',
    registers,
    collect() {
      this.set(journal.bytes);
    },
  });
  return {
    entries: new Counter({
      name: 'stream_journal_entries_total',
      help: 'Batches of events written to the journal.',
      registers,
    }),
    bytes: new Counter({
      name: 'stream_journal_written_bytes_total',
      help: 'Bytes written to the journal.',
      registers,
    }),
    write: new Histogram({
      name: 'stream_journal_write_seconds',
      help: 'Time of one group write of the journal (the batches appended while the previous one was in flight).',
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5],
      registers,
    }),
    failures: new Counter({
      name: 'stream_journal_failures_total',
      help: 'Group writes of the journal that failed (their batches were refused with 503).',
      registers,
    }),
    damaged: new Counter({
      name: 'stream_journal_damaged_records_total',
      help: 'Damaged journal records skipped at startup (a damaged stretch of a segment counts as one, as does a record whose events are refused); the records around them were replayed.',
      registers,
    }),
  };
}

export class FileJournal implements EventLog {
  private readonly segments: Segment[] = [];
  private fd: number;
  private nextSeq: number;
  private pending: Pending[] = [];
  private inFlight: Promise<void> | null = null;
  private closed = false;
  private readonly metrics: JournalMetrics;

  constructor(
    private readonly directory: string,
    registry: Registry,
    private readonly logger: Logger,
    /** How many damaged segments are kept as found (`streams.journal-damaged-segments`). */
    private readonly keepDamaged = DEFAULT_KEPT_DAMAGED,
  ) {
    mkdirSync(directory, { recursive: true });
    this.metrics = journalMetrics(registry, this);
    for (const name of readdirSync(directory).sort()) {
      // A repair the previous run was killed in the middle of: its segment is still as it was found.
      if (name.endsWith(REPAIR_SUFFIX)) rmSync(join(directory, name), { force: true });
      const match = SEGMENT_NAME.exec(name);
      if (match === null) continue;
      const path = join(directory, name);
      this.segments.push({
        firstSeq: Number(match[1]),
        path,
        lastSeq: Number(match[1]) - 1,
        bytes: statSync(path).size,
      });
    }
    // The last sequence number is in the last segment that holds a record; appends go to a new segment, so that
    // a record cut short at the end of the old one (the process was killed in the middle of a write) stays last.
    let lastSeq = 0;
    for (const segment of this.segments) {
      this.recover(segment);
      lastSeq = Math.max(lastSeq, segment.lastSeq, segment.firstSeq - 1);
    }
    this.nextSeq = lastSeq + 1;
    this.fd = this.openSegment(this.nextSeq);
  }

  /** Bytes in the segments still kept. */
  get bytes(): number {
    let total = 0;
    for (const segment of this.segments) total += segment.bytes;
    return total;
  }

  append(record: LogRecord): LogAppend {
    if (this.closed)
      return {
        seq: this.nextSeq - 1,
        durable: Promise.reject(new JournalWriteError('the journal is closed: the service is stopping')),
      };
    const seq = this.nextSeq++;
    const buffers = encodeRecord(seq, record);
    let bytes = 0;
    for (const buffer of buffers) bytes += buffer.length;
    const durable = new Promise<void>((resolve, reject) => this.pending.push({ seq, buffers, bytes, resolve, reject }));
    this.inFlight ??= this.writeNext();
    return { seq, durable };
  }

  *entriesAfter(position: LogPosition): Iterable<LogEntry> {
    for (const segment of [...this.segments]) {
      if (segment.lastSeq < position.seq) continue;
      for (const entry of this.read(segment)) {
        if (entry.seq > position.seq || (entry.seq === position.seq && position.offset < entry.count)) yield entry;
      }
    }
  }

  truncate(position: LogPosition): void {
    // A segment goes once every entry in it is covered; the one being written to is closed first when it is.
    const current = this.segments.at(-1);
    if (
      !this.closed &&
      current !== undefined &&
      current.bytes > 0 &&
      current.lastSeq < position.seq &&
      this.inFlight === null
    )
      this.rotate();
    while (this.segments.length > (this.closed ? 0 : 1)) {
      const oldest = this.segments[0] as Segment;
      if (oldest.lastSeq >= position.seq) break;
      rmSync(oldest.path, { force: true });
      this.segments.shift();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.inFlight !== null) await this.inFlight;
    closeSync(this.fd);
  }

  /** An entry read back whose events are refused (src/stream/durability/journal-records.ts): skipped, logged and
   * counted as
   *  damage, so that the start goes on. */
  skipRefused(entry: LogEntry, problem: string): void {
    this.metrics.damaged.inc();
    this.logger.error(
      { seq: entry.seq, target: entry.target, input: entry.input },
      `journal entry ${entry.seq} (${entry.count} events of ${entry.input}) skipped: its events are refused (${problem})`,
    );
  }

  /** A segment's records; what does not check was reported (and the segment repaired) when the journal opened. */
  private read(segment: Segment): Iterable<LogEntry> {
    return decodeRecords(readFileSync(segment.path), () => undefined);
  }

  /**
   * Reads a segment when the journal opens: its last sequence number, and its damage. A damaged record costs that
   * record only (src/stream/durability/journal-format.ts resyncs past it): the damage is counted and logged once, the
   * segment is kept as found (`<segment>.damaged`, the newest `keepDamaged` of them) and rewritten with the
   * records that check, so that the next start neither counts nor reports it again.
   */
  private recover(segment: Segment): void {
    const data = readFileSync(segment.path);
    const records: Buffer[] = [];
    const damage: ScanDamage[] = [];
    for (const item of scanRecords(data)) {
      if (item.kind === 'record') {
        segment.lastSeq = item.entry.seq;
        records.push(data.subarray(item.start, item.end));
      } else if (item.cutShort) {
        this.logger.warn(
          { segment: segment.path, offset: item.start },
          `journal segment ${segment.path}: a record cut short at byte ${item.start} (a write the process was killed in; never acknowledged) is ignored`,
        );
      } else damage.push(item);
    }
    if (damage.length === 0) return;
    this.metrics.damaged.inc(damage.length);
    const where = damage.map((item) => `byte ${item.start}: ${item.problem}`).join('; ');
    const found = `journal segment ${segment.path}: ${damage.length} damaged record(s) skipped (${where}); the records around them are replayed`;
    try {
      if (this.keepDamaged > 0) copyFileSync(segment.path, segment.path + DAMAGED_SUFFIX);
      const repaired = Buffer.concat(records);
      writeFileSync(segment.path + REPAIR_SUFFIX, repaired);
      renameSync(segment.path + REPAIR_SUFFIX, segment.path);
      segment.bytes = repaired.length;
      this.pruneDamaged();
      const kept =
        this.keepDamaged > 0
          ? `kept as found in ${segment.path}${DAMAGED_SUFFIX}`
          : 'not kept (streams.journal-damaged-segments: 0)';
      this.logger.error(
        { segment: segment.path, damaged: damage.length },
        `${found}; the segment is ${kept}, and rewritten without them`,
      );
    } catch (error) {
      rmSync(segment.path + REPAIR_SUFFIX, { force: true });
      this.logger.error(
        { segment: segment.path, damaged: damage.length, err: error },
        `${found}; it could not be rewritten (${(error as Error).message}): every start reads past the damage again`,
      );
    }
  }

  /** Keeps the newest `keepDamaged` damaged segments (the highest sequence numbers): each may be 64 MB. */
  private pruneDamaged(): void {
    const kept = readdirSync(this.directory)
      .filter((name) => name.endsWith(DAMAGED_SUFFIX))
      .sort();
    for (const name of kept.slice(0, Math.max(0, kept.length - this.keepDamaged)))
      rmSync(join(this.directory, name), { force: true });
  }

  private openSegment(firstSeq: number): number {
    const path = join(this.directory, `${String(firstSeq).padStart(16, '0')}.log`);
    const fd = openSync(path, 'a');
    // An empty segment left by the previous run starts at the same number: it is this one.
    if (this.segments.at(-1)?.firstSeq !== firstSeq)
      this.segments.push({ firstSeq, path, lastSeq: firstSeq - 1, bytes: 0 });
    return fd;
  }

  /** Writes everything appended so far in one `writev`, then the next group, until nothing waits. */
  private async writeNext(): Promise<void> {
    while (this.pending.length > 0) {
      const group = this.pending;
      this.pending = [];
      const buffers: Buffer[] = [];
      let bytes = 0;
      for (const entry of group) {
        for (const buffer of entry.buffers) buffers.push(buffer);
        bytes += entry.bytes;
      }
      const started = performance.now();
      try {
        await writeAll(this.fd, buffers);
      } catch (error) {
        this.metrics.failures.inc();
        const failure = new JournalWriteError(`the journal could not be written: ${(error as Error).message}`);
        for (const entry of group) entry.reject(failure);
        await this.discardFailedWrite();
        continue;
      }
      this.metrics.write.observe((performance.now() - started) / 1000);
      this.metrics.entries.inc(group.length);
      this.metrics.bytes.inc(bytes);
      const segment = this.segments.at(-1) as Segment;
      segment.lastSeq = (group.at(-1) as Pending).seq;
      segment.bytes += bytes;
      for (const entry of group) entry.resolve();
      if (segment.bytes >= SEGMENT_BYTES) this.rotate();
    }
    this.inFlight = null;
  }

  /**
   * Cuts the segment back to its last whole write after a failed one (part of the group may be in it), so that
   * the next write goes where this one began: a refused batch leaves nothing behind, not even an empty segment.
   * When even that fails, the next writes go to a new segment (a reader skips the bytes left at this one's end).
   */
  private async discardFailedWrite(): Promise<void> {
    const segment = this.segments.at(-1) as Segment;
    try {
      await new Promise<void>((resolve, reject) =>
        ftruncate(this.fd, segment.bytes, (error) => (error ? reject(error) : resolve())),
      );
    } catch (error) {
      this.logger.warn(
        { segment: segment.path, err: error },
        `journal segment ${segment.path} could not be cut back after a failed write (${(error as Error).message}): the next writes go to a new segment`,
      );
      this.rotate();
    }
  }

  private rotate(): void {
    closeSync(this.fd);
    this.fd = this.openSegment(this.nextSeq);
  }
}

/** `writev` until every byte is written (a write may be partial). */
async function writeAll(fd: number, buffers: Buffer[]): Promise<void> {
  let rest = buffers;
  while (rest.length > 0) {
    const written = await new Promise<number>((resolve, reject) =>
      writev(fd, rest, (error, count) => (error ? reject(error) : resolve(count))),
    );
    let skip = written;
    const next: Buffer[] = [];
    for (const buffer of rest) {
      if (skip >= buffer.length) skip -= buffer.length;
      else {
        next.push(skip > 0 ? buffer.subarray(skip) : buffer);
        skip = 0;
      }
    }
    rest = next;
  }
}
