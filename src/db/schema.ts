/**
 * Every table of the Vigie database. Tables and columns are named for people who open the file with
 * `sqlite3`: times are integers whose unit is in the column name, JSON columns hold valid JSON.
 */
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { CHECK_KIND_NAMES } from '../common/check-kinds.ts';

/** API-created healthcheck definitions (config-file checks are always re-read from the file). */
export const healthchecks = sqliteTable('healthchecks', {
  name: text('name').primaryKey(),
  kind: text('kind', { enum: CHECK_KIND_NAMES }).notNull(),
  source: text('source').notNull(),
  definition: text('definition', { mode: 'json' }).notNull(),
  createdAtS: integer('created_at_s').notNull(),
  updatedAtS: integer('updated_at_s').notNull(),
});

/** The latest result of every check, whatever its source. */
export const healthcheckResults = sqliteTable('healthcheck_results', {
  name: text('name').primaryKey(),
  success: integer('success', { mode: 'boolean' }).notNull(),
  timestampS: integer('timestamp_s').notNull(),
  durationMs: integer('duration_ms').notNull(),
  message: text('message').notNull(),
  summary: text('summary').notNull(),
  labels: text('labels', { mode: 'json' }),
  source: text('source').notNull(),
  /** The run finished during a maintenance window (docs/checks.md, "Maintenance windows"). */
  maintenance: integer('maintenance', { mode: 'boolean' }).notNull().default(false),
  /** In a cluster: the node that ran the check; null on a single node (docs/cluster.md). */
  node: text('node'),
  /**
   * The check's state from its results, maintenance and pause aside: up, pending, down or degraded (docs/checks.md,
   * "States"); the API shows `maintenance` while `maintenance` is set and `paused` while healthcheck_pauses has the
   * check. Null on rows written before states existed.
   */
  state: text('state', { enum: ['up', 'pending', 'down', 'degraded'] }),
  /** When the state shown began. */
  stateSinceMs: integer('state_since_ms'),
  /** Consecutive successes (> 0) or failures (< 0) behind the state, results in maintenance left out. */
  stateStreak: integer('state_streak').notNull().default(0),
});

/** The last N raw results of each check (N = `healthchecks.history-size`, 100 by default). */
export const healthcheckHistory = sqliteTable(
  'healthcheck_history',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    name: text('name').notNull(),
    success: integer('success', { mode: 'boolean' }).notNull(),
    timestampS: integer('timestamp_s').notNull(),
    durationMs: integer('duration_ms').notNull(),
    message: text('message').notNull(),
    maintenance: integer('maintenance', { mode: 'boolean' }).notNull().default(false),
    node: text('node'),
  },
  (table) => [index('healthcheck_history_name_id').on(table.name, table.id)],
);

/**
 * Every change of a check's state (docs/checks.md, "States"): from and to (up, pending, down, degraded, paused,
 * maintenance), the message of the first failure for a change to pending or down (the reason of a pause), and in a
 * cluster the node whose result made it. Kept `healthchecks.events-retention`, at most
 * `healthchecks.max-events-per-check` per check.
 */
export const healthcheckEvents = sqliteTable(
  'healthcheck_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    name: text('name').notNull(),
    atMs: integer('at_ms').notNull(),
    fromState: text('from_state').notNull(),
    toState: text('to_state').notNull(),
    message: text('message').notNull(),
    node: text('node'),
  },
  (table) => [
    index('healthcheck_events_name_at').on(table.name, table.atMs),
    index('healthcheck_events_at').on(table.atMs),
  ],
);

/** Checks paused through the API (docs/checks.md, "Pause"): who paused each, why, since and until when. */
export const healthcheckPauses = sqliteTable('healthcheck_pauses', {
  name: text('name').primaryKey(),
  pausedBy: text('paused_by').notNull(),
  reason: text('reason').notNull(),
  atMs: integer('at_ms').notNull(),
  /** Null: until resumed. */
  untilMs: integer('until_ms'),
});

