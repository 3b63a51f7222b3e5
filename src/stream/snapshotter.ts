/**
 * Index snapshots (docs/hardening.md, "Snapshots that never block"): every `snapshot-interval` a round writes
 * to SQLite only the entries each index set or removed since the previous round, in slices of at most
 * `SLICE_BUDGET_MS` on the event loop, one transaction each, so that requests and checks run between slices;
 * meanwhile the WAL is checkpointed by a worker thread, not inside a slice's COMMIT (src/db/checkpointer.ts).
 * An index the database does not hold yet (a new or recompiled stream, or one whose snapshot was not restored)
 * is rewritten whole, in slices too. At stop the rest is written at once. At startup the snapshots are restored
 * into the streams whose config did not change (by hash of the printed config).
 *
 * A `kill -9` during a round leaves the slices already committed: each row is an entry the index held, and
 * what the round had not written yet is lost as the changes after the last round always were.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import { type EdnValue, printEdn } from './edn.ts';
import type { StreamEngine } from './engine.ts';
import type { Event } from './event.ts';
import type { IndexStore } from './index-store.ts';
import type { WalCheckpointer } from '../db/checkpointer.ts';
import type { StreamRepository } from './repository.ts';

/** Longest a slice holds the event loop; `/healthz` must answer within 50 ms while a round runs. */
const SLICE_BUDGET_MS = 8;
/** Rows written between two reads of the clock. */
const ROWS_PER_CLOCK_CHECK = 64;

/** One stream's share of a round: the keys to write, taken when the round began. */
interface Job {
  readonly stream: string;
  readonly index: IndexStore;
  readonly configHash: string;
  readonly keys: Iterator<string>;
  /** The database holds nothing valid for this index: its snapshot row is recreated before any entry. */
  readonly whole: boolean;
  started: boolean;
}

/** What the database holds for a stream: the snapshot of this index, built by this config. */
interface Written {
  readonly index: IndexStore;
  readonly configHash: string;
}

export class IndexSnapshotter {
  private timer: NodeJS.Timeout | null = null;
  private slice: NodeJS.Immediate | null = null;
  private readonly written = new Map<string, Written>();
  private readonly hashes = new WeakMap<object, string>();
  private jobs: Job[] = [];
  private roundStartedAt = 0;
  private readonly writer: ReturnType<StreamRepository['indexEntryWriter']>;
  private readonly checkpointer: WalCheckpointer;
  private readonly duration: Histogram;
  private readonly sliceDuration: Histogram;
  private readonly entries: Counter<'operation'>;
  private readonly failures: Counter;

  constructor(
    private readonly engine: StreamEngine,
    private readonly repository: StreamRepository,
    private readonly logger: Logger,
    registry: Registry,
  ) {
    this.writer = repository.indexEntryWriter();
    this.checkpointer = repository.walCheckpointer((message) => logger.warn(`WAL checkpoint after an index snapshot slice failed: ${message}`));
    const registers = [registry];
    this.duration = new Histogram({
      name: 'stream_snapshot_duration_seconds',
      help: 'Wall time of an index snapshot round, from its first slice to its last.',
      buckets: [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60],
      registers,
    });
    this.sliceDuration = new Histogram({
      name: 'stream_snapshot_slice_seconds',
      help: 'Time one slice of an index snapshot holds the event loop.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers,
    });
    this.entries = new Counter({
      name: 'stream_snapshot_entries_total',
      help: 'Index entries written to (upsert) or removed from (delete) the snapshots.',
      labelNames: ['operation'],
      registers,
    });
    this.failures = new Counter({ name: 'stream_snapshot_failures_total', help: 'Snapshot slices that failed (rolled back, logged).', registers });
  }

  /** Restores the stored snapshots into the running streams whose config is the one they were taken with. */
  restore(): void {
    const snapshots = this.repository.loadIndexSnapshots();
    let restored = 0;
    for (const snapshot of snapshots) {
      const info = this.engine.get(snapshot.stream);
      if (info === undefined || this.configHash(info.config) !== snapshot.configHash) continue;
      info.index.restore({ currentTime: snapshot.currentTimeNs, entries: snapshot.entries as { key: string; event: Event }[] });
      this.written.set(snapshot.stream, { index: info.index, configHash: snapshot.configHash });
      restored++;
    }
    if (snapshots.length > 0) this.logger.info({ restored, stored: snapshots.length }, 'index snapshots restored into unchanged streams');
  }

  /** Writes everything not written yet, at once (at stop: the loop has nothing else to serve). */
  write(): void {
    this.cancelSlice();
    this.runSlice(Infinity);
    this.beginRound();
    this.runSlice(Infinity);
    this.checkpointer.release();
  }

  /** Stops the rounds and closes the checkpoint worker (after the last `write()`, before the database closes). */
  async close(): Promise<void> {
    this.stop();
    await this.checkpointer.close();
  }

