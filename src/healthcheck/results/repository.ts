/**
 * SQLite storage of the healthcheck part, composed of its stores: API-created definitions
 * (definition-store.ts), results with their history and aggregates (result-store.ts), the history reads
 * (history-reads.ts) and the uptime reads over the aggregates (uptime-reads.ts). What spans them lives here: a
 * bulk replace and a delete change definitions and results in one transaction. Knows nothing of HTTP or of scheduling.
 */
import type { Db } from '../../db/client.ts';
import { DefinitionStore } from './definition-store.ts';
import { HistoryReads } from './history-reads.ts';
import { type RepositoryOptions, ResultStore } from './result-store.ts';
import type {
  CheckResult,
  DurationBucket,
  HistoryEntry,
  SeriesWindow,
  StoredCheck,
  UptimeRatios,
  UptimeWindow,
  UptimeWindowName,
} from '../result-types.ts';
import { UptimePeriods } from './uptime-periods.ts';
import { UptimeReads } from './uptime-reads.ts';

export type { RepositoryOptions } from './result-store.ts';
export * from '../result-types.ts';

export class HealthcheckRepository {
  readonly definitions: DefinitionStore;
  readonly results: ResultStore;
  readonly histories: HistoryReads;
  readonly uptimes: UptimeReads;
  readonly periods: UptimePeriods;

  constructor(
    private readonly db: Db,
    options: RepositoryOptions,
  ) {
    const nowS = options.nowS ?? (() => Math.floor(Date.now() / 1000));
    this.definitions = new DefinitionStore(db, nowS);
    this.results = new ResultStore(db, options);
    this.histories = new HistoryReads(db, this.results.pending, options.historySize);
    this.uptimes = new UptimeReads(db, this.results.pending, nowS);
    this.periods = new UptimePeriods(db, this.results.pending, nowS);
  }

  start(): void {
    this.results.start();
  }

  stop(): void {
    this.results.stop();
  }

  // Definitions

  listApiChecks(): StoredCheck[] {
    return this.definitions.listApiChecks();
  }

  saveCheck(check: StoredCheck): void {
    this.definitions.saveCheck(check);
  }

  deleteDefinitions(names: readonly string[]): void {
    if (names.length === 0) return;
    this.db.transaction((tx) => this.definitions.deleteDefinitions(names, tx));
  }

  /**
   * The bulk API in one transaction: writes `saved`, and forgets every check of `removed` (definition, result,
   * history and aggregates).
   */
  replaceChecks(saved: readonly StoredCheck[], removed: readonly string[]): void {
    this.results.flush();
    this.db.transaction((tx) => {
      for (const check of saved) this.definitions.upsert(tx, check);
      this.definitions.deleteDefinitions(removed, tx);
      this.results.forget(tx, removed);
    });
  }

  /** Forgets checks entirely: definition, latest result, history and aggregates (buffered results included). */
  forgetChecks(names: readonly string[]): void {
    if (names.length === 0) return;
    this.results.flush();
    this.db.transaction((tx) => {
      this.definitions.deleteDefinitions(names, tx);
      this.results.forget(tx, names);
    });
  }

  /**
   * Forgets everything stored about checks that no longer exist (e.g. removed from the file while stopped).
   * Every check with history or aggregates has a latest result (they are written in one transaction and forgotten
   * together), so the small results table tells which names to look at.
   */
  retainOnly(existing: ReadonlySet<string>): string[] {
    const gone = [...this.results.storedNames()].filter((name) => !existing.has(name));
    this.forgetChecks(gone);
    return gone;
  }

  // Results

  loadResults(): CheckResult[] {
    return this.results.loadResults();
  }

  /** A run's result; `state`, the check's state it gives (a check with locations), is its latest result. */
  record(result: CheckResult, state: CheckResult = result): void {
    this.results.record(result, state);
  }

  writeDue(): Promise<void> {
    return this.results.writeDue();
  }

  dropBuffered(names: ReadonlySet<string>): void {
    this.results.dropBuffered(names);
  }

  flush(): void {
    this.results.flush();
  }

  history(name: string, limit: number): HistoryEntry[] {
    return this.histories.history(name, limit);
  }

  recentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    return this.histories.recentResults(names, limit);
  }

  // Uptime

  uptime(name: string): Record<UptimeWindowName, UptimeWindow> {
    return this.uptimes.uptime(name);
  }

  uptimeOfAll(): Map<string, UptimeRatios> {
    return this.uptimes.uptimeOfAll();
  }

  durationSeries(name: string, window: SeriesWindow): DurationBucket[] {
    return this.uptimes.durationSeries(name, window);
  }
}
