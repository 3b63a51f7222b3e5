/**
 * The healthcheck metrics, named as upstream: `healthcheck_total{name,status}` and
 * `healthcheck_duration_seconds{name}`, both with the keys of `healthchecks-labels` as extra labels (value ""
 * when a check lacks the label). Plus `healthcheck_scheduling_lag_seconds`, how late runs start, which the
 * `checks` benchmark reads.
 *
 * The last result per check, as gauges (so that an alert rule needs no rate): `healthcheck_up` 1/0 (as
 * blackbox_exporter's `probe_success`), `healthcheck_last_duration_seconds`, and for TLS checks
 * `healthcheck_tls_certificate_expiry_seconds`, the earliest NotAfter of the chain as a Unix time (TLS checks, and
 * the mail checks with TLS), and for domain checks `healthcheck_domain_expiry_seconds`, the registration's expiry.
 * A check run from several places (docs/checks.md "Locations") has `healthcheck_location_success{node}` 1/0 for each
 * chosen location's latest result, and its `healthcheck_up` is its state (failing at quorum), not its last run's.
 * `healthcheck_state{state}` is the check's state (docs/checks.md "States"), a state set as OpenMetrics has them and
 * kube-state-metrics writes its phases: a series per state, 1 for the current one and 0 for the five others, so
 * that `healthcheck_state{state="down"} == 1` selects the down checks and no series comes and goes with a change.
 * Unlike the others, a check has them from its registration (`pending` before its first result, `paused` when it
 * was paused before a restart).
 *
 * The per-check series are kept here as plain numbers in one small object per check, and written in the text
 * format by a text collector (src/server/metrics.ts): a run only adds to numbers, and a scrape of 12,000 checks
 * (240,000 samples) is string concatenation over label text escaped once when the check was added. As with
 * prom-client, a check's series appear with its first run, and a status series with its first run of that status.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { registerTextCollector } from '../server/metrics.ts';
import type { FoldReason } from './results/pending-results.ts';
import type { CheckResult } from './result-types.ts';
import { CHECK_STATES, type CheckState } from './state-names.ts';

/** Upstream's buckets (docs/http-api.md, metrics). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const LAG_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BUCKET_LABELS = [...DURATION_BUCKETS.map(String), '+Inf'];
/** About 50 KB of text per piece for the histogram family: a few ms of work between two event-loop turns. */
const CHECKS_PER_PIECE = 64;

const FAMILIES = {
  lag: header(
    'healthcheck_scheduling_lag_seconds',
    'histogram',
    'How late periodic healthcheck runs start compared to their due time (waiting for a run slot included).',
  ),
  total: header('healthcheck_total', 'counter', 'Count the number of healthchecks executions.'),
  duration: header('healthcheck_duration_seconds', 'histogram', 'Time to execute a healthcheck.'),
  up: header('healthcheck_up', 'gauge', 'Whether the last run of the healthcheck succeeded (1) or failed (0).'),
  lastDuration: header('healthcheck_last_duration_seconds', 'gauge', 'Duration of the last run of the healthcheck.'),
  certificateExpiry: header(
    'healthcheck_tls_certificate_expiry_seconds',
    'gauge',
    'TLS healthchecks: the earliest expiry (NotAfter) of the certificate chain seen by the last handshake, as a Unix time in seconds.',
  ),
  domainExpiry: header(
    'healthcheck_domain_expiry_seconds',
    'gauge',
    'Domain healthchecks: the expiry of the registration found through RDAP by the last run, as a Unix time in seconds.',
  ),
  state: header(
    'healthcheck_state',
    'gauge',
    'The state of the healthcheck (docs/checks.md, "States"): 1 for its current state, 0 for the others (up, pending, down, degraded, paused, maintenance).',
  ),
  locationSuccess: header(
    'healthcheck_location_success',
    'gauge',
    "Healthchecks with locations, in a cluster: whether each chosen location's (node's) latest run succeeded (1) or failed (0).",
  ),
};

function header(name: string, type: string, help: string): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;
}

/** The exposition format's label value escaping: backslash, double quote and line feed. */
function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (character) => (character === '\n' ? '\\n' : `\\${character}`));
}

/** One check's series: its label text (escaped once) and the numbers its runs add to. */
/**
 * `healthcheck_pending_results`, the raw results waiting to be written, and
 * `healthcheck_results_folded_total{reason}`, the raw results not kept (their runs still count in the aggregates;
 * docs/hardening.md, "Heartbeat floods"). Returns the counter's increment.
 */
