/**
 * Incidents (docs/status-pages.md, "Incidents"): a title, the pages it is shown on (none: internal, the dashboard's
 * only), the checks it affects, its impact (or none, to derive it from those checks), and a timeline of updates, each
 * a status (investigating, identified, monitoring, resolved) and a message; the incident's status is its latest
 * update's. Runtime state (incident-state.ts): held in memory (at most `healthchecks.max-incidents`), in SQLite,
 * and the same on every node of a cluster; durable before the answer.
 */
import { Type } from '@sinclair/typebox';
import { randomInt } from 'node:crypto';
import { type StateCollection, StateValueTooLargeError } from '../../common/runtime-state.ts';
import { HealthcheckError } from '../errors.ts';
import { Problems } from '../kinds/problems.ts';
import type { FieldProblem } from '../../common/schema-errors.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import { type Impact, IMPACTS } from './components.ts';
import { checkNamesField, slugField, type StatusLimits, textField } from './page.ts';

export const INCIDENT_STATUSES = ['investigating', 'identified', 'monitoring', 'resolved'] as const;
export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];

const Status = Type.String({ description: INCIDENT_STATUSES.join(', ') });
export const IncidentInput = Type.Object(
  {
    title: Type.String(),
    status: Status,
    message: Type.String(),
    pages: Type.Optional(
      Type.Array(Type.String(), {
        description: 'slugs of the pages it is shown on; none: internal, shown on the dashboard only',
      }),
    ),
    checks: Type.Optional(
      Type.Array(Type.String(), { description: 'the checks it affects: its components on the pages it is shown on' }),
    ),
    impact: Type.Optional(
      Type.String({ description: 'none, minor, major or critical; by default from the state of its checks' }),
    ),
  },
  { additionalProperties: false, title: 'IncidentInput' },
);
export const UpdateInput = Type.Object(
  {
    status: Status,
    message: Type.String(),
    impact: Type.Optional(Type.String({ description: 'changes its impact; `null` is not taken: set one of the four' })),
  },
  { additionalProperties: false, title: 'IncidentUpdateInput' },
);

interface IncidentUpdate {
  status: IncidentStatus;
  message: string;
  /** Milliseconds since the epoch. */
  atMs: number;
}

export interface Incident {
  id: number;
  title: string;
  status: IncidentStatus;
  pages: string[];
  checks: string[];
  createdAtMs: number;
  updatedAtMs: number;
  resolvedAtMs: number | null;
  /** As its author set it; null: from its checks, when shown. */
  impact: Impact | null;
  /** Oldest first. */
  updates: IncidentUpdate[];
}

function statusField(status: string): IncidentStatus {
  if (!(INCIDENT_STATUSES as readonly string[]).includes(status))
    throw new CheckValidationError(
      'status',
      `must be one of ${INCIDENT_STATUSES.join(', ')}, got ${JSON.stringify(status.slice(0, 40))}`,
    );
  return status as IncidentStatus;
}

function impactField(impact: string): Impact {
  if (!(IMPACTS as readonly string[]).includes(impact))
    throw new CheckValidationError(
      'impact',
      `must be one of ${IMPACTS.join(', ')}, got ${JSON.stringify(impact.slice(0, 40))}`,
    );
  return impact as Impact;
}

function invalid(problem: string, problems?: readonly FieldProblem[]): HealthcheckError {
  return new HealthcheckError('invalid', `Invalid incident: ${problem}`, problems);
}

function notFound(id: number | string): HealthcheckError {
  return new HealthcheckError('not-found', `Incident ${id} not found`);
}

/** Runs a validation, wording its refusal as the API's 400. */
function validated<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof CheckValidationError) throw invalid(error.message, error.problems);
    throw error;
  }
}

/**
 * A new incident's id: the time of its creation in milliseconds times 1000, plus a random 0-999, so that two nodes of
 * a cluster creating incidents at once do not take the same one, and ids still grow with time (the older ids, 1, 2,
 * 3..., stay as they were and sort before them); past the newest this node holds, so that on one node they follow
 * the order of creation, in one millisecond too.
 */
function newId(nowMs: number, held: Iterable<[string, Incident]>): number {
  let newest = 0;
  for (const [, incident] of held) newest = Math.max(newest, incident.id);
  return Math.max(nowMs * 1000 + randomInt(1000), newest + 1);
}

const newestFirst = (a: Incident, b: Incident) => b.id - a.id;

export class IncidentStore {
  constructor(
    /** Runtime state (incident-state.ts): the same on every node of a cluster. */
    private readonly stored: StateCollection<Incident>,
    private readonly limits: () => StatusLimits,
    /** Whether a page of that slug exists now: an incident must name existing pages. */
    private readonly pageExists: (slug: string) => boolean,
    private readonly now: () => number = Date.now,
  ) {}

