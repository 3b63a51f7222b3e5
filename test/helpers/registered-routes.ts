/**
 * Every route the real server registers with a config file, seen by an `onRoute` hook added before any route: the
 * server's own `buildServer` and parts, built in this process on a data directory of its own.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.ts';
import { closeDatabase, migrateDatabase, openDatabase } from '../../src/db/client.ts';
import { SqliteRuntimeState } from '../../src/db/runtime-state.ts';
import { createPartFactories } from '../../src/process/parts.ts';
import { buildServer } from '../../src/process/app.ts';
import { createServerMetrics } from '../../src/server/metrics.ts';
import type { Part } from '../../src/server/part.ts';
import { makeDataDir } from './server.ts';

/** A route as registered, and the shared schemas (`addSchema`) its scope has for its `$ref`s. */
export interface RegisteredRoute {
  route: RouteOptions;
  sharedSchemas: Record<string, unknown>;
}

export async function registeredRoutes(configFile: string): Promise<RegisteredRoute[]> {
  const config = loadConfig(configFile, { dataDir: makeDataDir() });
  const db = openDatabase(config.databaseFile);
  migrateDatabase(db);
  const metrics = createServerMetrics();
  const state = new SqliteRuntimeState(db, { skipped: () => {}, listenerFailed: () => {} });
  const logger = pino({ level: 'silent' });
  const parts: Part[] = [];
  for (const factory of createPartFactories()) {
    const built = await factory({ settings: config, db, metrics, logger, state, localState: state });
    if (built !== null) parts.push(built.part);
  }
  const routes: RegisteredRoute[] = [];
  // fastify calls onRoute with the scope the route is registered in.
  const onRoute = function (this: FastifyInstance, route: RouteOptions) {
    routes.push({ route, sharedSchemas: this.getSchemas() });
  };
  const app = await buildServer({ config, db, metrics, parts, logger, onRoute, state });
  await app.ready();
  await app.close();
  for (const part of parts.reverse()) await part.stop();
  closeDatabase(db);
  return routes;
}