  /** (Re)starts the periodic rounds; a round still running when the next is due is left to finish. */
  start(intervalMs: number): void {
    this.stop();
    this.timer = setInterval(() => {
      if (this.jobs.length > 0) return;
      this.beginRound();
      // A round with nothing to write leaves the connection alone: holding the checkpoints raises its page cache
      // to 64 MB for good, which a service with no index does not need (docs/performance.md, "Memory").
      if (this.jobs.length === 0) return;
      this.checkpointer.hold();
      this.scheduleSlice();
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.cancelSlice();
  }

  /** Takes each index's changes (or all its keys) and drops the snapshots of streams that are gone. */
  private beginRound(): void {
    this.roundStartedAt = performance.now();
    const stored = new Set(this.repository.indexSnapshotStreams());
    for (const stream of stored) {
      if (this.engine.get(stream) === undefined) this.repository.deleteIndexSnapshot(stream);
    }
    for (const stream of this.written.keys()) {
      if (this.engine.get(stream) === undefined) this.written.delete(stream);
    }
    for (const stream of this.engine.names()) {
      const info = this.engine.get(stream);
      if (info === undefined) continue;
      const index = info.index;
      const configHash = this.configHash(info.config);
      const written = this.written.get(stream);
      const whole = written === undefined || written.index !== index || written.configHash !== configHash || !stored.has(stream);
      if (whole && index.size === 0 && index.currentTime === 0) {
        // Nothing to keep: an empty index has no snapshot, as it had none before it was snapshotted.
        if (stored.has(stream)) this.repository.deleteIndexSnapshot(stream);
        this.written.set(stream, { index, configHash });
        index.takeChanges();
        continue;
      }
      const changes = index.takeChanges();
      const keys = whole ? index.keys() : changes.values();
      this.jobs.push({ stream, index, configHash, keys, whole, started: false });
    }
  }

  private scheduleSlice(): void {
    this.slice = setImmediate(() => {
      this.slice = null;
      this.runSlice(SLICE_BUDGET_MS);
      if (this.jobs.length > 0) {
        this.checkpointer.request();
        this.scheduleSlice();
      } else this.checkpointer.release();
    });
  }

  private cancelSlice(): void {
    if (this.slice) clearImmediate(this.slice);
    this.slice = null;
  }

  /** Writes rows of the current jobs for at most `budgetMs`, in one transaction. */
  private runSlice(budgetMs: number): void {
    if (this.jobs.length === 0) return;
    const startedAt = performance.now();
    const deadline = startedAt + budgetMs;
    let upserts = 0;
    let deletes = 0;
    try {
      this.repository.transaction(() => {
        const nowS = Math.floor(Date.now() / 1000);
        let rows = 0;
        while (this.jobs.length > 0) {
          const job = this.jobs[0] as Job;
          if (this.engine.get(job.stream)?.index !== job.index) {
            // Replaced or removed between slices: the next round writes what is there then.
            this.written.delete(job.stream);
            this.jobs.shift();
            continue;
          }
          if (!job.started) {
            if (job.whole) this.repository.deleteIndexSnapshot(job.stream);
            this.repository.saveIndexMeta({ stream: job.stream, currentTimeNs: job.index.currentTime, configHash: job.configHash }, nowS);
            job.started = true;
          }
          for (let next = job.keys.next(); !next.done; next = job.keys.next()) {
            const event = job.index.entry(next.value);
            if (event === undefined) {
              this.writer.remove(job.stream, next.value);
              deletes++;
            } else {
              this.writer.upsert(job.stream, next.value, JSON.stringify(event));
              upserts++;
            }
            if (++rows % ROWS_PER_CLOCK_CHECK === 0 && performance.now() >= deadline) return;
          }
          this.repository.saveIndexMeta({ stream: job.stream, currentTimeNs: job.index.currentTime, configHash: job.configHash }, nowS);
          this.written.set(job.stream, { index: job.index, configHash: job.configHash });
          this.jobs.shift();
        }
      });
    } catch (error) {
      // The slice rolled back and its keys are no longer in any change set: rewrite those indexes whole.
      for (const job of this.jobs) this.written.delete(job.stream);
      this.jobs = [];
      this.failures.inc();
      this.logger.error({ err: error }, `index snapshot failed: ${(error as Error).message}`);
      return;
    } finally {
      this.sliceDuration.observe((performance.now() - startedAt) / 1000);
    }
    if (upserts > 0) this.entries.inc({ operation: 'upsert' }, upserts);
    if (deletes > 0) this.entries.inc({ operation: 'delete' }, deletes);
    if (this.jobs.length === 0) this.duration.observe((performance.now() - this.roundStartedAt) / 1000);
  }

  private configHash(config: EdnValue): string {
    // A stream config is an EDN map (an object): hashed once per compiled stream, not once per round.
    if (typeof config !== 'object' || config === null) return hashOf(config);
    let hash = this.hashes.get(config);
    if (hash === undefined) {
      hash = hashOf(config);
      this.hashes.set(config, hash);
    }
    return hash;
  }
}

function hashOf(config: EdnValue): string {
  return createHash('sha256').update(printEdn(config)).digest('hex');
}