/** Hourly (kept 30 days) and daily (kept a year) aggregates, updated as results arrive. */
export const healthcheckUptime = sqliteTable(
  'healthcheck_uptime',
  {
    name: text('name').notNull(),
    granularity: text('granularity', { enum: ['hour', 'day'] }).notNull(),
    periodStartS: integer('period_start_s').notNull(),
    runs: integer('runs').notNull(),
    successes: integer('successes').notNull(),
    durationTotalMs: integer('duration_total_ms').notNull(),
    durationMinMs: integer('duration_min_ms').notNull(),
    durationMaxMs: integer('duration_max_ms').notNull(),
  },
  (table) => [primaryKey({ columns: [table.name, table.granularity, table.periodStartS] })],
);

/** API-created streams, recompiled at startup. */
/**
 * The last payload each HTTP discovery source answered that was valid as a whole (docs/configuration.md,
 * "discovery"): its checks run again after a restart while the source is down. Written with each reconcile.
 */
export const discoveryPayloads = sqliteTable('discovery_payloads', {
  source: text('source').primaryKey(),
  payload: text('payload', { mode: 'json' }).notNull(),
  fetchedAtS: integer('fetched_at_s').notNull(),
});

export const streams = sqliteTable('streams', {
  name: text('name').primaryKey(),
  configEdn: text('config_edn').notNull(),
  isDefault: integer('is_default', { mode: 'boolean' }).notNull(),
  persist: integer('persist', { mode: 'boolean' }).notNull(),
  createdAtS: integer('created_at_s').notNull(),
  updatedAtS: integer('updated_at_s').notNull(),
});

/** One row per stream index that has a snapshot: its clock and the hash of the config it was built by. */
export const indexMeta = sqliteTable('index_meta', {
  stream: text('stream').primaryKey(),
  currentTimeNs: integer('current_time_ns').notNull(),
  configHash: text('config_hash').notNull(),
  savedAtS: integer('saved_at_s').notNull(),
});

/** The entries of each snapshotted index, keyed as the `:index` action keys them. */
export const indexSnapshots = sqliteTable(
  'index_snapshots',
  {
    stream: text('stream')
      .notNull()
      .references(() => indexMeta.stream, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    event: text('event', { mode: 'json' }).notNull(),
  },
  (table) => [primaryKey({ columns: [table.stream, table.key] })],
);

/**
 * Committed checkpoints of the streams' action state (docs/durability.md): the newest row is the one restored,
 * with the journal position it covers (every entry before `journal_seq`, and the first `journal_offset` events
 * of that one).
 */
export const streamCheckpoints = sqliteTable('stream_checkpoints', {
  round: integer('round').primaryKey(),
  formatVersion: integer('format_version').notNull(),
  journalSeq: integer('journal_seq').notNull(),
  journalOffset: integer('journal_offset').notNull(),
  committedAtS: integer('committed_at_s').notNull(),
});

/**
 * The saved state of each stateful action (and of each `:by` fork, `fork_key` being its JSON key; '' for the
 * action itself), written by the checkpoint round `round`: a checkpoint restores, for each key, the row of the
 * newest committed round. `path` is the action's place in the stream's tree, `config_hash` identifies the config
 * of its subtree; `state` is null for a fork that does not exist at that round.
 */
export const streamState = sqliteTable(
  'stream_state',
  {
    stream: text('stream').notNull(),
    path: text('path').notNull(),
    forkKey: text('fork_key').notNull(),
    round: integer('round').notNull(),
    action: text('action').notNull(),
    configHash: text('config_hash').notNull(),
    state: text('state', { mode: 'json' }),
  },
  (table) => [primaryKey({ columns: [table.stream, table.path, table.forkKey, table.round] })],
);

/** The last report of each heartbeat check (docs/checks.md, "Heartbeat checks"): a restart counts its silence
 *  from it. */
export const heartbeatReports = sqliteTable('heartbeat_reports', {
  name: text('name').primaryKey(),
  reportedAtMs: integer('reported_at_ms').notNull(),
  success: integer('success', { mode: 'boolean' }).notNull(),
  message: text('message').notNull(),
});

/** Maintenance windows created through the API (those of the config file are re-read from it). `definition` is
 *  the window as the API lists it. */
export const maintenanceWindows = sqliteTable('maintenance_windows', {
  name: text('name').primaryKey(),
  definition: text('definition', { mode: 'json' }).notNull(),
  createdAtS: integer('created_at_s').notNull(),
});

/** Tokens created through the API (docs/http-api.md, "Credentials"): only the secret's SHA-256 is kept, the
 *  secret itself is shown once when the token is created. `scopes` is a JSON array of scope names. */
export const apiTokens = sqliteTable('api_tokens', {
  name: text('name').primaryKey(),
  sha256: text('sha256').notNull().unique(),
  scopes: text('scopes', { mode: 'json' }).notNull(),
  createdAtS: integer('created_at_s').notNull(),
});

/**
 * Every API change (docs/http-api.md, "Audit log"), refused ones included: who (`principal`, as
 * src/server/credentials.ts names it), from where (`address`), what (`method`, the route's pattern in `route`, the
 * request's path in `path`, the object's `name` when the change names one) and the HTTP status answered
 * (`outcome`). Bounded by `http.audit.retention` and `http.audit.max-rows`, oldest first.
 */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    atMs: integer('at_ms').notNull(),
    principal: text('principal').notNull(),
    address: text('address').notNull(),
    method: text('method').notNull(),
    route: text('route').notNull(),
    path: text('path').notNull(),
    name: text('name'),
    outcome: integer('outcome').notNull(),
    /** In a cluster, the node that took the change (null on a single node). */
    node: text('node'),
    /** In a cluster, the row's sequence in the JetStream stream `vigie_audit`: null until this node's own row is
     *  published; unique with its node, so that a message delivered twice is stored once. */
    streamSeq: integer('stream_seq'),
  },
  (table) => [
    index('audit_log_at_ms').on(table.atMs),
    uniqueIndex('audit_log_node_stream_seq').on(table.node, table.streamSeq),
  ],
);

