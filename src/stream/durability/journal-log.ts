/**
 * A single node's event log, as its partition reads it (src/stream/durability/event-log.ts): the file journal
 * (src/stream/durability/journal.ts). Following it from a position replays the entries the journal holds after it, in
 * order, as they were pushed the first time; after that the ingest gateway (src/stream/partition/ingest-gateway.ts)
 * hands the partition each batch once the journal has made it durable. A committed checkpoint lets the journal drop the
 * segments it covers, even while the journal is off, so that nothing covered stays behind.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { LogPosition, LogReader, PartitionLog } from './event-log.ts';
import type { FileJournal } from './journal.ts';
import { eventsOf } from './journal-records.ts';

export class JournalLog implements PartitionLog {
  constructor(
    private readonly journal: FileJournal,
    /** The service's `streams.max-event-depth`, which the events read back are checked against. */
    private readonly eventDepth: () => number,
    private readonly logger: Logger,
  ) {}

  /**
   * Replays what the journal holds after `from`, at once (startup, before the service listens). An entry whose events
   * are refused is skipped, logged and counted (src/stream/durability/journal.ts `skipRefused`): one bad entry never
   * keeps the service from starting. Replayed even with the journal now off: those events were acknowledged when it was
   * on.
   */
  follow(from: LogPosition, reader: LogReader): void {
    const started = performance.now();
    let replayed = 0;
    for (const entry of this.journal.entriesAfter(from)) {
      let events;
      try {
        events = eventsOf(entry, this.eventDepth());
      } catch (error) {
        this.journal.skipRefused(entry, (error as Error).message);
        continue;
      }
      if (entry.seq === from.seq) events = events.slice(from.offset);
      reader.apply({ seq: entry.seq, offset: entry.count }, entry.target, events);
      replayed += events.length;
    }
    if (replayed > 0) {
      this.logger.info(
        { events: replayed, ms: Math.round(performance.now() - started) },
        'journal replayed: the events acknowledged after the last checkpoint went through the streams again',
      );
    }
  }

  /** The gateway stops handing batches over when the journal is closed. */
  stop(): void {}

  covered(position: LogPosition): void {
    this.journal.truncate(position);
  }
}
