/**
 * `/api/v1/maintenance` (docs/http-api.md, "Maintenance windows"): create (or replace) a window, list them, read
 * one, delete one. API windows are runtime state (SQLite; in a cluster, the same on every node), durable before the
 * answer; the config file's windows are
 * listed with `"source": "configuration"` and cannot be changed here.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { Type } from '@sinclair/typebox';
import type { FieldProblem } from '../../common/schema-errors.ts';
import { registerPartScope } from '../../server/errors.ts';
import { invalidBody, json, messageError, nameParams, operation } from '../../server/openapi.ts';
import { CheckValidationError } from '../kinds/validation-error.ts';
import {
  type MaintenanceCalendar,
  type MaintenanceLimits,
  type MaintenanceWindow,
  type MaintenanceWindowJson,
  MaintenanceWindowSchema,
  parseWindow,
  windowToJson,
} from './maintenance.ts';
import { type StoredWindow, storedWindow } from './maintenance-store.ts';
import type { StateCollection } from '../../common/runtime-state.ts';
import { healthcheckErrors } from '../errors.ts';
import { HealthcheckError } from '../errors.ts';

/** The API's verbs over the calendar and the API windows' collection (runtime state). */
export class MaintenanceApi {
  constructor(
    private readonly calendar: MaintenanceCalendar,
    private readonly stored: StateCollection<StoredWindow>,
    /** Read per request, so that a reload applies. */
    private readonly limits: () => MaintenanceLimits,
  ) {}

  /**
   * Config windows first, then the stored API windows; then every change of the API windows, made here or on another
   * node. A stored one that does not read (not JSON, refused by today's rules, or a bad one from the cluster) is
   * skipped, logged with its name and counted; the others load. Past the cap they all load (nothing stored is
   * dropped), and new ones are refused until there is room.
   */
  load(config: readonly MaintenanceWindow[], logger: Logger, skipped: Counter<'reason'>): void {
    this.calendar.setConfig(config);
    const apply = (name: string, stored: StoredWindow | undefined) => {
      if (stored === undefined) {
        this.calendar.deleteApi(name);
        return;
      }
      try {
        this.calendar.setApi(parseWindow(JSON.parse(stored.definition), this.limits().window));
      } catch (error) {
        this.calendar.deleteApi(name);
        skipped.inc({ reason: 'unreadable' });
        logger.warn(
          { window: name },
          `stored maintenance window ${JSON.stringify(name)} skipped: ${(error as Error).message}`,
        );
      }
    };
    for (const [name, stored] of this.stored.entries()) apply(name, stored);
    this.stored.onChange(apply);
    const { maxWindows } = this.limits();
    if (this.calendar.size > maxWindows) {
      logger.warn(
        `${this.calendar.size} maintenance windows, more than healthchecks.max-maintenance-windows (${maxWindows}): new ones are refused until some are deleted`,
      );
    }
  }

  /** Validated and rendered before anything is written; O(1) besides the write, whatever the number of windows. */
  async add(raw: unknown): Promise<MaintenanceWindowJson> {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('the body must be a JSON object');
    const limits = this.limits();
    let window: MaintenanceWindow;
    try {
      window = parseWindow(raw, limits.window);
    } catch (error) {
      if (error instanceof CheckValidationError) throw invalid(error.message, error.problems);
      throw error;
    }
    if (this.calendar.isConfig(window.name)) throw ownedByConfig(window.name);
    if (!this.calendar.has(window.name) && this.calendar.size >= limits.maxWindows) {
      throw invalid(
        `there are already ${this.calendar.size} windows, the most healthchecks.max-maintenance-windows allows; delete one first`,
      );
    }
    const listed = windowToJson(window, 'api', Date.now());
    // Applied to the calendar by the collection's listener, once durable.
    await this.stored.put(window.name, storedWindow(window));
    return listed;
  }

  list(): MaintenanceWindowJson[] {
    return this.calendar.list();
  }

  get(name: string): MaintenanceWindowJson {
    const window = this.calendar.get(name);
    if (window === undefined) throw new HealthcheckError('not-found', `Maintenance window ${name} not found`);
    return window;
  }

