/**
 * Heartbeat check (docs/checks.md, "Heartbeat checks"): a push check. Nothing runs it; a job reports to
 * `/api/v1/heartbeat/<name>` (success) or `/fail` (failure with a message), and each report is a result. Silence
 * past `interval` + `grace` is a failure, recorded again every `interval` while the silence lasts. The last
 * report is kept in SQLite, so a restart counts the silence from it, not from the restart.
 */
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { Duration, durationToMs, formatDuration } from '../../../common/duration.ts';
import { BadgeField, baseToJson, durationField, nameField } from '../common.ts';
import { alertProperties, parseAlertFields } from '../alerting.ts';
import { parseStateFields, stateProperties } from '../states.ts';
import { Problems } from '../problems.ts';
import {
  type BaseDefinition,
  type CheckJson,
  type CheckKind,
  CheckFailure,
  type Prepared,
  type PushReport,
  type PushReports,
  type RecordResult,
} from '../types.ts';
import { CheckValidationError } from '../validation-error.ts';

export interface HeartbeatDefinition extends BaseDefinition {
  kind: 'heartbeat';
  graceNs: number;
  /** The SHA-256 (hex) of the check's own token, which opens its report URLs (docs/checks.md "Heartbeat checks"). */
  tokenSha256?: string;
}

const DEFAULT_GRACE = '1m';
/** The longest a timer can wait (2^31 - 1 ms): later deadlines are reached in steps. */
const MAX_TIMER_MS = 2_147_483_647;

const heartbeatSchema = Type.Object(
  {
    kind: Type.Optional(Type.String()),
    name: Type.String(),
    description: Type.Optional(Type.String()),
    interval: Duration,
    grace: Type.Optional(Duration),
    /** Listings show it; a heartbeat check is always periodic. */
    'one-off': Type.Optional(Type.Literal(false)),
    source: Type.Optional(Type.String()),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    badge: Type.Optional(BadgeField),
    /** The secret, as written in the config or sent to the API: only its SHA-256 is kept and shown. */
    token: Type.Optional(Type.String({ minLength: 16 })),
    'token-sha256': Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
    ...stateProperties,
    ...alertProperties,
  },
  { additionalProperties: false },
);

function parseHeartbeat(raw: unknown): HeartbeatDefinition {
  const { input, problems } = Problems.shape(heartbeatSchema, raw);
  if (input.kind !== undefined && input.kind !== 'heartbeat') {
    problems.add('kind', `must be "heartbeat" for a heartbeat check, got ${JSON.stringify(input.kind)}`);
  }
  const intervalNs = problems.check(() => {
    const ns = durationField('interval', input.interval);
    if (ns <= 0)
      throw new CheckValidationError('interval', `must be greater than 0, got ${JSON.stringify(input.interval)}`);
    return ns;
  }, 0);
  const graceNs = problems.check(() => {
    const ns = durationField('grace', input.grace ?? DEFAULT_GRACE);
    if (ns < 0) throw new CheckValidationError('grace', `must not be negative, got ${JSON.stringify(input.grace)}`);
    return ns;
  }, 0);
  const name = problems.check(() => nameField(input.name), '');
  const token = problems.check(() => tokenDigest(input.token, input['token-sha256']), {});
  const states = problems.check(() => parseStateFields(input), {});
  const alerts = problems.check(() => parseAlertFields(input), {});
  problems.throwIfAny();
  return {
    kind: 'heartbeat',
    name,
    description: input.description ?? '',
    intervalNs,
    // No run to time out; the scheduler never sees a heartbeat check.
    timeoutNs: 0,
    oneOff: false,
    labels: { ...input.labels },
    ...(input.badge !== undefined ? { badge: input.badge } : {}),
    graceNs,
    ...token,
    ...states,
    ...alerts,
  };
}