/** Status pages created through the API (docs/status-pages.md; those of the config file are re-read from it).
 *  `definition` is the page as the API takes it. */
export const statusPages = sqliteTable('status_pages', {
  slug: text('slug').primaryKey(),
  definition: text('definition', { mode: 'json' }).notNull(),
  createdAtS: integer('created_at_s').notNull(),
  updatedAtS: integer('updated_at_s').notNull(),
});

/** Incidents (docs/status-pages.md, "Incidents"): `status` is the latest update's, `pages` and `checks` JSON arrays
 *  of slugs and check names; `resolved_at_ms` is set while the status is `resolved`. */
export const incidents = sqliteTable(
  'incidents',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    title: text('title').notNull(),
    status: text('status', { enum: ['investigating', 'identified', 'monitoring', 'resolved'] }).notNull(),
    pages: text('pages', { mode: 'json' }).notNull(),
    checks: text('checks', { mode: 'json' }).notNull(),
    createdAtMs: integer('created_at_ms').notNull(),
    updatedAtMs: integer('updated_at_ms').notNull(),
    resolvedAtMs: integer('resolved_at_ms'),
    /** none, minor, major or critical, as its author set it; null: derived from its checks when shown. */
    impact: text('impact', { enum: ['none', 'minor', 'major', 'critical'] }),
  },
  (table) => [index('incidents_updated_at_ms').on(table.updatedAtMs)],
);

/** When Vigie first saw each check (docs/status-pages.md, "summary.json"): the `created_at` of its components. An
 *  API check's is its creation; a check of the config file or of a discovery source, the first start that had it. */
export const healthcheckFirstSeen = sqliteTable('healthcheck_first_seen', {
  name: text('name').primaryKey(),
  atMs: integer('at_ms').notNull(),
});

/** The timeline of each incident, oldest first by `id`; deleted with it. */
export const incidentUpdates = sqliteTable(
  'incident_updates',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    incidentId: integer('incident_id')
      .notNull()
      .references(() => incidents.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['investigating', 'identified', 'monitoring', 'resolved'] }).notNull(),
    message: text('message').notNull(),
    atMs: integer('at_ms').notNull(),
  },
  (table) => [index('incident_updates_incident_id').on(table.incidentId, table.id)],
);

/**
 * Runtime state kept through the port of src/common/runtime-state.ts by the kinds that have no table of their own
 * (docs/architecture.md, "Runtime state"): one row per `kind` and `key`, `value` the JSON the kind declares. In a
 * cluster these rows mirror the replicated store.
 */
export const runtimeState = sqliteTable(
  'runtime_state',
  {
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    value: text('value').notNull(),
    updatedAtMs: integer('updated_at_ms').notNull(),
  },
  (table) => [primaryKey({ columns: [table.kind, table.key] })],
);
