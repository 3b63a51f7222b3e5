/**
 * SQLite storage of the stream part: API-created streams and index snapshots. Knows nothing of HTTP or of the
 * engine; the service calls it inside its own transactions (`transaction`) so that a stream row and its
 * `:persist` file are written together, before the API answers.
 */
import { desc, eq, lt } from 'drizzle-orm';
import { type WalCheckpointer, walCheckpointer } from '../../db/checkpointer.ts';
import type { Db } from '../../db/client.ts';
import {
  INDEX_TABLES,
  type SetAsideTable,
  setAsideTables,
  STATE_TABLES,
  tablesSetAsideAtOpen,
} from '../../db/integrity.ts';
import { indexMeta, streamCheckpoints, streams } from '../../db/schema.ts';
import type { CheckpointHead, StateRow } from './checkpoint-store.ts';

export interface StoredStream {
  name: string;
  /** The EDN text of the stream config, exactly as it was sent. */
  configEdn: string;
  isDefault: boolean;
  persist: boolean;
}

interface IndexSnapshotEntry {
  key: string;
  event: unknown;
}

export interface StoredIndexSnapshot {
  stream: string;
  currentTimeNs: number;
  /** Hash of the stream config the index was built by: a snapshot only comes back into the same config. */
  configHash: string;
  entries: IndexSnapshotEntry[];
}

/** The derived tables of the streams (src/db/integrity.ts): the action states, and the index snapshots. */
export type DerivedTables = 'state' | 'index';

export interface StateRowWriter {
  put(
    stream: string,
    path: string,
    forkKey: string,
    round: number,
    action: string,
    configHash: string,
    stateJson: string | null,
  ): void;
  /** Deletes the rows of one key older than `round` (superseded once `round` is committed). */
  deleteOlder(stream: string, path: string, forkKey: string, round: number): void;
  /** Deletes at most `limit` rows of a stream older than `round`; returns how many it deleted. */
  purgeStream(stream: string, round: number, limit: number): number;
}

export class StreamRepository {
  /** Asked at every checkpoint round, also by an idle service: prepared once rather than built by drizzle each time. */
  private readonly snapshotStreams;

  constructor(private readonly db: Db) {
    this.snapshotStreams = db.$client.prepare<[], string>('select stream from index_meta').pluck();
  }

  /** Runs `work` in one SQLite transaction; an exception rolls everything back. */
  transaction<T>(work: () => T): T {
    return this.db.transaction(() => work());
  }

  listStreams(): StoredStream[] {
    return this.db
      .select({
        name: streams.name,
        configEdn: streams.configEdn,
        isDefault: streams.isDefault,
        persist: streams.persist,
      })
      .from(streams)
      .orderBy(streams.name)
      .all();
  }

  saveStream(stream: StoredStream, nowS: number): void {
    this.db
      .insert(streams)
      .values({ ...stream, createdAtS: nowS, updatedAtS: nowS })
      .onConflictDoUpdate({
        target: streams.name,
        set: { configEdn: stream.configEdn, isDefault: stream.isDefault, persist: stream.persist, updatedAtS: nowS },
      })
      .run();
  }

  /** Deletes a stream row and its index snapshot; true when the row existed. */
  deleteStream(name: string): boolean {
    this.db.delete(indexMeta).where(eq(indexMeta.stream, name)).run();
    return this.db.delete(streams).where(eq(streams.name, name)).run().changes > 0;
  }

  /** The streams that have an index snapshot. */
  indexSnapshotStreams(): string[] {
    return this.snapshotStreams.all();
  }

  /** Removes the snapshot of one stream, its entries with it (foreign key cascade). */
  deleteIndexSnapshot(stream: string): void {
    this.db.delete(indexMeta).where(eq(indexMeta.stream, stream)).run();
  }

  /** Creates or updates the snapshot row of one stream (its entries are written by `indexEntryWriter`). */
  saveIndexMeta(meta: Omit<StoredIndexSnapshot, 'entries'>, nowS: number): void {
    const values = {
      stream: meta.stream,
      currentTimeNs: meta.currentTimeNs,
      configHash: meta.configHash,
      savedAtS: nowS,
    };
    this.db.insert(indexMeta).values(values).onConflictDoUpdate({ target: indexMeta.stream, set: values }).run();
  }

  /**
   * Prepared statements that write one entry of a snapshot: snapshots are the one bulk write of the stream part
   * (100k+ rows), and a statement reused for every row is several times faster than a Drizzle query per row.
   */
  indexEntryWriter(): {
    upsert: (stream: string, key: string, eventJson: string) => void;
    remove: (stream: string, key: string) => void;
  } {
    const client = this.db.$client;
    const upsert = client.prepare(
      'insert into index_snapshots (stream, key, event) values (?, ?, ?) on conflict (stream, key) do update set event = excluded.event',
    );
    const remove = client.prepare('delete from index_snapshots where stream = ? and key = ?');
    return {
      upsert: (stream, key, eventJson) => upsert.run(stream, key, eventJson),
      remove: (stream, key) => remove.run(stream, key),
    };
  }

  /** The connection's checkpointer, which checkpoints in a worker thread while a snapshot writes
   *  (src/db/checkpointer.ts). */
  walCheckpointer(onError: (message: string) => void): WalCheckpointer {
    return walCheckpointer(this.db, onError);
  }

