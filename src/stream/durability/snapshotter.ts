/**
 * The checkpoint rounds of a partition (docs/durability.md, docs/hardening.md "Snapshots that never block"): every
 * `snapshot-interval` a round writes to the partition's checkpoint store (src/stream/durability/checkpoint-store.ts)
 * the index entries each index set or removed and the state of the actions (src/stream/durability/state-checkpoint.ts),
 * in slices of at most `SLICE_BUDGET_MS` on the event loop, so that requests and checks run between slices. A store
 * that keeps rows from round to round (SQLite) is written what changed since the last round, and an index it does not
 * hold yet (a new or recompiled stream, or one whose snapshot was not restored) whole; a store that keeps only each
 * round's rows (a cluster's) is written everything, in slices too, by rounds that run only when something changed. At
 * stop the rest is written at once.
 *
 * A round begins by running what `async-queue!` queues hold and noting how far the partition got in its log; once
 * every slice is written, the store commits the round with that position (SQLite: one small transaction; a cluster:
 * once its value is written), and the log is told it may drop what the round covers. A partition that starts
 * restores the last committed round (src/stream/durability/snapshot-restore.ts), then reads its log from the round's
 * position.
 *
 * A `kill -9` during a round leaves the previous committed round as it was (the new round's state rows do not count
 * until it commits). Index rows are written as they are when the slice runs, and reading the log again from the
 * committed position sets every entry that changed since to the same value again.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { type BeatTimer, everyBeat } from '../../common/beat.ts';
import type { CheckpointMetrics } from './checkpoint-metrics.ts';
import {
  CHECKPOINT_FORMAT_VERSION,
  type CheckpointStore,
  type CheckpointWriter,
  type CommitOutcome,
} from './checkpoint-store.ts';
import { ConfigHashes } from './config-hash.ts';
import type { StreamEngine } from '../engine/engine.ts';
import { LOG_START, type LogPosition } from './event-log.ts';
import type { IndexStore } from '../index-store.ts';
import { type RestoredCheckpoint, SnapshotRestore, type Written } from './snapshot-restore.ts';
import { StateCheckpointer } from './state-checkpoint.ts';

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
  /** The store holds nothing valid for this index: its snapshot row is recreated before any entry. */
  readonly whole: boolean;
  started: boolean;
}

export interface SnapshotterOptions {
  engine: StreamEngine;
  store: CheckpointStore;
  metrics: CheckpointMetrics;
  logger: Logger;
  /** How far the partition got in its log. */
  position: () => LogPosition;
  /** A committed round covers the log up to `position`. */
  covered: (position: LogPosition) => void;
  /** Names the partition in log lines ('' for a single node's). */
  label?: string;
}

/** Where a round is: writing its rows, waiting for the store to keep them, deleting what they superseded, or not
 *  running. */
type Phase = 'idle' | 'write' | 'commit' | 'clean';

export class StreamSnapshotter {
  private timer: BeatTimer | null = null;
  private slice: NodeJS.Immediate | null = null;
  private readonly written = new Map<string, Written>();
  private readonly hashes = new ConfigHashes();
  private jobs: Job[] = [];
  private roundStartedAt = 0;
  private phase: Phase = 'idle';
  private committing: Promise<void> | null = null;
  private round = 0;
  private roundPosition: LogPosition = LOG_START;
  private committedPosition: LogPosition = LOG_START;
  private readonly state: StateCheckpointer;
  private readonly engine: StreamEngine;
  private readonly store: CheckpointStore;
  private readonly metrics: CheckpointMetrics;
  private readonly label: string;

  constructor(private readonly options: SnapshotterOptions) {
    const { engine, metrics } = options;
    this.engine = engine;
    this.store = options.store;
    this.metrics = metrics;
    this.label = options.label ?? '';
    this.state = new StateCheckpointer(engine, metrics.restoreFailures, this.store.whole, (rows) =>
      metrics.stateRows.inc(rows),
    );
  }

  /**
   * Restores the action states of the last committed round and the index snapshots of the streams whose config
   * is the one they were taken with (src/stream/durability/snapshot-restore.ts); its head's position is where the log
   * is read from.
   */
  async restore(): Promise<Pick<RestoredCheckpoint, 'head' | 'units' | 'entries'>> {
    const restored = new SnapshotRestore({
      engine: this.engine,
      reader: await this.store.load(),
      logger: this.options.logger,
      restoreFailures: this.metrics.restoreFailures,
      state: this.state,
      configHash: (config) => this.hashes.of(config),
    }).run();
    this.round = restored.head?.round ?? 0;
    this.committedPosition = restored.head?.position ?? LOG_START;
    for (const [stream, written] of restored.written) this.written.set(stream, written);
    return restored;
  }