  /** Also deletes a stored window that was skipped, which is in no listing. */
  async delete(name: string): Promise<void> {
    if (this.calendar.isConfig(name)) throw ownedByConfig(name);
    if (this.stored.get(name) === undefined || !(await this.stored.delete(name)))
      throw new HealthcheckError('not-found', `Maintenance window ${name} not found`);
  }
}

function invalid(problem: string, problems?: readonly FieldProblem[]): HealthcheckError {
  return new HealthcheckError('invalid', `Invalid maintenance window: ${problem}`, problems);
}

function ownedByConfig(name: string): HealthcheckError {
  return new HealthcheckError('owned', `maintenance window ${name} comes from the configuration file; change it there`);
}

export function maintenanceRoutes(api: MaintenanceApi): FastifyPluginAsync {
  return async (app) => {
    await registerPartScope(app, '/api/v1/maintenance', healthcheckErrors, (scope) => {
      // Only JSON bodies, as the rest of the healthcheck API.
      scope.removeContentTypeParser(['text/plain']);
      const Window = Type.Object(
        {
          name: Type.String(),
          start: Type.String({ description: 'RFC 3339, UTC' }),
          duration: Type.String({ description: 'Go duration' }),
          every: Type.Optional(Type.String({ description: 'Go duration: the window repeats' })),
          labels: Type.Optional(Type.Record(Type.String(), Type.String())),
          checks: Type.Optional(Type.Array(Type.String())),
          source: Type.Union([Type.Literal('configuration'), Type.Literal('api')]),
          active: Type.Boolean({ description: 'on now' }),
          'next-start': Type.Optional(
            Type.String({ description: 'the occurrence on now, else the next (absent once a one-off window is over)' }),
          ),
          'next-end': Type.Optional(Type.String()),
        },
        { title: 'MaintenanceWindow' },
      );
      const tags = ['healthchecks'] as const;
      const createDoc = operation({
        summary: 'Create or replace a maintenance window',
        description:
          'Results of the checks it covers are marked `maintenance: true` and count in no uptime while it is on (docs/checks.md "Maintenance windows").',
        tags,
        body: { schema: MaintenanceWindowSchema },
        responses: {
          201: json('created (or replaced)', Type.Object({ message: Type.String(), result: Window })),
          400: invalidBody(
            '`Invalid maintenance window: <field>: <problem>`, or as many windows as `healthchecks.max-maintenance-windows` allows',
          ),
          409: messageError('a window of the configuration file has that name'),
        },
      });
      const listDoc = operation({
        summary: 'List the maintenance windows',
        description: 'Those of the config file and of the API, by name.',
        tags,
        responses: { 200: json('the windows', Type.Object({ result: Type.Array(Window) })) },
      });
      const getDoc = operation({
        summary: 'Get a maintenance window',
        tags,
        params: nameParams('the window'),
        responses: { 200: json('the window', Window), 404: messageError('`Maintenance window <name> not found`') },
      });
      const deleteDoc = operation({
        summary: 'Delete a maintenance window',
        tags,
        params: nameParams('the window'),
        responses: {
          200: json('deleted', Type.Object({ message: Type.String() })),
          404: messageError('`Maintenance window <name> not found`'),
          409: messageError('a window of the configuration file: change it there'),
        },
      });
      scope.post('', { schema: createDoc }, async (request, reply) => {
        const window = await api.add(request.body);
        return reply
          .code(201)
          .send({ message: `Maintenance window ${window.name} successfully added`, result: window });
      });
      scope.get('', { schema: listDoc }, async () => ({ result: api.list() }));
      scope.get<{ Params: { name: string } }>('/:name', { schema: getDoc }, async (request) =>
        api.get(request.params.name),
      );
      scope.delete<{ Params: { name: string } }>('/:name', { schema: deleteDoc }, async (request) => {
        await api.delete(request.params.name);
        return { message: `Successfully deleted maintenance window ${request.params.name}` };
      });
    });
  };
}