export function pendingResultMetrics(
  registry: Registry,
  pending: () => { size: number; bytes: number },
): (reason: FoldReason) => void {
  new Gauge({
    name: 'healthcheck_pending_results',
    help: 'Raw healthcheck results waiting in memory to be written to SQLite.',
    registers: [registry],
    collect() {
      this.set(pending().size);
    },
  });
  new Gauge({
    name: 'healthcheck_pending_bytes',
    help: 'Bytes of the messages of the raw healthcheck results waiting in memory (healthchecks.max-pending-bytes).',
    registers: [registry],
    collect() {
      this.set(pending().bytes);
    },
  });
  const folded = new Counter({
    name: 'healthcheck_results_folded_total',
    help: 'Raw healthcheck results not kept (history_size: their check had history-size newer ones waiting; pending_full: healthchecks.max-pending-results were waiting; pending_bytes: healthchecks.max-pending-bytes were); their runs still count in the uptime aggregates.',
    labelNames: ['reason'],
    registers: [registry],
  });
  return (reason) => folded.inc({ reason });
}

export class CheckSeries {
  /** `name="…",<label>="…"`: the labels every series of the check carries. */
  readonly labelText: string;
  successes = 0;
  failures = 0;
  /**
   * Per bucket (not cumulative: summed at scrape time), the last slot for runs over the largest bound. A plain array
   * of small integers: a Float64Array of 14 is a typed array, an ArrayBuffer and a backing store allocated outside
   * the heap, about 420 bytes a check against 160 (bench/JOURNAL.md, "Per-check histograms in plain arrays").
   */
  readonly bucketCounts: number[] = Array.from({ length: DURATION_BUCKETS.length + 1 }, () => 0);
  durationSum = 0;
  /** 1 or 0 once the check has run, -1 before. */
  up = -1;
  lastDurationSeconds = 0;
  /** NaN until a TLS handshake reported one. */
  certificateExpirySeconds = Number.NaN;
  /** NaN until a domain check's RDAP answer reported one. */
  domainExpirySeconds = Number.NaN;
  /** A check with locations: its `healthcheck_location_success` lines, rewritten at each of its results. */
  locationLines = '';
  /** The state its `healthcheck_state` lines show (written at the scrape: kept as lines, 12,000 checks' strings held
   *  18 MB of heap). */
  state: CheckState | undefined;

  constructor(labelText: string) {
    this.labelText = labelText;
  }
}

export class HealthcheckMetrics {
  /**
   * `healthcheck_scheduling_lag_seconds` in plain numbers, as the per-check series: every run start adds to it, and
   * prom-client's Histogram left about 240 bytes of garbage an observation (bench/JOURNAL.md,
   * "Issue 66"). Per bucket, not cumulative; the last slot for lags over the largest bound.
   */
  private readonly lagCounts: number[] = Array.from({ length: LAG_BUCKETS.length + 1 }, () => 0);
  private lagSum = 0;
  /** `name` and `status` are ours; a label key of that name in `healthchecks-labels` cannot be honoured. */
  private readonly labelKeys: string[];
  /** Every check's series, in the order the checks were added. */
  private readonly checks = new Set<CheckSeries>();
  /** The series of `healthcheck_state`: every registered check has a state, run or not. */
  private readonly stateChecks = new Set<CheckSeries>();

  constructor(registry: Registry, labelKeys: readonly string[]) {
    this.labelKeys = labelKeys.filter((key) => key !== 'name' && key !== 'status');
    registerTextCollector(registry, () => this.render());
  }

  /** The check's series holder; its series appear in the output once it has run. */
  labelsFor(name: string, labels: Readonly<Record<string, string>>): CheckSeries {
    let text = `name="${escapeLabelValue(name)}"`;
    for (const key of this.labelKeys) text += `,${key}="${escapeLabelValue(labels[key] ?? '')}"`;
    return new CheckSeries(text);
  }

