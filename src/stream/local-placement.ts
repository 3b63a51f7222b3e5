/**
 * The streams of a single node (docs/durability.md): events go through the ingest gateway into this process's
 * engine, written first to the journal; checkpoint rounds keep the action states and indexes in SQLite
 * (src/stream/snapshotter.ts); a restart restores the last round and replays the journal from its position.
 * A cluster node places its streams on partitions instead (src/stream/placement.ts).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Condition } from './condition.ts';
import type { StreamEngine } from './engine.ts';
import { streamNotFound } from './errors.ts';
import { IngestGateway } from './ingest-gateway.ts';
import { FileJournal } from './journal.ts';
import type { IndexStats, SearchAnswer, StreamPlacement } from './placement.ts';
import type { StreamRepository } from './repository.ts';
import type { StreamSettings } from './settings.ts';
import { StreamSnapshotter } from './snapshotter.ts';

export interface LocalPlacementOptions {
  engine: StreamEngine;
  repository: StreamRepository;
  registry: Registry;
  logger: Logger;
  settings: StreamSettings;
  /** Where the journal's segments are (`<data-dir>/journal`). */
  journalDirectory: string;
  /** Counts a batch an input refused. */
  rejected: (input: string) => void;
}

export class LocalPlacement implements StreamPlacement {
  readonly ingest: IngestGateway;
  private readonly engine: StreamEngine;
  private readonly journal: FileJournal;
  private readonly snapshotter: StreamSnapshotter;
  private readonly logger: Logger;
  private settings: StreamSettings;

  constructor(options: LocalPlacementOptions) {
    const { engine, settings, logger } = options;
    this.engine = engine;
    this.settings = settings;
    this.logger = logger;
    this.journal = new FileJournal(options.journalDirectory, options.registry, logger, settings.journalDamagedSegments);
    this.ingest = new IngestGateway(
      engine,
      settings.maxPendingEvents,
      options.rejected,
      settings.journal ? this.journal : null,
    );
    this.snapshotter = new StreamSnapshotter(engine, options.repository, logger, options.registry, {
      position: () => this.ingest.applied,
      // Truncated by every committed round even while the journal is off, so nothing covered stays behind.
      log: this.journal,
    });
  }

  /** Restores the last checkpoint round, then replays the journal after its position (docs/durability.md). */
  load(): void {
    const position = this.snapshotter.restore();
    this.ingest.useLog(this.settings.journal ? this.journal : null, position);
    // Replayed even with the journal now off: those events were acknowledged when it was on.
    const started = performance.now();
    const replayed = this.ingest.replay(
      this.journal.entriesAfter(position),
      this.settings.nesting.eventDepth,
      (entry, problem) => this.journal.skipRefused(entry, problem),
    );
    if (replayed > 0) {
      this.logger.info(
        { events: replayed, ms: Math.round(performance.now() - started) },
        'journal replayed: the events acknowledged after the last checkpoint went through the streams again',
      );
    }
  }

  start(): void {
    this.snapshotter.start(this.settings.snapshotIntervalMs);
  }

  reload(next: StreamSettings, previous: StreamSettings): void {
    this.settings = next;
    this.ingest.maxPending = next.maxPendingEvents;
    if (next.journal !== previous.journal) {
      this.ingest.useLog(next.journal ? this.journal : null, this.ingest.applied);
      this.logger.info(`streams.journal is now ${next.journal ? 'on' : 'off'}`);
    }
    if (next.snapshotIntervalMs !== previous.snapshotIntervalMs) this.snapshotter.start(next.snapshotIntervalMs);
  }

  // SQLite (the catalog) is this node's whole store of API streams.
  async putApiStream(): Promise<void> {}

  async deleteApiStream(): Promise<void> {}

  search(name: string, condition: Condition, _queryText: string, limit: number): SearchAnswer {
    const index = this.engine.index(name);
    if (index === undefined) throw streamNotFound(name);
    return index.search(condition, limit);
  }

  indexStats(): Map<string, IndexStats> {
    const stats = new Map<string, IndexStats>();
    for (const name of this.engine.names()) {
      const index = this.engine.index(name);
      if (index !== undefined) stats.set(name, { size: index.size, currentTime: index.currentTime });
    }
    return stats;
  }

  currentTime(name: string): number {
    return this.engine.index(name)?.currentTime ?? 0;
  }

  catalogChanged(): void {}

  /** Every batch acknowledged so far is written; the last round then covers them all and drops the journal. */
  async stop(): Promise<void> {
    this.snapshotter.stop();
    await this.journal.close();
    await this.ingest.idle();
    this.snapshotter.write();
    await this.snapshotter.close();
  }
}