  /** The snapshot rows of every index, without their entries (read one stream at a time: `indexSnapshotEntries`). */
  indexSnapshotMetas(): Omit<StoredIndexSnapshot, 'entries'>[] {
    return this.db
      .select({ stream: indexMeta.stream, currentTimeNs: indexMeta.currentTimeNs, configHash: indexMeta.configHash })
      .from(indexMeta)
      .all();
  }

  /** The entries of one index snapshot, their events still JSON text (parsed and checked by the caller). */
  indexSnapshotEntries(stream: string): { key: string; event: string }[] {
    return this.db.$client
      .prepare<[string], { key: string; event: string }>('select key, event from index_snapshots where stream = ?')
      .all(stream);
  }

  /** The derived tables found damaged when the database was opened, set aside then (src/db/integrity.ts). */
  tablesSetAsideAtOpen(): { tables: DerivedTables; setAside: SetAsideTable[] }[] {
    const found = tablesSetAsideAtOpen(this.db.$client);
    const groups: { tables: DerivedTables; setAside: SetAsideTable[] }[] = [];
    for (const [tables, names] of [
      ['state', STATE_TABLES],
      ['index', INDEX_TABLES],
    ] as const) {
      const setAside = found.filter((table) => names.includes(table.table));
      if (setAside.length > 0) groups.push({ tables, setAside });
    }
    return groups;
  }

  /** Sets aside tables of action states or of index snapshots (they could not be read) and recreates them
   *  empty (src/db/integrity.ts); returns the names they were set aside as. */
  setAside(tables: 'states' | 'checkpoints' | 'indexes'): { table: string; asideAs: string }[] {
    return setAsideTables(
      this.db.$client,
      tables === 'states' ? ['stream_state'] : tables === 'checkpoints' ? STATE_TABLES : INDEX_TABLES,
    );
  }

  /** The streams a table set aside has rows of, if it can still say (its index may be sound where its rows are
   *  not); null when that read fails too. */
  streamsIn(setAsideTable: string): string[] | null {
    try {
      return this.db.$client
        .prepare<[], string>(`select distinct stream from "${setAsideTable.replace(/"/g, '""')}"`)
        .pluck()
        .all();
    } catch {
      return null;
    }
  }

  /** The newest committed checkpoint, null when there is none. */
  loadCheckpoint(): CheckpointHead | null {
    const row = this.db.select().from(streamCheckpoints).orderBy(desc(streamCheckpoints.round)).limit(1).get();
    if (row === undefined) return null;
    return {
      round: row.round,
      formatVersion: row.formatVersion,
      position: { seq: row.journalSeq, offset: row.journalOffset },
    };
  }

  /** Records a round as committed (it becomes what startup restores) and forgets the older ones. */
  commitCheckpoint(checkpoint: CheckpointHead, nowS: number): void {
    this.db
      .insert(streamCheckpoints)
      .values({
        round: checkpoint.round,
        formatVersion: checkpoint.formatVersion,
        journalSeq: checkpoint.position.seq,
        journalOffset: checkpoint.position.offset,
        committedAtS: nowS,
      })
      .run();
    this.db.delete(streamCheckpoints).where(lt(streamCheckpoints.round, checkpoint.round)).run();
  }

  /**
   * The state rows a restore may use: those of committed rounds, each key's newest row last (rows of a round that
   * did not commit, and rows superseded by a newer one, are deleted first).
   */
  loadStateRows(committedRound: number): StateRow[] {
    const client = this.db.$client;
    client.prepare('delete from stream_state where round > ?').run(committedRound);
    client
      .prepare(
        `delete from stream_state where exists (select 1 from stream_state newer where newer.stream = stream_state.stream
           and newer.path = stream_state.path and newer.fork_key = stream_state.fork_key and newer.round > stream_state.round)`,
      )
      .run();
    return client
      .prepare<[], StateRow>(
        'select stream, path, fork_key as forkKey, round, action, config_hash as configHash, state from stream_state order by stream, path, fork_key, round',
      )
      .all();
  }

  /** Deletes every saved state (a checkpoint of a format this version cannot read). */
  deleteAllStates(): void {
    this.db.$client.prepare('delete from stream_state').run();
  }

  /** The streams that have saved states. */
  stateStreams(): string[] {
    return this.db.$client
      .prepare<[], { stream: string }>('select distinct stream from stream_state')
      .all()
      .map((row) => row.stream);
  }

  /** Prepared statements of the checkpoint rounds (like `indexEntryWriter`, one statement reused per row). */
  stateRowWriter(): StateRowWriter {
    const client = this.db.$client;
    const put = client.prepare(
      `insert into stream_state (stream, path, fork_key, round, action, config_hash, state) values (?, ?, ?, ?, ?, ?, ?)
       on conflict (stream, path, fork_key, round) do update set action = excluded.action, config_hash = excluded.config_hash, state = excluded.state`,
    );
    const deleteOlder = client.prepare(
      'delete from stream_state where stream = ? and path = ? and fork_key = ? and round < ?',
    );
    const purge = client.prepare(
      'delete from stream_state where rowid in (select rowid from stream_state where stream = ? and round < ? limit ?)',
    );
    return {
      put: (stream, path, forkKey, round, action, configHash, stateJson) =>
        put.run(stream, path, forkKey, round, action, configHash, stateJson),
      deleteOlder: (stream, path, forkKey, round) => deleteOlder.run(stream, path, forkKey, round),
      purgeStream: (stream, round, limit) => purge.run(stream, round, limit).changes,
    };
  }
}
