/**
 * Checkpoint rounds of the streams (docs/durability.md, docs/hardening.md "Snapshots that never block"): every
 * `snapshot-interval` a round writes to SQLite what changed since the previous round, the index entries each
 * index set or removed and the state of the actions (src/stream/state-checkpoint.ts), in slices of at most
 * `SLICE_BUDGET_MS` on the event loop, one transaction each, so that requests and checks run between slices;
 * meanwhile the WAL is checkpointed by a worker thread, not inside a slice's COMMIT (src/db/checkpointer.ts).
 * An index the database does not hold yet (a new or recompiled stream, or one whose snapshot was not restored)
 * is rewritten whole, in slices too. At stop the rest is written at once.
 *
 * A round begins by running what `async-queue!` queues hold and noting how far the engine got in the journal;
 * once every slice is written, one small transaction commits the round with that position, and the journal
 * entries it covers are deleted. At startup the states of the last committed round and the index snapshots of
 * the unchanged streams are restored, then the journal is replayed from the round's position.
 *
 * A `kill -9` during a round leaves the previous committed round as it was (the new round's state rows do not
 * count until it commits). Index rows are written as they are when the slice runs, and replaying the journal
 * from the committed position sets every entry that changed since to the same value again.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { EdnValue } from './edn.ts';
import type { StreamEngine } from './engine.ts';
import type { IndexStore } from './index-store.ts';
import { ConfigHashes } from './config-hash.ts';
import { SnapshotRestore, type Written } from './snapshot-restore.ts';
import type { WalCheckpointer } from '../db/checkpointer.ts';
import { type BeatTimer, everyBeat } from '../common/beat.ts';
import { type EventLog, LOG_START, type LogPosition } from './journal.ts';
import type { StreamRepository } from './repository.ts';
import { RestoreFailures } from './restore-failures.ts';
import { CHECKPOINT_FORMAT_VERSION, StateCheckpointer } from './state-checkpoint.ts';

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

export interface SnapshotterOptions {
  /** How far the engine got in the event log (the ingest gateway's `applied`). */
  position?: () => LogPosition;
  /** The event log whose entries a committed round covers are deleted. */
  log?: EventLog;
}

/** Where a round is: writing its rows, deleting what its commit superseded, or not running. */
type Phase = 'idle' | 'write' | 'clean';

