/**
 * The healthcheck part's reads, for the API and the dashboard: the checks and their latest results from the
 * registry, and their history, uptime and response times from the repository (which counts the results still
 * waiting to be written). A read of an unknown check is refused as the API answers it. The dashboard's reads are a
 * few queries for every check, never one per check; the uptime ratios behind its list are cached a moment.
 */
import type { Static } from '@sinclair/typebox';
import { type CheckJson, checkToJson } from './kinds/index.ts';
import { HealthcheckError, notFound } from './errors.ts';
import type { CheckRegistry } from './registry/registry.ts';
import type { HealthcheckRepository } from './results/repository.ts';
import type { StateApi } from './states/state-api.ts';
import type {
  CheckResult,
  DurationBucket,
  HistoryEntry,
  SeriesWindow,
  UptimeRatios,
  UptimeWindow,
  UptimeWindowName,
} from './result-types.ts';
import type { CheckOverview as CheckOverviewWire } from './wire.ts';

/** One row of the dashboard's check list, as its wire type declares it. */
export type CheckOverview = Static<typeof CheckOverviewWire>;

const UPTIME_CACHE_MS = 5000;

export class CheckReads {
  private uptimeCache: { at: number; ratios: Map<string, UptimeRatios> } | null = null;

  constructor(
    private readonly checks: CheckRegistry,
    private readonly repository: HealthcheckRepository,
    private readonly states: StateApi,
  ) {}

  list(): CheckJson[] {
    return [...this.checks.all()]
      .sort((a, b) => compareNames(a.def.name, b.def.name))
      .map((check) => checkToJson(check.def, check.source));
  }

  get(name: string): CheckJson {
    const check = this.checks.get(name);
    if (!check) throw notFound(name);
    return checkToJson(check.def, check.source);
  }

  results(): CheckResult[] {
    return [...this.checks.latestResults()].sort((a, b) => compareNames(a.name, b.name));
  }

  result(name: string): CheckResult {
    const result = this.checks.latestResult(name);
    if (!result) throw new HealthcheckError('result-not-found', `Result not found for healthcheck ${name}`);
    return result;
  }

  history(name: string, limit: number): HistoryEntry[] {
    if (!this.checks.get(name)) throw notFound(name);
    return this.repository.history(name, limit);
  }

  uptime(name: string): Record<UptimeWindowName, UptimeWindow> {
    if (!this.checks.get(name)) throw notFound(name);
    return this.repository.uptime(name);
  }

  /** Every check with its latest result and uptime ratios, sorted by name. */
  overview(): CheckOverview[] {
    const uptime = this.uptimeRatios();
    const none: UptimeRatios = { '24h': null, '7d': null, '30d': null };
    const rows: CheckOverview[] = [];
    // Plain property writes, no spreads: this runs for every check on every poll of every open dashboard.
    for (const { def, source } of this.checks.all()) {
      const state = this.states.stateOf(def.name);
      const row: CheckOverview = {
        name: def.name,
        kind: def.kind,
        source,
        result: null,
        uptime: uptime.get(def.name) ?? none,
        state: state?.state ?? 'pending',
        'state-since': state?.['state-since'] ?? 0,
      };
      if (state?.pause !== undefined) row.pause = state.pause;
      if (def.description !== '') row.description = def.description;
      for (const _label in def.labels) {
        row.labels = def.labels;
        break;
      }
      const latest = this.checks.latestResult(def.name);
      if (latest !== undefined) {
        row.result = { success: latest.success, timestamp: latest['healthcheck-timestamp'], duration: latest.duration };
        if (!latest.success) row.result.message = latest.message;
        if (latest.maintenance) row.result.maintenance = true;
        if (latest.node !== undefined) row.result.node = latest.node;
      }
      rows.push(row);
    }
    return rows.sort((a, b) => compareNames(a.name, b.name));
  }

  /**
   * The uptime ratios of every check, recomputed at most every UPTIME_CACHE_MS: they move slowly, and every open
   * dashboard polls them. They count the results still waiting to be written.
   */
  private uptimeRatios(): Map<string, UptimeRatios> {
    const now = Date.now();
    if (this.uptimeCache === null || now - this.uptimeCache.at >= UPTIME_CACHE_MS)
      this.uptimeCache = { at: now, ratios: this.repository.uptimeOfAll() };
    return this.uptimeCache.ratios;
  }

  /** The newest `limit` raw results of each named check (unknown names are skipped), oldest first. */
  recentResults(names: readonly string[], limit: number): Map<string, HistoryEntry[]> {
    return this.repository.recentResults(
      names.filter((name) => this.checks.get(name) !== undefined),
      limit,
    );
  }

  durationSeries(name: string, window: SeriesWindow): DurationBucket[] {
    if (!this.checks.get(name)) throw notFound(name);
    return this.repository.durationSeries(name, window);
  }
}

/** Byte-wise order, as upstream's Go sort. */
function compareNames(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}
