/**
 * A single node's checkpoints in SQLite (docs/durability.md, "Checkpoints"): the checkpoint store
 * (src/stream/durability/checkpoint-store.ts) over the stream part's tables (src/stream/durability/repository.ts). Rows
 * stay from round to round, so a round writes what changed since the last; a slice is one transaction, and the WAL is
 * checkpointed by a worker thread while a round with many rows runs, not inside a slice's COMMIT
 * (src/db/checkpointer.ts). Damaged tables found when the database was opened, or by a read, are set aside
 * (src/db/integrity.ts) and reported as damage: the streams they held start afresh.
 */
import type { Logger } from 'pino';
import type { WalCheckpointer } from '../../db/checkpointer.ts';
import type {
  CheckpointDamage,
  CheckpointPart,
  CheckpointReader,
  CheckpointStore,
  CheckpointWriter,
  CommitOutcome,
  IndexMeta,
  StoredIndexEntry,
} from './checkpoint-store.ts';
import type { StreamRepository } from './repository.ts';

export class SqliteCheckpoints implements CheckpointStore, CheckpointReader {
  readonly whole = false;
  private readonly writer: CheckpointWriter;
  private readonly checkpointer: WalCheckpointer;

  constructor(
    private readonly repository: StreamRepository,
    private readonly logger: Logger,
  ) {
    const entries = repository.indexEntryWriter();
    const states = repository.stateRowWriter();
    this.writer = {
      dropIndex: (stream) => repository.deleteIndexSnapshot(stream),
      putIndexMeta: (meta) => repository.saveIndexMeta(meta, Math.floor(Date.now() / 1000)),
      putIndexEntry: (stream, key, eventJson) => entries.upsert(stream, key, eventJson),
      removeIndexEntry: (stream, key) => entries.remove(stream, key),
      putState: (row) =>
        states.put(row.stream, row.path, row.forkKey, row.round, row.action, row.configHash, row.state),
      deleteOlderStates: (stream, path, forkKey, round) => states.deleteOlder(stream, path, forkKey, round),
      purgeStates: (stream, round, limit) => states.purgeStream(stream, round, limit),
      commit: (head) => repository.commitCheckpoint(head, Math.floor(Date.now() / 1000)),
    };
    this.checkpointer = repository.walCheckpointer((message) =>
      logger.warn(`WAL checkpoint after an index snapshot slice failed: ${message}`),
    );
  }

  async load(): Promise<CheckpointReader> {
    return this;
  }

  /** Rows stay from round to round: nothing to start. */
  begin(): void {}

  indexStreams(): readonly string[] {
    return this.repository.indexSnapshotStreams();
  }

  dropIndex(stream: string): void {
    this.repository.deleteIndexSnapshot(stream);
  }

  slice(work: (writer: CheckpointWriter) => void): void {
    this.repository.transaction(() => work(this.writer));
  }

  /** The slice's transaction committed the round. */
  committed(): CommitOutcome {
    return 'committed';
  }

  /** A round with many rows holds the connection's automatic checkpoints (a worker copies the WAL between slices);
   *  one with little to write leaves the connection alone: holding raises its page cache to 64 MB for good, which a
   *  service with no index and no state does not need (bench/JOURNAL.md, "Memory"). */
  pace(moment: 'bulk' | 'more' | 'done'): void {
    if (moment === 'bulk') this.checkpointer.hold();
    else if (moment === 'more') this.checkpointer.request();
    else this.checkpointer.release();
  }

  async close(): Promise<void> {
    await this.checkpointer.close();
  }

  // The reader: the tables as they are.

  get damaged(): CheckpointDamage[] {
    return this.repository
      .tablesSetAsideAtOpen()
      .map(({ tables, setAside }) => this.damage(tables, (setAside[0] as { problem: string }).problem, setAside));
  }

  head() {
    return this.repository.loadCheckpoint();
  }

  stateRows(round: number) {
    return this.repository.loadStateRows(round);
  }

  stateStreams(): readonly string[] {
    return this.repository.stateStreams();
  }

  discardStates(): void {
    this.repository.deleteAllStates();
  }

  indexMetas(): readonly IndexMeta[] {
    return this.repository.indexSnapshotMetas();
  }

  indexEntries(stream: string): readonly StoredIndexEntry[] {
    return this.repository.indexSnapshotEntries(stream);
  }

  setAside(part: CheckpointPart, problem: string): CheckpointDamage[] {
    let moved: { table: string; asideAs: string }[] = [];
    try {
      moved = this.repository.setAside(part === 'head' ? 'checkpoints' : part);
    } catch (error) {
      this.logger.error(
        { err: error },
        `the damaged tables of the ${part === 'head' ? 'checkpoints' : part} could not be set aside: ${(error as Error).message}`,
      );
    }
    return [this.damage(part === 'indexes' ? 'index' : 'state', problem, moved)];
  }

  /** The damage of tables set aside: what was wrong and where it went, and the streams their rows name if the
   *  table set aside can still say. */
  private damage(
    kind: 'state' | 'index',
    problem: string,
    moved: readonly { table: string; asideAs: string }[],
  ): CheckpointDamage {
    const rowsTable = moved.find((table) => table.table === (kind === 'state' ? 'stream_state' : 'index_meta'));
    const where = moved.map((table) => `${table.table} set aside as ${table.asideAs}`).join(', ');
    return {
      kind,
      problem: where === '' ? problem : `${problem}; ${where}`,
      streams: rowsTable === undefined ? null : this.repository.streamsIn(rowsTable.asideAs),
    };
  }
}