export class StreamSnapshotter {
  private timer: BeatTimer | null = null;
  private slice: NodeJS.Immediate | null = null;
  private readonly written = new Map<string, Written>();
  private readonly hashes = new ConfigHashes();
  private jobs: Job[] = [];
  private roundStartedAt = 0;
  private phase: Phase = 'idle';
  private round = 0;
  private roundPosition: LogPosition = LOG_START;
  private committedPosition: LogPosition = LOG_START;
  private readonly state: StateCheckpointer;
  private readonly restoreFailures: RestoreFailures;
  private readonly position: () => LogPosition;
  private readonly log: EventLog | null;
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
    options: SnapshotterOptions = {},
  ) {
    this.position = options.position ?? (() => LOG_START);
    this.log = options.log ?? null;
    this.restoreFailures = new RestoreFailures(registry, logger);
    this.state = new StateCheckpointer(engine, repository, this.restoreFailures);
    this.writer = repository.indexEntryWriter();
    this.checkpointer = repository.walCheckpointer((message) =>
      logger.warn(`WAL checkpoint after an index snapshot slice failed: ${message}`),
    );
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
    this.failures = new Counter({
      name: 'stream_snapshot_failures_total',
      help: 'Snapshot slices that failed (rolled back, logged).',
      registers,
    });
    const state = this.state;
    new Counter({
      name: 'stream_checkpoint_state_rows_total',
      help: 'Rows of action state (one per stateful action, one per changed :by fork) written by checkpoint rounds.',
      registers,
      collect() {
        this.reset();
        this.inc(state.rowsWritten);
      },
    });
  }

  /**
   * Restores the action states of the last committed round and the index snapshots of the streams whose config
   * is the one they were taken with (src/stream/snapshot-restore.ts); returns the journal position to replay from.
   */
  restore(): LogPosition {
    const restored = new SnapshotRestore(
      this.engine,
      this.repository,
      this.logger,
      this.restoreFailures,
      this.state,
      (config) => this.configHash(config),
    ).run();
    this.round = restored.round;
    this.committedPosition = restored.position;
    for (const [stream, written] of restored.written) this.written.set(stream, written);
    return this.committedPosition;
  }

  /** Writes everything not written yet and commits it, at once (at stop: the loop has nothing else to serve). */
  write(): void {
    this.cancelSlice();
    // A round under way finishes first (its rows are as of its start), then one more takes everything since.
    while (this.phase !== 'idle') this.runSlice(Infinity);
    this.beginRound();
    while (this.phase !== 'idle') this.runSlice(Infinity);
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
    // On the grid of the service's other idle work: a round that finds nothing still wakes the process.
    this.timer = everyBeat(intervalMs, () => {
      if (this.phase !== 'idle') return;
      const bulk = this.beginRound();
      if (this.phase === 'idle') return;
      // A round with little to write leaves the connection alone: holding the checkpoints raises its page cache
      // to 64 MB for good, which a service with no index and no state does not need (bench/JOURNAL.md, "Memory").
      if (bulk) this.checkpointer.hold();
      this.scheduleSlice();
    });
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
    this.cancelSlice();
  }

  /**
   * Starts a round: runs the async queues, notes the journal position, takes each index's changes (or all its
   * keys), drops the snapshots of streams that are gone, and saves the action states as they are now. Returns
   * whether it has rows to write (else it only commits the new position, or nothing at all).
   */
  private beginRound(): boolean {
    this.roundStartedAt = performance.now();
    this.engine.drainAsyncQueues();
    this.roundPosition = this.position();
    this.round++;
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
      const whole =
        written === undefined || written.index !== index || written.configHash !== configHash || !stored.has(stream);
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
    const states = this.state.begin(this.round);
    const moved =
      this.roundPosition.seq !== this.committedPosition.seq ||
      this.roundPosition.offset !== this.committedPosition.offset;
    this.phase = this.jobs.length > 0 || states || moved || this.state.purging ? 'write' : 'idle';
    if (this.phase === 'idle') this.round--;
    return this.jobs.length > 0 || states;
  }

  private scheduleSlice(): void {
    this.slice = setImmediate(() => {
      this.slice = null;
      this.runSlice(SLICE_BUDGET_MS);
      if (this.phase !== 'idle') {
        this.checkpointer.request();
        this.scheduleSlice();
      } else this.checkpointer.release();
    });
  }

  private cancelSlice(): void {
    if (this.slice) clearImmediate(this.slice);
    this.slice = null;
  }

  /** Advances the round for at most `budgetMs`, in one transaction. */
  private runSlice(budgetMs: number): void {
    if (this.phase === 'idle') return;
    const startedAt = performance.now();
    const deadline = startedAt + budgetMs;
    const counts = { upserts: 0, deletes: 0 };
    let committed = false;
    try {
      this.repository.transaction(() => {
        if (this.phase === 'clean') {
          if (this.clean(deadline)) this.phase = 'idle';
          return;
        }
        if (!this.writeIndexes(deadline, counts)) return;
        if (!this.state.writeSome(deadline)) return;
        this.repository.commitCheckpoint(
          { round: this.round, formatVersion: CHECKPOINT_FORMAT_VERSION, position: this.roundPosition },
          Math.floor(Date.now() / 1000),
        );
        committed = true;
      });
    } catch (error) {
      // The slice rolled back and its keys are no longer in any change set: rewrite those indexes whole, and every
      // action state (the round's rows never count, it did not commit).
      for (const job of this.jobs) this.written.delete(job.stream);
      this.jobs = [];
      if (this.phase === 'write') this.state.failed();
      this.phase = 'idle';
      this.failures.inc();
      this.logger.error({ err: error }, `stream checkpoint failed: ${(error as Error).message}`);
      return;
    } finally {
      this.sliceDuration.observe((performance.now() - startedAt) / 1000);
    }
    if (counts.upserts > 0) this.entries.inc({ operation: 'upsert' }, counts.upserts);
    if (counts.deletes > 0) this.entries.inc({ operation: 'delete' }, counts.deletes);
    if (committed) {
      this.state.committed();
      this.committedPosition = this.roundPosition;
      this.phase = 'clean';
      this.duration.observe((performance.now() - this.roundStartedAt) / 1000);
    }
  }

  /** Deletes what the committed round superseded: older state rows and the journal entries it covers. */
  private clean(deadline: number): boolean {
    if (!this.state.cleanSome(deadline)) return false;
    this.log?.truncate(this.committedPosition);
    return true;
  }

  /** Writes index rows of the current jobs until `deadline`; true when every job is done. */
  private writeIndexes(deadline: number, counts: { upserts: number; deletes: number }): boolean {
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
        this.repository.saveIndexMeta(
          { stream: job.stream, currentTimeNs: job.index.currentTime, configHash: job.configHash },
          nowS,
        );
        job.started = true;
      }
      for (let next = job.keys.next(); !next.done; next = job.keys.next()) {
        const event = job.index.entry(next.value);
        if (event === undefined) {
          this.writer.remove(job.stream, next.value);
          counts.deletes++;
        } else {
          this.writer.upsert(job.stream, next.value, JSON.stringify(event));
          counts.upserts++;
        }
        if (++rows % ROWS_PER_CLOCK_CHECK === 0 && performance.now() >= deadline) return false;
      }
      this.repository.saveIndexMeta(
        { stream: job.stream, currentTimeNs: job.index.currentTime, configHash: job.configHash },
        nowS,
      );
      this.written.set(job.stream, { index: job.index, configHash: job.configHash });
      this.jobs.shift();
    }
    return true;
  }

  private configHash(config: EdnValue): string {
    return this.hashes.of(config);
  }
}