function tokenDigest(token: string | undefined, sha256: string | undefined): { tokenSha256?: string } {
  if (token !== undefined && sha256 !== undefined)
    throw new CheckValidationError('token', 'give the token or its token-sha256, not both');
  if (token !== undefined) return { tokenSha256: createHash('sha256').update(token).digest('hex') };
  return sha256 !== undefined ? { tokenSha256: sha256 } : {};
}

function heartbeatToJson(def: HeartbeatDefinition, source = ''): CheckJson {
  const json = baseToJson(def, source);
  json.grace = formatDuration(def.graceNs);
  json.kind = def.kind;
  if (def.tokenSha256 !== undefined) json['token-sha256'] = def.tokenSha256;
  return json;
}

function heartbeatSummary(def: HeartbeatDefinition): string {
  const what = def.description === '' ? 'Heartbeat healthcheck' : `Heartbeat healthcheck ${def.description}`;
  return `${what} expected every ${formatDuration(def.intervalNs)} (grace ${formatDuration(def.graceNs)})`;
}

const SILENCE_PREFIX = 'no heartbeat since ';

/** Whether a heartbeat check's result is a silence its owner recorded, rather than a job's report. */
export function isSilence(message: string): boolean {
  return message.startsWith(SILENCE_PREFIX);
}

/** The failure of a silent check (the message of docs/checks.md). */
function silenceMessage(def: HeartbeatDefinition, sinceMs: number): string {
  return `${SILENCE_PREFIX}${new Date(sinceMs).toISOString()} (expected every ${formatDuration(def.intervalNs)}, grace ${formatDuration(def.graceNs)})`;
}

/** The report route's check: one monitor per heartbeat check, holding the deadline of its silence. */
export class HeartbeatMonitor implements Prepared {
  readonly pushed = this;
  private record: RecordResult | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** The last report, or when the monitor started for a check that never reported. */
  private sinceMs = 0;
  private deadlineMs = 0;
  private readonly intervalMs: number;
  private readonly allowedSilenceMs: number;

  constructor(
    readonly def: HeartbeatDefinition,
    private readonly now: () => number = Date.now,
  ) {
    this.intervalMs = durationToMs(def.intervalNs);
    this.allowedSilenceMs = this.intervalMs + durationToMs(def.graceNs);
  }

  run(): Promise<void> {
    return Promise.reject(new CheckFailure('a heartbeat check is not run: jobs report to it'));
  }

  async close(): Promise<void> {
    this.stop();
  }

  start(record: RecordResult, reports: PushReports): void {
    this.record = record;
    const last = reports.last(this.def.name);
    this.sinceMs = last?.atMs ?? this.now();
    this.arm(this.sinceMs + this.allowedSilenceMs);
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.record = null;
  }

  /** A job's report (the registry records it as a result): the silence is counted again from it. */
  observe(report: PushReport): void {
    if (report.atMs < this.sinceMs) return;
    this.sinceMs = report.atMs;
    if (this.record !== null) this.arm(report.atMs + this.allowedSilenceMs);
  }

  private arm(deadlineMs: number): void {
    this.deadlineMs = deadlineMs;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), Math.min(MAX_TIMER_MS, Math.max(0, deadlineMs - this.now())));
    this.timer.unref();
  }

  private wake(): void {
    this.timer = null;
    if (this.record === null) return;
    if (this.now() < this.deadlineMs) {
      this.arm(this.deadlineMs);
      return;
    }
    this.record(new CheckFailure(silenceMessage(this.def, this.sinceMs)));
    // Still silent: the failure is recorded again each interval, as a periodic check would fail each run.
    this.arm(this.deadlineMs + this.intervalMs);
  }
}

export const heartbeatKind: CheckKind<HeartbeatDefinition> = {
  kind: 'heartbeat',
  schema: heartbeatSchema,
  parse: parseHeartbeat,
  toJson: heartbeatToJson,
  summary: heartbeatSummary,
  prepare: async (def) => new HeartbeatMonitor(def),
};