  async create(raw: unknown): Promise<Incident> {
    const limits = this.limits();
    const input = validated(() => {
      const { input: body, problems } = Problems.shape(IncidentInput, raw);
      const title = problems.check(
        () => textField('title', body.title, limits.maxTitleBytes, 'max-status-title-bytes'),
        '',
      );
      const status = problems.check(() => statusField(body.status), 'investigating');
      const message = problems.check(
        () => textField('message', body.message, limits.maxTextBytes, 'max-status-text-bytes'),
        '',
      );
      const pages = (body.pages ?? []).map((slug, i) =>
        problems.check(() => {
          slugField(`pages[${i}]`, slug);
          if (!this.pageExists(slug))
            throw new CheckValidationError(`pages[${i}]`, `no status page ${JSON.stringify(slug)}`);
          return slug;
        }, slug),
      );
      let checks: string[] = [];
      if (body.checks !== undefined && body.checks.length > limits.maxChecks) {
        problems.add(
          'checks',
          `has ${body.checks.length} names, more than the limit of ${limits.maxChecks} (healthchecks.max-status-page-checks)`,
        );
      } else checks = problems.check(() => checkNamesField('checks', body.checks ?? []), []);
      const impact = body.impact === undefined ? null : problems.check(() => impactField(body.impact as string), null);
      problems.throwIfAny();
      return { title, status, message, pages: [...new Set(pages)], checks: [...new Set(checks)], impact };
    });
    const count = this.stored.size;
    if (count >= limits.maxIncidents)
      throw invalid(
        `there are already ${count} incidents, the most healthchecks.max-incidents allows; delete old ones first`,
      );
    const atMs = this.now();
    const incident: Incident = {
      id: newId(atMs, this.stored.entries()),
      title: input.title,
      status: input.status,
      pages: input.pages,
      checks: input.checks,
      createdAtMs: atMs,
      updatedAtMs: atMs,
      resolvedAtMs: input.status === 'resolved' ? atMs : null,
      impact: input.impact,
      updates: [{ status: input.status, message: input.message, atMs }],
    };
    await this.keep(incident);
    return incident;
  }

  /** Appends an update to the timeline; the incident takes its status. */
  async update(id: number, raw: unknown): Promise<Incident> {
    const limits = this.limits();
    const input = validated(() => {
      const { input: body, problems } = Problems.shape(UpdateInput, raw);
      const status = problems.check(() => statusField(body.status), 'investigating');
      const message = problems.check(
        () => textField('message', body.message, limits.maxTextBytes, 'max-status-text-bytes'),
        '',
      );
      const impact =
        body.impact === undefined ? undefined : problems.check(() => impactField(body.impact as string), undefined);
      problems.throwIfAny();
      return { status, message, impact };
    });
    const before = this.get(id);
    const count = before.updates.length;
    if (count >= limits.maxUpdates)
      throw invalid(`updates: has ${count} updates, the most healthchecks.max-incident-updates allows`);
    const atMs = Math.max(this.now(), before.updatedAtMs);
    const incident: Incident = {
      ...before,
      status: input.status,
      updatedAtMs: atMs,
      resolvedAtMs: input.status === 'resolved' ? (before.resolvedAtMs ?? atMs) : null,
      impact: input.impact ?? before.impact,
      updates: [...before.updates, { status: input.status, message: input.message, atMs }],
    };
    await this.keep(incident);
    return incident;
  }

  /** Durable once answered; too long for the cluster's store is the client's 400, as a cap is. */
  private async keep(incident: Incident): Promise<void> {
    try {
      await this.stored.put(String(incident.id), incident);
    } catch (error) {
      if (error instanceof StateValueTooLargeError)
        throw invalid(`${error.message}: shorten it, or delete the incident and post a new one`);
      throw error;
    }
  }

  get(id: number): Incident {
    const incident = this.stored.get(String(id));
    if (incident === undefined) throw notFound(id);
    return incident;
  }

  async delete(id: number): Promise<void> {
    if (this.stored.get(String(id)) === undefined || !(await this.stored.delete(String(id)))) throw notFound(id);
  }

  /** Newest first: every incident, or those shown on a page (`concerns`). */
  list(limit: number, concerns?: (incident: Incident) => boolean): Incident[] {
    const all = [...this.stored.entries()].map(([, incident]) => incident);
    return (concerns ? all.filter(concerns) : all).sort(newestFirst).slice(0, limit);
  }

  /** The open incidents, and those resolved since `sinceMs`, that `concerns` keeps; most recently updated first. */
  current(sinceMs: number, concerns: (incident: Incident) => boolean): Incident[] {
    const shown: Incident[] = [];
    for (const [, incident] of this.stored.entries())
      if ((incident.resolvedAtMs === null || incident.resolvedAtMs >= sinceMs) && concerns(incident))
        shown.push(incident);
    return shown.sort((a, b) => b.updatedAtMs - a.updatedAtMs || b.id - a.id);
  }

  /** Called for every change of an incident, this node's or another's. */
  onChange(listener: () => void): void {
    this.stored.onChange(listener);
  }
}

/** An incident as the API answers it. */
export function incidentToJson(incident: Incident): Record<string, unknown> {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    id: incident.id,
    title: incident.title,
    status: incident.status,
    pages: incident.pages,
    checks: incident.checks,
    'created-at': iso(incident.createdAtMs),
    'updated-at': iso(incident.updatedAtMs),
    ...(incident.resolvedAtMs !== null ? { 'resolved-at': iso(incident.resolvedAtMs) } : {}),
    ...(incident.impact !== null ? { impact: incident.impact } : {}),
    internal: incident.pages.length === 0,
    updates: incident.updates.map((update) => ({
      status: update.status,
      message: update.message,
      at: iso(update.atMs),
    })),
  };
}