  /** `certificateExpirySeconds`: what the run's TLS handshake saw, when the check makes one; `domainExpirySeconds`
   *  what a domain check's RDAP answer said. */
  observeRun(
    series: CheckSeries,
    success: boolean,
    durationSeconds: number,
    certificateExpirySeconds?: number,
    domainExpirySeconds?: number,
  ): void {
    // Added at its first run, so that a check created and dropped before it ran (a refused bulk) leaves nothing.
    if (series.up < 0) this.checks.add(series);
    if (success) series.successes++;
    else series.failures++;
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && durationSeconds > (DURATION_BUCKETS[bucket] as number)) bucket++;
    series.bucketCounts[bucket] = (series.bucketCounts[bucket] ?? 0) + 1;
    series.durationSum += durationSeconds;
    series.up = success ? 1 : 0;
    series.lastDurationSeconds = durationSeconds;
    if (certificateExpirySeconds !== undefined) series.certificateExpirySeconds = certificateExpirySeconds;
    if (domainExpirySeconds !== undefined) series.domainExpirySeconds = domainExpirySeconds;
  }

  /** The check's state after a run (src/healthcheck/registry/locations.ts): for a check with locations,
   *  `healthcheck_up` is its state and each chosen location that has run gets its line. Nothing to do for the others
   *  (observeRun did). */
  observeState(series: CheckSeries, state: CheckResult): void {
    const locations = state.locations;
    if (locations === undefined) return;
    series.up = state.success ? 1 : 0;
    let lines = '';
    for (const location of locations) {
      if (location.success === undefined) continue;
      lines += `healthcheck_location_success{${series.labelText},node="${escapeLabelValue(location.node)}"} ${location.success ? 1 : 0}\n`;
    }
    series.locationLines = lines;
  }

  /** The check's state (src/healthcheck/states/), which its `healthcheck_state` series show from now on. */
  observeCheckState(series: CheckSeries, state: CheckState): void {
    if (series.state === undefined) this.stateChecks.add(series);
    series.state = state;
  }

  observeLag(lagSeconds: number): void {
    let bucket = 0;
    while (bucket < LAG_BUCKETS.length && lagSeconds > (LAG_BUCKETS[bucket] as number)) bucket++;
    (this.lagCounts[bucket] as number)++;
    this.lagSum += lagSeconds;
  }

  /** Drops every series of a check (removed or replaced). */
  remove(series: CheckSeries): void {
    this.checks.delete(series);
    this.stateChecks.delete(series);
  }

  /**
   * The per-check families in the text format, in pieces of CHECKS_PER_PIECE checks (src/server/metrics.ts sends
   * them one event-loop turn apart). A family with no sample is left out, as prom-client does.
   */
  private *render(): Generator<string> {
    yield this.lagText();
    yield* this.family(FAMILIES.total, (series) => {
      let lines = '';
      if (series.successes > 0)
        lines += `healthcheck_total{${series.labelText},status="success"} ${series.successes}\n`;
      if (series.failures > 0) lines += `healthcheck_total{${series.labelText},status="failure"} ${series.failures}\n`;
      return lines;
    });
    yield* this.family(FAMILIES.duration, (series) => {
      const labels = series.labelText;
      let lines = '';
      let cumulative = 0;
      for (let bucket = 0; bucket < BUCKET_LABELS.length; bucket++) {
        cumulative += series.bucketCounts[bucket] ?? 0;
        lines += `healthcheck_duration_seconds_bucket{${labels},le="${BUCKET_LABELS[bucket]}"} ${cumulative}\n`;
      }
      return `${lines}healthcheck_duration_seconds_sum{${labels}} ${series.durationSum}\nhealthcheck_duration_seconds_count{${labels}} ${cumulative}\n`;
    });
    yield* this.family(FAMILIES.up, (series) => `healthcheck_up{${series.labelText}} ${series.up}\n`);
    yield* this.family(
      FAMILIES.lastDuration,
      (series) => `healthcheck_last_duration_seconds{${series.labelText}} ${series.lastDurationSeconds}\n`,
    );
    yield* this.family(FAMILIES.certificateExpiry, (series) =>
      Number.isNaN(series.certificateExpirySeconds)
        ? ''
        : `healthcheck_tls_certificate_expiry_seconds{${series.labelText}} ${series.certificateExpirySeconds}\n`,
    );
    yield* this.family(FAMILIES.domainExpiry, (series) =>
      Number.isNaN(series.domainExpirySeconds)
        ? ''
        : `healthcheck_domain_expiry_seconds{${series.labelText}} ${series.domainExpirySeconds}\n`,
    );
    yield* this.family(
      FAMILIES.state,
      (series) => {
        let lines = '';
        for (const one of CHECK_STATES)
          lines += `healthcheck_state{${series.labelText},state="${one}"} ${one === series.state ? 1 : 0}\n`;
        return lines;
      },
      this.stateChecks,
    );
    yield* this.family(FAMILIES.locationSuccess, (series) => series.locationLines);
  }

  /** The lag histogram as prom-client wrote it: cumulative buckets, then the sum and the count. */
  private lagText(): string {
    let text = FAMILIES.lag;
    let cumulative = 0;
    for (let bucket = 0; bucket <= LAG_BUCKETS.length; bucket++) {
      cumulative += this.lagCounts[bucket] as number;
      text += `healthcheck_scheduling_lag_seconds_bucket{le="${LAG_BUCKETS[bucket] ?? '+Inf'}"} ${cumulative}\n`;
    }
    return `${text}healthcheck_scheduling_lag_seconds_sum ${this.lagSum}\nhealthcheck_scheduling_lag_seconds_count ${cumulative}\n`;
  }

  /** One family: its header before its first sample, then its samples in pieces. */
  private *family(
    header: string,
    samples: (series: CheckSeries) => string,
    checks: ReadonlySet<CheckSeries> = this.checks,
  ): Generator<string> {
    let piece = '';
    let inPiece = 0;
    let started = false;
    for (const series of checks) {
      const lines = samples(series);
      if (lines === '') continue;
      if (!started) {
        piece = header;
        started = true;
      }
      piece += lines;
      if (++inPiece === CHECKS_PER_PIECE) {
        yield piece;
        piece = '';
        inPiece = 0;
      }
    }
    if (piece !== '') yield piece;
  }
}
