/**
 * SQLite storage of the stream part: API-created streams and index snapshots. Knows nothing of HTTP or of the
 * engine; the service calls it inside its own transactions (`transaction`) so that a stream row and its
 * `:persist` file are written together, before the API answers.
 */
import { eq } from 'drizzle-orm';
import { type WalCheckpointer, walCheckpointer } from '../db/checkpointer.ts';
import type { Db } from '../db/client.ts';
import { indexMeta, streams } from '../db/schema.ts';

export interface StoredStream {
  name: string;
  /** The EDN text of the stream config, exactly as it was sent. */
  configEdn: string;
  isDefault: boolean;
  persist: boolean;
}

export interface IndexSnapshotEntry {
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

export class StreamRepository {
  constructor(private readonly db: Db) {}

  /** Runs `work` in one SQLite transaction; an exception rolls everything back. */
  transaction<T>(work: () => T): T {
    return this.db.transaction(() => work());
  }

  listStreams(): StoredStream[] {
    return this.db
      .select({ name: streams.name, configEdn: streams.configEdn, isDefault: streams.isDefault, persist: streams.persist })
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
    return this.db.select({ stream: indexMeta.stream }).from(indexMeta).all().map((row) => row.stream);
  }

  /** Removes the snapshot of one stream, its entries with it (foreign key cascade). */
  deleteIndexSnapshot(stream: string): void {
    this.db.delete(indexMeta).where(eq(indexMeta.stream, stream)).run();
  }

  /** Creates or updates the snapshot row of one stream (its entries are written by `indexEntryWriter`). */
  saveIndexMeta(meta: Omit<StoredIndexSnapshot, 'entries'>, nowS: number): void {
    const values = { stream: meta.stream, currentTimeNs: meta.currentTimeNs, configHash: meta.configHash, savedAtS: nowS };
    this.db.insert(indexMeta).values(values).onConflictDoUpdate({ target: indexMeta.stream, set: values }).run();
  }

  /**
   * Prepared statements that write one entry of a snapshot: snapshots are the one bulk write of the stream part
   * (100k+ rows), and a statement reused for every row is several times faster than a Drizzle query per row.
   */
  indexEntryWriter(): { upsert: (stream: string, key: string, eventJson: string) => void; remove: (stream: string, key: string) => void } {
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

  /** The connection's checkpointer, which checkpoints in a worker thread while a snapshot writes (src/db/checkpointer.ts). */
  walCheckpointer(onError: (message: string) => void): WalCheckpointer {
    return walCheckpointer(this.db, onError);
  }

  loadIndexSnapshots(): StoredIndexSnapshot[] {
    const metas = this.db.select().from(indexMeta).all();
    const entriesOf = this.db.$client.prepare<[string], { key: string; event: string }>('select key, event from index_snapshots where stream = ?');
    return metas.map((meta) => ({
      stream: meta.stream,
      currentTimeNs: meta.currentTimeNs,
      configHash: meta.configHash,
      entries: entriesOf.all(meta.stream).map((row) => ({ key: row.key, event: JSON.parse(row.event) as unknown })),
    }));
  }
}
