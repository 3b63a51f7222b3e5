/**
 * What a partition that starts brings back from its checkpoint store (docs/durability.md): the action states of the
 * last committed round, and the index snapshots of the streams whose config is the one they were taken with; the
 * partition then reads its log from the round's position (src/stream/partition/partition.ts). Damaged derived state
 * never stops it (docs/durability.md, "Damaged state"): what cannot be read is set aside by the store (or was, when it
 * was opened) and the streams it held start afresh, each loss logged and counted.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import {
  CHECKPOINT_FORMAT_VERSION,
  type CheckpointDamage,
  type CheckpointHead,
  type CheckpointPart,
  type CheckpointReader,
} from './checkpoint-store.ts';
import type { EdnValue } from '../lang/edn.ts';
import type { StreamEngine } from '../engine/engine.ts';
import type { IndexStore } from '../index-store.ts';
import { readIndexSnapshot, type RestoreFailures } from './restore-failures.ts';
import type { StateCheckpointer } from './state-checkpoint.ts';

/** What the store holds for a stream: the snapshot of this index, built by this config. */
export interface Written {
  readonly index: IndexStore;
  readonly configHash: string;
}

export interface RestoredCheckpoint {
  /** The last committed round, null when there is none. */
  head: CheckpointHead | null;
  /** The indexes restored from their snapshots. */
  written: Map<string, Written>;
  /** How many action states and index entries came back. */
  units: number;
  entries: number;
}

export interface SnapshotRestoreOptions {
  engine: StreamEngine;
  reader: CheckpointReader;
  logger: Logger;
  restoreFailures: RestoreFailures;
  state: StateCheckpointer;
  configHash: (config: EdnValue) => string;
}

export class SnapshotRestore {
  private head: CheckpointHead | null = null;
  private readonly written = new Map<string, Written>();
  private units = 0;
  private entries = 0;
  private readonly engine: StreamEngine;
  private readonly reader: CheckpointReader;
  private readonly logger: Logger;

  constructor(private readonly options: SnapshotRestoreOptions) {
    this.engine = options.engine;
    this.reader = options.reader;
    this.logger = options.logger;
  }

  /**
   * Restores the action states of the last committed round and the index snapshots of the streams whose config
   * is the one they were taken with; returns the round (its position is where the log is read from).
   */
  run(): RestoredCheckpoint {
    for (const damage of this.reader.damaged) this.lost(damage);
    // What was set aside is there again, empty: what is left is read as usual.
    let head: CheckpointHead | null | undefined;
    this.reading('head', () => (head = this.reader.head()));
    if (head !== undefined) this.reading('states', () => this.restoreStates(head ?? null));
    this.reading('indexes', () => this.restoreIndexes());
    return { head: this.head, written: this.written, units: this.units, entries: this.entries };
  }

  /** Runs a restore; when it cannot read its part of the store, has the store set it aside so that the next round
   *  writes sound rows. */
  private reading(part: CheckpointPart, restore: () => void): void {
    try {
      restore();
    } catch (error) {
      for (const damage of this.reader.setAside(part, (error as Error).message)) this.lost(damage);
    }
  }

  /** Reports the streams whose state or index was damaged: those it names, else every stream that may have had some. */
  private lost(damage: CheckpointDamage): void {
    const { restoreFailures } = this.options;
    for (const stream of damage.streams ?? this.engine.names()) {
      const info = this.engine.get(stream);
      if (info === undefined) continue;
      // An index restored before the read failed keeps what it restored (the next round writes it whole).
      if (damage.kind === 'index' && !this.written.has(stream))
        restoreFailures.indexLost(stream, 'damaged', damage.problem);
      else if (info.stateUnits.length > 0)
        restoreFailures.stateLost(stream, 'damaged', `its saved action state is unreadable (${damage.problem})`);
    }
  }

  private restoreStates(head: CheckpointHead | null): void {
    if (head === null) return;
    this.head = head;
    if (head.formatVersion !== CHECKPOINT_FORMAT_VERSION) {
      this.logger.warn(
        { round: head.round, format: head.formatVersion },
        `the stream checkpoint is in format ${head.formatVersion}, which this version does not read (it writes ${CHECKPOINT_FORMAT_VERSION}): action states start afresh`,
      );
      this.reader.discardStates();
      return;
    }
    const started = performance.now();
    const { units, forks } = this.options.state.restore(this.reader.stateRows(head.round), this.reader.stateStreams());
    const ms = Math.round(performance.now() - started);
    this.units = units;
    if (units > 0)
      this.logger.info({ round: head.round, units, forks, ms }, 'action states restored from the last checkpoint');
  }

  /** Restores each unchanged stream's index whose snapshot parses and has the shape of an index; a refused one
   *  is left out (the first round deletes it: the stream is not in `written`). */
  private restoreIndexes(): void {
    const snapshots = this.reader.indexMetas();
    let restored = 0;
    for (const snapshot of snapshots) {
      const info = this.engine.get(snapshot.stream);
      const configHash = info === undefined ? null : this.options.configHash(info.config);
      if (info === undefined || (snapshot.configHash !== null && configHash !== snapshot.configHash)) continue;
      const read = readIndexSnapshot(snapshot.currentTimeNs, this.reader.indexEntries(snapshot.stream));
      if ('reason' in read) {
        this.options.restoreFailures.indexLost(snapshot.stream, read.reason, read.problem);
        continue;
      }
      info.index.restore(read);
      this.entries += read.entries.length;
      this.written.set(snapshot.stream, { index: info.index, configHash: configHash as string });
      restored++;
    }
    if (snapshots.length > 0)
      this.logger.info({ restored, stored: snapshots.length }, 'index snapshots restored into unchanged streams');
  }
}
