/**
 * What a single node's restart brings back from SQLite (docs/durability.md): the action states of the last committed
 * checkpoint round, and the index snapshots of the streams whose config is the one they were taken with; then the
 * journal is replayed from the round's position (src/stream/local-placement.ts). Damaged derived state never stops
 * it (docs/durability.md, "Damaged state"): tables that cannot be read are set aside (or were, when the database
 * was opened) and the streams they held start afresh, each loss logged and counted.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { EdnValue } from './edn.ts';
import type { StreamEngine } from './engine.ts';
import type { IndexStore } from './index-store.ts';
import { LOG_START, type LogPosition } from './journal.ts';
import type { DerivedTables, StoredCheckpoint, StreamRepository } from './repository.ts';
import { readIndexSnapshot, type RestoreFailures } from './restore-failures.ts';
import { CHECKPOINT_FORMAT_VERSION, type StateCheckpointer } from './state-checkpoint.ts';

/** What the database holds for a stream: the snapshot of this index, built by this config. */
export interface Written {
  readonly index: IndexStore;
  readonly configHash: string;
}

export interface RestoredCheckpoint {
  /** The last committed round (0: none). */
  round: number;
  /** Where the journal is replayed from. */
  position: LogPosition;
  /** The indexes restored from their snapshots. */
  written: Map<string, Written>;
}

export class SnapshotRestore {
  private round = 0;
  private committedPosition: LogPosition = LOG_START;
  private readonly written = new Map<string, Written>();

  constructor(
    private readonly engine: StreamEngine,
    private readonly repository: StreamRepository,
    private readonly logger: Logger,
    private readonly restoreFailures: RestoreFailures,
    private readonly state: StateCheckpointer,
    private readonly configHash: (config: EdnValue) => string,
  ) {}

  /**
   * Restores the action states of the last committed round and the index snapshots of the streams whose config
   * is the one they were taken with; returns the journal position to replay from. Damaged derived state never
   * stops it (docs/durability.md, "Damaged state"): tables that cannot be read are set aside (or were, when the
   * database was opened) and the streams they held start afresh, each loss logged and counted.
   */
  run(): RestoredCheckpoint {
    for (const { tables, setAside: moved } of this.repository.tablesSetAsideAtOpen())
      this.tablesLost(tables, (moved[0] as { problem: string }).problem, moved);
    // Tables set aside were created again, empty: what is left is read as usual.
    let checkpoint: StoredCheckpoint | null | undefined;
    this.readingDerived('checkpoints', () => (checkpoint = this.repository.loadCheckpoint()));
    if (checkpoint !== undefined) this.readingDerived('states', () => this.restoreStates(checkpoint ?? null));
    this.readingDerived('indexes', () => this.restoreIndexes());
    return { round: this.round, position: this.committedPosition, written: this.written };
  }

  /** Runs a restore; when it cannot read its tables, sets them aside so that the next round writes sound ones. */
  private readingDerived(tables: 'states' | 'checkpoints' | 'indexes', restore: () => void): void {
    try {
      restore();
    } catch (error) {
      let moved: { table: string; asideAs: string }[] = [];
      try {
        moved = this.repository.setAside(tables);
      } catch (setAsideError) {
        this.logger.error(
          { err: setAsideError },
          `the damaged tables of the ${tables} could not be set aside: ${(setAsideError as Error).message}`,
        );
      }
      this.tablesLost(tables === 'indexes' ? 'index' : 'state', (error as Error).message, moved);
    }
  }

  /** Reports the streams whose state or index was in tables set aside: those they can name, else every stream
   *  that may have had some. */
  private tablesLost(
    tables: DerivedTables,
    problem: string,
    moved: readonly { table: string; asideAs: string }[],
  ): void {
    const rowsTable = moved.find((table) => table.table === (tables === 'state' ? 'stream_state' : 'index_meta'));
    const named = rowsTable === undefined ? null : this.repository.streamsIn(rowsTable.asideAs);
    const where = moved.map((table) => `${table.table} set aside as ${table.asideAs}`).join(', ');
    const detail = where === '' ? problem : `${problem}; ${where}`;
    for (const stream of named ?? this.engine.names()) {
      const info = this.engine.get(stream);
      if (info === undefined) continue;
      // An index restored before the read failed keeps what it restored (the next round writes it whole).
      if (tables === 'index' && !this.written.has(stream)) this.restoreFailures.indexLost(stream, 'damaged', detail);
      else if (info.stateUnits.length > 0)
        this.restoreFailures.stateLost(stream, 'damaged', `its saved action state is unreadable (${detail})`);
    }
  }

  private restoreStates(checkpoint: StoredCheckpoint | null): void {
    if (checkpoint !== null) {
      this.round = checkpoint.round;
      this.committedPosition = checkpoint.position;
      if (checkpoint.formatVersion !== CHECKPOINT_FORMAT_VERSION) {
        this.logger.warn(
          { round: checkpoint.round, format: checkpoint.formatVersion },
          `the stream checkpoint is in format ${checkpoint.formatVersion}, which this version does not read (it writes ${CHECKPOINT_FORMAT_VERSION}): action states start afresh`,
        );
        this.repository.deleteAllStates();
      } else {
        const started = performance.now();
        const { units, forks } = this.state.restore(
          this.repository.loadStateRows(checkpoint.round),
          this.repository.stateStreams(),
        );
        const ms = Math.round(performance.now() - started);
        if (units > 0)
          this.logger.info(
            { round: checkpoint.round, units, forks, ms },
            'action states restored from the last checkpoint',
          );
      }
    }
  }

  /** Restores each unchanged stream's index whose snapshot parses and has the shape of an index; a refused one
   *  is left out (the first round deletes it: the stream is not in `written`). */
  private restoreIndexes(): void {
    const snapshots = this.repository.indexSnapshotMetas();
    let restored = 0;
    for (const snapshot of snapshots) {
      const info = this.engine.get(snapshot.stream);
      if (info === undefined || this.configHash(info.config) !== snapshot.configHash) continue;
      const read = readIndexSnapshot(snapshot.currentTimeNs, this.repository.indexSnapshotEntries(snapshot.stream));
      if ('reason' in read) {
        this.restoreFailures.indexLost(snapshot.stream, read.reason, read.problem);
        continue;
      }
      info.index.restore(read);
      this.written.set(snapshot.stream, { index: info.index, configHash: snapshot.configHash });
      restored++;
    }
    if (snapshots.length > 0)
      this.logger.info({ restored, stored: snapshots.length }, 'index snapshots restored into unchanged streams');
  }
}
