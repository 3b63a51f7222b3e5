/**
 * The API's verbs over the checks' states (docs/http-api.md, "States, events and pauses"): a check's state, pause and
 * resume it (API and config-file checks alike: a pause is runtime state, not a change of the definition), its changes
 * of state over a period. The Cabourotte result routes keep upstream's shape; the state is in Vigie's own answers (the
 * state route, the dashboard's overview). Input is refused as a whole, with a message that names the field.
 */
import { CheckValidationError } from '../kinds/validation-error.ts';
import { HealthcheckError, notFound } from '../errors.ts';
import { timeField } from '../maintenance/maintenance.ts';
import type { CheckStates } from './check-states.ts';
import type { StateEvent, StateEvents } from './events.ts';
import type { CheckState } from './machine.ts';
import { hasControlCharacter, MAX_REASON_BYTES, type Pause, type PauseStore } from './pauses.ts';

const DEFAULT_EVENTS_PERIOD_MS = 30 * 86_400_000;
export const DEFAULT_EVENTS_LIMIT = 1000;
export const MAX_EVENTS_LIMIT = 10_000;

export interface PauseBody {
  until?: string;
  reason?: string;
}

/** A pause as the API shows it. */
export interface PauseJson {
  by: string;
  reason?: string;
  /** RFC 3339. */
  since: string;
  until?: string;
}

/** A check's state as Vigie's own answers show it (the state route, the overview rows). */
export interface StateFields {
  state: CheckState;
  /** Unix seconds, when the state began. */
  'state-since': number;
  pause?: PauseJson;
}

export interface EventJson {
  at: string;
  previous: CheckState;
  state: CheckState;
  message: string;
  node?: string;
}

export interface EventsQuery {
  from?: string;
  to?: string;
  limit?: number;
}

export interface StateApiOptions {
  /** Whether a check of that name is registered. */
  exists: (name: string) => boolean;
  states: CheckStates;
  pauses: PauseStore;
  events: StateEvents;
  nowMs?: () => number;
}

export class StateApi {
  private readonly exists: (name: string) => boolean;
  private readonly states: CheckStates;
  private readonly pauses: PauseStore;
  private readonly events: StateEvents;
  private readonly nowMs: () => number;

  constructor(options: StateApiOptions) {
    this.exists = options.exists;
    this.states = options.states;
    this.pauses = options.pauses;
    this.events = options.events;
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** Pauses a check (or changes its pause: the time it began stays); durable before it resolves. */
  async pause(name: string, body: PauseBody, by: string): Promise<PauseJson> {
    if (!this.exists(name)) throw notFound(name);
    const now = this.nowMs();
    const pause: Pause = { name, by, reason: reasonOf(body.reason), atMs: this.pauses.get(name)?.atMs ?? now };
    if (body.until !== undefined) {
      const untilMs = instant('until', body.until, 'Invalid pause');
      if (untilMs <= now)
        throw invalid('Invalid pause', 'until', `must be in the future, got ${JSON.stringify(body.until)}`);
      pause.untilMs = untilMs;
    }
    await this.pauses.put(pause);
    return pauseJson(pause);
  }

  /** Resumes a check; false when it was not paused. */
  async resume(name: string, by: string): Promise<boolean> {
    if (!this.exists(name)) throw notFound(name);
    return this.pauses.delete(name, `resumed by ${by}`);
  }

  /** A check's changes of state over a period (default: the last 30 days), oldest first. */
  listEvents(name: string, query: EventsQuery): { from: string; to: string; result: EventJson[]; truncated: boolean } {
    if (!this.exists(name)) throw notFound(name);
    const toMs = query.to === undefined ? this.nowMs() : instant('to', query.to, 'Invalid events query');
    const fromMs =
      query.from === undefined ? toMs - DEFAULT_EVENTS_PERIOD_MS : instant('from', query.from, 'Invalid events query');
    if (toMs <= fromMs)
      throw invalid('Invalid events query', 'to', `must be after from (${iso(fromMs)}), got ${iso(toMs)}`);
    const limit = query.limit ?? DEFAULT_EVENTS_LIMIT;
    const events = this.events.list(name, fromMs, toMs, limit + 1);
    return {
      from: iso(fromMs),
      to: iso(toMs),
      result: events.slice(0, limit).map(eventJson),
      truncated: events.length > limit,
    };
  }

  /** The state fields of a check, or undefined for a name that has none (an unknown check). */
  stateOf(name: string): StateFields | undefined {
    const machine = this.states.get(name);
    if (machine === undefined) return undefined;
    const fields: StateFields = { state: machine.state, 'state-since': Math.floor(machine.sinceMs / 1000) };
    const pause = this.pauses.get(name);
    if (pause !== undefined) fields.pause = pauseJson(pause);
    return fields;
  }

  /** A check's state, as `GET /api/v1/healthcheck/<name>/state` answers it. */
  state(name: string): { name: string } & StateFields {
    const fields = this.exists(name) ? this.stateOf(name) : undefined;
    if (fields === undefined) throw notFound(name);
    return { name, ...fields };
  }
}

/** A 400 `<what>: <field>: <problem>`, its problem named by its field in `errors` (docs/http-api.md). */
function invalid(what: string, field: string, problem: string): HealthcheckError {
  return new HealthcheckError('invalid', `${what}: ${field}: ${problem}`, [{ field, message: problem }]);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** RFC 3339, read as maintenance windows read it (the date must exist), or Unix seconds. */
function instant(field: string, text: string, what: string): number {
  if (/^\d{1,12}$/.test(text)) return Number(text) * 1000;
  try {
    return timeField(field, text);
  } catch (error) {
    if (error instanceof CheckValidationError) throw invalid(what, error.field, error.problem);
    throw error;
  }
}

function reasonOf(reason: string | undefined): string {
  if (reason === undefined) return '';
  if (Buffer.byteLength(reason) > MAX_REASON_BYTES)
    throw invalid('Invalid pause', 'reason', `must be at most ${MAX_REASON_BYTES} bytes long`);
  if (hasControlCharacter(reason)) throw invalid('Invalid pause', 'reason', 'must not contain control characters');
  return reason;
}

function pauseJson(pause: Pause): PauseJson {
  const json: PauseJson = { by: pause.by, since: iso(pause.atMs) };
  if (pause.reason !== '') json.reason = pause.reason;
  if (pause.untilMs !== undefined) json.until = iso(pause.untilMs);
  return json;
}

function eventJson(event: StateEvent): EventJson {
  const json: EventJson = { at: iso(event.atMs), previous: event.from, state: event.to, message: event.message };
  if (event.node !== undefined) json.node = event.node;
  return json;
}