  /** Writes everything not written yet and commits it, at once (at stop: the loop has nothing else to serve). */
  async write(): Promise<void> {
    this.cancelSlice();
    // A round under way finishes first (its rows are as of its start), then one more takes everything since.
    await this.finish();
    this.beginRound();
    await this.finish();
    this.store.pace('done');
  }

  /** Stops the rounds and closes the store (after the last `write()`). */
  async close(): Promise<void> {
    this.stop();
    await this.store.close();
  }

  /** (Re)starts the periodic rounds; a round still running when the next is due is left to finish. */
  start(intervalMs: number): void {
    this.stop();
    // On the grid of the service's other idle work: a round that finds nothing still wakes the process.
    this.timer = everyBeat(intervalMs, () => {
      if (this.phase !== 'idle') return;
      const bulk = this.beginRound();
      if (this.phase === 'idle') return;
      if (bulk) this.store.pace('bulk');
      this.scheduleSlice();
    });
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
    this.cancelSlice();
  }

  private async finish(): Promise<void> {
    while (this.phase !== 'idle') {
      if (this.phase === 'commit') await this.committing;
      else this.runSlice(Infinity);
    }
  }

  /**
   * Starts a round: runs the async queues, notes the log position, takes each index's changes (or all its keys),
   * drops the snapshots of streams that are gone, and saves the action states as they are now. Returns whether it has
   * rows to write (else it only commits the new position, or nothing at all).
   */
  private beginRound(): boolean {
    const { engine, store } = this;
    if (store.whole && !this.changed()) return false;
    this.roundStartedAt = performance.now();
    engine.drainAsyncQueues();
    this.roundPosition = this.options.position();
    this.round++;
    store.begin(this.round);
    const stored = new Set(store.indexStreams());
    for (const stream of stored) if (engine.get(stream) === undefined) store.dropIndex(stream);
    for (const stream of this.written.keys()) if (engine.get(stream) === undefined) this.written.delete(stream);
    for (const stream of engine.names()) {
      const info = engine.get(stream);
      if (info === undefined) continue;
      const index = info.index;
      const configHash = this.hashes.of(info.config);
      const written = this.written.get(stream);
      const whole =
        store.whole ||
        written === undefined ||
        written.index !== index ||
        written.configHash !== configHash ||
        !stored.has(stream);
      if (whole && index.size === 0 && index.currentTime === 0) {
        // Nothing to keep: an empty index has no snapshot, as it had none before it was snapshotted.
        if (stored.has(stream)) store.dropIndex(stream);
        this.written.set(stream, { index, configHash });
        index.takeChanges();
        continue;
      }
      const changes = index.takeChanges();
      const keys = whole ? index.keys() : changes.values();
      this.jobs.push({ stream, index, configHash, keys, whole, started: false });
    }
    const states = this.state.begin(this.round);
    const moved = !samePosition(this.roundPosition, this.committedPosition);
    this.phase = this.jobs.length > 0 || states || moved || this.state.purging ? 'write' : 'idle';
    if (this.phase === 'idle') this.round--;
    return this.jobs.length > 0 || states;
  }

  /** Whether anything changed since the last round began: the position, a stream, an index or a state. */
  private changed(): boolean {
    if (!samePosition(this.options.position(), this.committedPosition) || this.state.changed) return true;
    for (const stream of this.written.keys()) if (this.engine.get(stream) === undefined) return true;
    for (const stream of this.engine.names()) {
      const info = this.engine.get(stream);
      const written = this.written.get(stream);
      if (info === undefined) continue;
      if (written === undefined || written.index !== info.index || info.index.hasChanges) return true;
      if (written.configHash !== this.hashes.of(info.config)) return true;
    }
    return false;
  }

  private scheduleSlice(): void {
    this.slice = setImmediate(() => {
      this.slice = null;
      this.runSlice(SLICE_BUDGET_MS);
      this.afterSlice();
    });
  }

  /** The next slice, once the store has kept the round if it is waited for; the store's pace between them. */
  private afterSlice(): void {
    if (this.phase === 'commit') {
      void this.committing?.then(() => {
        if (this.timer !== null) this.afterSlice();
      });
    } else if (this.phase !== 'idle') {
      this.store.pace('more');
      this.scheduleSlice();
    } else this.store.pace('done');
  }

  private cancelSlice(): void {
    if (this.slice) clearImmediate(this.slice);
    this.slice = null;
  }

