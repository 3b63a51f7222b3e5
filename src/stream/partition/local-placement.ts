/**
 * The streams of a single node (docs/durability.md): one partition holding every stream
 * (src/stream/partition/partition.ts), fed through the ingest gateway, each batch written first to the journal, and
 * checkpointed to SQLite (src/stream/durability/sqlite-checkpoints.ts); a restart restores the last checkpoint and
 * replays the journal from its position (src/stream/durability/journal-log.ts). A cluster node places its streams on
 * partitions instead (src/stream/partition/placement.ts).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CheckpointMetrics } from '../durability/checkpoint-metrics.ts';
import type { Condition } from '../lang/condition.ts';
import type { StreamEngine } from '../engine/engine.ts';
import { streamNotFound } from '../errors.ts';
import { IngestGateway } from './ingest-gateway.ts';
import { FileJournal } from '../durability/journal.ts';
import { JournalLog } from '../durability/journal-log.ts';
import { StreamPartition } from './partition.ts';
import type { IndexStats, SearchAnswer, StreamPlacement } from './placement.ts';
import type { StreamRepository } from '../durability/repository.ts';
import type { StreamSettings } from '../settings.ts';
import { SqliteCheckpoints } from '../durability/sqlite-checkpoints.ts';

export interface LocalPlacementOptions {
  engine: StreamEngine;
  repository: StreamRepository;
  registry: Registry;
  metrics: CheckpointMetrics;
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
  private readonly partition: StreamPartition;
  private readonly logger: Logger;
  private settings: StreamSettings;

  constructor(options: LocalPlacementOptions) {
    const { engine, settings, logger } = options;
    this.engine = engine;
    this.settings = settings;
    this.logger = logger;
    this.journal = new FileJournal(options.journalDirectory, options.registry, logger, settings.journalDamagedSegments);
    this.partition = new StreamPartition({
      engine,
      log: new JournalLog(this.journal, () => this.settings.nesting.eventDepth, logger),
      store: new SqliteCheckpoints(options.repository, logger),
      metrics: options.metrics,
      logger,
    });
    this.ingest = new IngestGateway(
      this.partition,
      settings.maxPendingEvents,
      options.rejected,
      settings.journal ? this.journal : null,
    );
  }

  /** Restores the last checkpoint round, then replays the journal after its position (docs/durability.md). */
  async load(): Promise<void> {
    await this.partition.open();
  }

  start(): void {
    this.partition.start(this.settings.snapshotIntervalMs);
  }

  reload(next: StreamSettings, previous: StreamSettings): void {
    this.settings = next;
    this.ingest.maxPending = next.maxPendingEvents;
    if (next.journal !== previous.journal) {
      this.ingest.useLog(next.journal ? this.journal : null);
      this.logger.info(`streams.journal is now ${next.journal ? 'on' : 'off'}`);
    }
    if (next.snapshotIntervalMs !== previous.snapshotIntervalMs) this.partition.start(next.snapshotIntervalMs);
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
    // No round while the backlog drains: the journal, once closed, drops every segment a round covers.
    this.partition.pause();
    await this.journal.close();
    await this.ingest.idle();
    await this.partition.close(true);
  }
}
