/**
 * Runs the service: config → the data directory's lock → database (migrated) → parts → server listening → parts
 * started; then signals. Parts are built and started in order, and stopped in reverse (src/process/parts.ts).
 * SIGHUP re-reads the config and hands it to each part (a failed reload is logged and changes nothing);
 * SIGTERM/SIGINT stop accepting, let in-flight requests finish, flush the parts to SQLite and exit 0; a second
 * one while stopping is ignored, a third forces the exit.
 */
import { mkdirSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { Counter } from 'prom-client';
import { BEAT_MS } from '../common/beat.ts';
import { type ConfigOverrides, type VigieConfig, loadConfig } from '../config/load.ts';
import { walCheckpointer } from '../db/checkpointer.ts';
import { closeDatabase, migrateDatabase, openDatabase } from '../db/client.ts';
import { SqliteRuntimeState } from '../db/runtime-state.ts';
import type { RuntimeState } from '../common/runtime-state.ts';
import type { MirrorReports } from '../common/state-mirror.ts';
import { buildServer } from './app.ts';
import { lockDataDir } from './data-dir-lock.ts';
import { exposureWarning } from '../server/exposure.ts';
import { HeapCompaction } from './heap-compaction.ts';
import { createServerMetrics, type ServerMetrics } from '../server/metrics.ts';
import type { Part, PartContext } from '../server/part.ts';
import { prettyDestination } from './pretty-log.ts';

/**
 * While the service runs, WAL checkpoints happen in a worker thread, asked for at the looks of every beat (2 s)
 * when rows changed, instead of inside a COMMIT on the event loop (src/db/checkpointer.ts, docs/performance.md
 * "Checkpoints").
 */
const CHECKPOINT_INTERVAL_MS = BEAT_MS;

/** A part built, and how its reload is handed its share of a new config. */
interface BuiltPart {
  readonly part: Part;
  reload(config: VigieConfig): Promise<void>;
}

/** Builds a part from the whole config; null when the config leaves it out (the cluster part without `cluster:`). */
export type PartFactory = (context: PartContext<VigieConfig>) => BuiltPart | null | Promise<BuiltPart | null>;

/**
 * A part factory given its own share of the config, at start and at each reload: `settingsOf` is the one place
 * that knows which sections a part reads (src/process/parts.ts).
 */
export function withSettings<S>(
  settingsOf: (config: VigieConfig) => S,
  build: (context: PartContext<S>) => Part<S> | null | Promise<Part<S> | null>,
): PartFactory {
  return async ({ settings: config, ...shared }) => {
    const part = await build({ ...shared, settings: settingsOf(config) });
    return part && { part, reload: (next) => part.reload(settingsOf(next)) };
  };
}

export interface RunningService {
  readonly url: string;
  readonly databaseFile: string;
  reload(): Promise<void>;
  stop(): Promise<void>;
}

/** `overrides` (the command line's) apply at start and at every reload, over whatever the file says. */
export async function startService(
  configFile: string | null,
  logger: Logger,
  partFactories: readonly PartFactory[],
  overrides: ConfigOverrides = {},
): Promise<RunningService> {
  let config = loadConfig(configFile, overrides);
  mkdirSync(config.dataDir, { recursive: true });
  // Before anything reads or writes the directory: a second process would share the journal and the database.
  const lock = await lockDataDir(config.dataDir, (message) => logger.warn(message));
  let started: Awaited<ReturnType<typeof startParts>>;
  try {
    started = await startParts(config, logger, partFactories);
  } catch (error) {
    lock.release();
    throw error;
  }
  const { db, app, url, parts, checkpointer, heapCompaction } = started;

  let stopping: Promise<void> | null = null;
  return {
    url,
    databaseFile: config.databaseFile,
    async reload() {
      let next: VigieConfig;
      try {
        next = loadConfig(configFile, overrides);
      } catch (error) {
        logger.error({ err: error }, `reload refused, keeping the running config: ${(error as Error).message}`);
        return;
      }
      if (
        JSON.stringify(next.http) !== JSON.stringify(config.http) ||
        next.dataDir !== config.dataDir ||
        next.databaseCacheBytes !== config.databaseCacheBytes
      ) {
        logger.warn('changes to the http section, data-dir or database-cache-size take effect at the next restart');
      }
      heapCompaction.setLimit(next.compactHeapBelowBytes);
      for (const { part, reload } of parts) {
        try {
          await reload(next);
        } catch (error) {
          logger.error({ err: error, part: part.name }, `reload of ${part.name} refused: ${(error as Error).message}`);
        }
      }
      config = next;
      logger.info({ config: configFile }, 'config reloaded');
    },
    stop() {
      stopping ??= (async () => {
        await app.close();
        heapCompaction.stop();
        // In reverse: a part is stopped before those it uses (the cluster part, built first, stops last).
        for (const { part } of [...parts].reverse()) {
          try {
            await part.stop();
          } catch (error) {
            logger.error({ err: error, part: part.name }, 'part failed to stop cleanly');
          }
        }
        try {
          await checkpointer.close();
          const failed = closeDatabase(db);
          if (failed !== null)
            logger.warn(`the last WAL checkpoint failed (${failed}): the next start applies what the -wal file holds`);
        } finally {
          lock.release();
        }
        logger.info('vigie stopped');
      })();
      return stopping;
    },
  };
}

/** Database (migrated) → parts → server listening → parts started. */
async function startParts(config: VigieConfig, logger: Logger, partFactories: readonly PartFactory[]) {
  const db = openDatabase(config.databaseFile, config.databaseCacheBytes);
  migrateDatabase(db);
  const metrics = createServerMetrics();
  const parts: BuiltPart[] = [];
  const localState = new SqliteRuntimeState(db, runtimeStateReports(metrics, logger));
  let state: RuntimeState = localState;
  for (const factory of partFactories) {
    const built = await factory({ settings: config, db, metrics, logger, state, localState });
    if (built === null) continue;
    parts.push(built);
    if (built.part.runtimeState !== undefined) state = built.part.runtimeState;
  }
  const app = await buildServer({ config, db, metrics, parts: parts.map(({ part }) => part), logger, state });
  const url = await app.listen({ host: config.http.host, port: config.http.port });
  const exposed = exposureWarning(config.http);
  if (exposed !== null) logger.warn(exposed);
  for (const { part } of parts) await part.start();
  const checkpointer = walCheckpointer(db, (message) => logger.warn(`WAL checkpoint failed: ${message}`));
  checkpointer.background(CHECKPOINT_INTERVAL_MS);
  const heapCompaction = new HeapCompaction(config.compactHeapBelowBytes);
  heapCompaction.start();
  return { db, app, url, parts, checkpointer, heapCompaction };
}

/** Stored runtime state that no longer reads is skipped, logged and counted; so is a listener that throws. */
function runtimeStateReports(metrics: ServerMetrics, logger: Logger): MirrorReports {
  const skipped = new Counter({
    name: 'runtime_state_skipped_total',
    help: 'Stored runtime state values skipped because they no longer read, by kind (docs/durability.md).',
    labelNames: ['kind'],
    registers: [metrics.registry],
  });
  return {
    skipped: ({ kind, key, reason }) => {
      skipped.inc({ kind });
      logger.warn({ kind, key }, `runtime state ${kind}/${key} skipped: ${reason}`);
    },
    listenerFailed: (kind, error) => logger.error({ err: error, kind }, `a listener of runtime state ${kind} failed`),
  };
}

export type LogFormat = 'json' | 'pretty';

/** JSON lines (one object per line, for log collectors) or the terminal form of src/process/pretty-log.ts. */
export function createLogger(level: string, format: LogFormat = 'json'): Logger {
  return format === 'pretty' ? pino({ level }, prettyDestination(process.stdout)) : pino({ level });
}

/** Wires the process signals to a running service, then announces it: the signals must be handled before
 *  anyone is told the service is up, or an early SIGHUP would kill it with the default action. */
export function handleSignals(service: RunningService, logger: Logger, configFile: string | null): void {
  process.on('SIGHUP', () => {
    logger.info('SIGHUP received, reloading the config');
    void service.reload();
  });
  // A terminal's Ctrl-C reaches node twice under `npm start` (npm forwards its own SIGINT): the second signal is
  // logged and ignored, so the stop can flush what it must; a third one forces the exit (docs/durability.md).
  let signals = 0;
  const shutdown = (signal: string) => {
    signals++;
    if (signals === 2) {
      logger.warn(
        `${signal} received while stopping: ignored, the service is flushing to SQLite; send it once more to force the exit`,
      );
      return;
    }
    if (signals > 2) {
      logger.error(`${signal} received a third time: exiting now, without finishing the stop`);
      process.exit(1);
    }
    logger.info(`${signal} received, shutting down`);
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  logger.info(
    { url: service.url, database: service.databaseFile, config: configFile ?? '<embedded defaults>' },
    'vigie is serving',
  );
}