  /** Advances the round for at most `budgetMs`, in one slice of the store. */
  private runSlice(budgetMs: number): void {
    if (this.phase === 'idle' || this.phase === 'commit') return;
    const startedAt = performance.now();
    const deadline = startedAt + budgetMs;
    const counts = { upserts: 0, deletes: 0 };
    let ended: 'written' | 'cleaned' | null = null;
    try {
      this.store.slice((writer) => {
        if (this.phase === 'clean') {
          if (this.state.cleanSome(deadline, writer)) ended = 'cleaned';
          return;
        }
        if (!this.writeIndexes(deadline, counts, writer)) return;
        if (!this.state.writeSome(deadline, writer)) return;
        writer.commit({ round: this.round, formatVersion: CHECKPOINT_FORMAT_VERSION, position: this.roundPosition });
        ended = 'written';
      });
    } catch (error) {
      this.failed(error as Error, 'error');
      return;
    } finally {
      this.metrics.sliceDuration.observe((performance.now() - startedAt) / 1000);
    }
    if (counts.upserts > 0) this.metrics.entries.inc({ operation: 'upsert' }, counts.upserts);
    if (counts.deletes > 0) this.metrics.entries.inc({ operation: 'delete' }, counts.deletes);
    if (ended === 'cleaned') {
      this.phase = 'idle';
      this.options.covered(this.committedPosition);
    } else if (ended === 'written') this.settle(this.store.committed());
  }

  /** The store's answer to a written round, now or once it has written it. */
  private settle(outcome: CommitOutcome | Promise<CommitOutcome>): void {
    if (typeof outcome === 'string') {
      this.kept(outcome);
      return;
    }
    this.phase = 'commit';
    this.committing = outcome.then(
      (kept) => this.kept(kept),
      (error: unknown) => this.failed(error as Error, 'warn'),
    );
  }

  private kept(outcome: CommitOutcome): void {
    this.committing = null;
    if (outcome === 'superseded') {
      // Another writer's checkpoint is the partition's now: it stops here (its owner drops it).
      this.state.failed();
      this.written.clear();
      this.phase = 'idle';
      return;
    }
    this.state.committed();
    this.committedPosition = this.roundPosition;
    this.phase = 'clean';
    this.metrics.duration.observe((performance.now() - this.roundStartedAt) / 1000);
  }

  /** A slice rolled back, or the store did not keep the round: the next round writes what this one had. */
  private failed(error: Error, level: 'error' | 'warn'): void {
    this.committing = null;
    // Its keys are no longer in any change set: those indexes are rewritten whole, and every action state (the
    // round's rows never count, it did not commit). A round the store failed to keep wrote every index.
    if (this.phase === 'commit') this.written.clear();
    for (const job of this.jobs) this.written.delete(job.stream);
    this.jobs = [];
    if (this.phase === 'write' || this.phase === 'commit') this.state.failed();
    this.phase = 'idle';
    this.metrics.failures.inc();
    this.options.logger[level](
      { err: error },
      `${this.label}checkpoint not saved (the next round writes it): ${error.message}`,
    );
  }

  /** Writes index rows of the current jobs until `deadline`; true when every job is done. */
  private writeIndexes(
    deadline: number,
    counts: { upserts: number; deletes: number },
    writer: CheckpointWriter,
  ): boolean {
    let rows = 0;
    while (this.jobs.length > 0) {
      const job = this.jobs[0] as Job;
      const meta = { stream: job.stream, currentTimeNs: job.index.currentTime, configHash: job.configHash };
      if (this.engine.get(job.stream)?.index !== job.index) {
        // Replaced or removed between slices: the next round writes what is there then.
        this.written.delete(job.stream);
        this.jobs.shift();
        continue;
      }
      if (!job.started) {
        if (job.whole) writer.dropIndex(job.stream);
        writer.putIndexMeta(meta);
        job.started = true;
      }
      for (let next = job.keys.next(); !next.done; next = job.keys.next()) {
        const event = job.index.entry(next.value);
        if (event === undefined) {
          writer.removeIndexEntry(job.stream, next.value);
          counts.deletes++;
        } else {
          writer.putIndexEntry(job.stream, next.value, JSON.stringify(event));
          counts.upserts++;
        }
        if (++rows % ROWS_PER_CLOCK_CHECK === 0 && performance.now() >= deadline) return false;
      }
      writer.putIndexMeta({ ...meta, currentTimeNs: job.index.currentTime });
      this.written.set(job.stream, { index: job.index, configHash: job.configHash });
      this.jobs.shift();
    }
    return true;
  }
}

function samePosition(a: LogPosition, b: LogPosition): boolean {
  return a.seq === b.seq && a.offset === b.offset;
}
