/**
 * Index snapshots: every non-empty index is written to SQLite every `snapshot-interval` and at stop, and
 * restored at startup into the streams whose config did not change (by hash of the printed config). Today a
 * snapshot rewrites every index in one transaction; `write()` is the one place to make it incremental.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { type EdnValue, printEdn } from './edn.ts';
import type { StreamEngine } from './engine.ts';
import type { Event } from './event.ts';
import type { StoredIndexSnapshot, StreamRepository } from './repository.ts';

export class IndexSnapshotter {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly engine: StreamEngine,
    private readonly repository: StreamRepository,
    private readonly logger: Logger,
  ) {}

  /** Restores the stored snapshots into the running streams whose config is the one they were taken with. */
  restore(): void {
    const snapshots = this.repository.loadIndexSnapshots();
    let restored = 0;
    for (const snapshot of snapshots) {
      const info = this.engine.get(snapshot.stream);
      if (info === undefined || configHash(info.config) !== snapshot.configHash) continue;
      info.index.restore({ currentTime: snapshot.currentTimeNs, entries: snapshot.entries as { key: string; event: Event }[] });
      restored++;
    }
    if (snapshots.length > 0) this.logger.info({ restored, stored: snapshots.length }, 'index snapshots restored into unchanged streams');
  }

  /** Writes the snapshot of every non-empty index, all in one transaction. */
  write(): void {
    const snapshots: StoredIndexSnapshot[] = [];
    for (const name of this.engine.names()) {
      const info = this.engine.get(name);
      if (info === undefined || (info.index.size === 0 && info.index.currentTime === 0)) continue;
      const { currentTime, entries } = info.index.snapshot();
      snapshots.push({ stream: name, currentTimeNs: currentTime, configHash: configHash(info.config), entries });
    }
    this.repository.replaceIndexSnapshots(snapshots, Math.floor(Date.now() / 1000));
  }

  /** (Re)starts the periodic snapshot; a failed one is logged and the next one tried. */
  start(intervalMs: number): void {
    this.stop();
    this.timer = setInterval(() => {
      try {
        this.write();
      } catch (error) {
        this.logger.error({ err: error }, `index snapshot failed: ${(error as Error).message}`);
      }
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

function configHash(config: EdnValue): string {
  return createHash('sha256').update(printEdn(config)).digest('hex');
}
