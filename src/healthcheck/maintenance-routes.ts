/**
 * `/api/v1/maintenance` (docs/http-api.md, "Maintenance windows"): create (or replace) a window, list them, read
 * one, delete one. API windows are kept in SQLite and committed before the answer; the config file's windows are
 * listed with `"source": "configuration"` and cannot be changed here.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import { registerPartScope } from '../server/errors.ts';
import { CheckValidationError } from './kinds/types.ts';
import { type MaintenanceCalendar, type MaintenanceStore, type MaintenanceWindow, type MaintenanceWindowJson, parseWindow } from './maintenance.ts';
import { healthcheckErrors } from './routes.ts';
import { HealthcheckError } from './service.ts';

/** The API's verbs over the calendar and the store. */
export class MaintenanceApi {
  constructor(
    private readonly calendar: MaintenanceCalendar,
    private readonly store: MaintenanceStore,
  ) {}

  /** Config windows first, then the stored API windows (a stored one that no longer parses is logged and skipped). */
  load(config: readonly MaintenanceWindow[], logger: Logger): void {
    this.calendar.setConfig(config);
    for (const raw of this.store.load()) {
      try {
        this.calendar.setApi(parseWindow(raw));
      } catch (error) {
        logger.error({ err: error }, `stored maintenance window is not valid any more: ${(error as Error).message}`);
      }
    }
  }

  add(raw: unknown): MaintenanceWindowJson {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('the body must be a JSON object');
    let window: MaintenanceWindow;
    try {
      window = parseWindow(raw);
    } catch (error) {
      if (error instanceof CheckValidationError) throw invalid(error.message);
      throw error;
    }
    if (this.calendar.isConfig(window.name)) throw ownedByConfig(window.name);
    this.store.save(window);
    this.calendar.setApi(window);
    return this.get(window.name);
  }

  list(): MaintenanceWindowJson[] {
    return this.calendar.list();
  }

  get(name: string): MaintenanceWindowJson {
    const window = this.calendar.get(name);
    if (window === undefined) throw new HealthcheckError('not-found', `Maintenance window ${name} not found`);
    return window;
  }

  delete(name: string): void {
    if (this.calendar.isConfig(name)) throw ownedByConfig(name);
    if (!this.calendar.deleteApi(name)) throw new HealthcheckError('not-found', `Maintenance window ${name} not found`);
    this.store.delete(name);
  }
}

function invalid(problem: string): HealthcheckError {
  return new HealthcheckError('invalid', `Invalid maintenance window: ${problem}`);
}

function ownedByConfig(name: string): HealthcheckError {
  return new HealthcheckError('owned', `maintenance window ${name} comes from the configuration file; change it there`);
}

export function maintenanceRoutes(api: MaintenanceApi): FastifyPluginAsync {
  return async (app) => {
    await registerPartScope(app, '/api/v1/maintenance', healthcheckErrors, (scope) => {
      // Only JSON bodies, as the rest of the healthcheck API.
      scope.removeContentTypeParser(['text/plain']);
      scope.post('', async (request, reply) => {
        const window = api.add(request.body);
        return reply.code(201).send({ message: `Maintenance window ${window.name} successfully added`, result: window });
      });
      scope.get('', async () => ({ result: api.list() }));
      scope.get<{ Params: { name: string } }>('/:name', async (request) => api.get(request.params.name));
      scope.delete<{ Params: { name: string } }>('/:name', async (request) => {
        api.delete(request.params.name);
        return { message: `Successfully deleted maintenance window ${request.params.name}` };
      });
    });
  };
}
