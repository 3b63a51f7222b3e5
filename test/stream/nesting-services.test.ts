/**
 * The event depth (streams.max-event-depth) belongs to each stream service: two services in one process (tests,
 * `vigie test`) refuse and accept events by their own limit, also after one of them reloads.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfigText, type VigieConfig } from '../../src/config/load.ts';
import { migrateDatabase, openDatabase } from '../../src/db/client.ts';
import { SqliteRuntimeState } from '../../src/db/runtime-state.ts';
import { buildServer } from '../../src/process/app.ts';
import { createServerMetrics } from '../../src/server/metrics.ts';
import type { Part } from '../../src/server/part.ts';
import { createStreamPart, type StreamPartSettings } from '../../src/stream/part.ts';

const logger = pino({ level: 'silent' });
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const configOf = (dataDir: string, eventDepth: number) =>
  parseConfigText(`data-dir: ${dataDir}\nstreams:\n  max-event-depth: ${eventDepth}\n`, null);

const streamSettingsOf = ({ streams, dataDir, http }: VigieConfig): StreamPartSettings => ({
  streams,
  dataDir,
  bodyLimit: http.bodyLimit,
});

async function serviceWith(
  eventDepth: number,
): Promise<{ app: FastifyInstance; part: Part<StreamPartSettings>; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vigie-nesting-'));
  const config = configOf(dataDir, eventDepth);
  const db = openDatabase(config.databaseFile);
  migrateDatabase(db);
  const metrics = createServerMetrics();
  const state = new SqliteRuntimeState(db, { skipped: () => {}, listenerFailed: () => {} });
  const settings = streamSettingsOf(config);
  const part = await createStreamPart({ settings, db, metrics, logger, state, localState: state });
  const app = await buildServer({ config, db, metrics, parts: [part], logger, state });
  cleanups.push(async () => {
    await app.close();
    await part.stop();
    db.$client.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/stream/flat',
    payload: { config: Buffer.from('{:actions {:action :index :params [[:host]]}}').toString('base64') },
  });
  expect(created.statusCode).toBe(200);
  return { app, part, dataDir };
}

const nested = (depth: number): unknown => (depth === 0 ? 1 : { a: nested(depth - 1) });
const push = async (app: FastifyInstance, depth: number) => {
  const response = await app.inject({
    method: 'PUT',
    url: '/api/v1/stream/flat',
    payload: { events: [{ host: 'a', time: 1, deep: nested(depth) }] },
  });
  return { status: response.statusCode, error: (response.json() as { error?: string }).error };
};
const otlp = async (app: FastifyInstance, depth: number) => {
  let value: unknown = { stringValue: 'x' };
  for (let i = 0; i < depth; i++) value = { arrayValue: { values: [value] } };
  const body = {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'deep', value }] },
        scopeSpans: [{ spans: [{ traceId: '00', spanId: '00', name: 's' }] }],
      },
    ],
  };
  return (await app.inject({ method: 'POST', url: '/api/v1/opentelemetry/v1/traces/flat', payload: body })).statusCode;
};

describe('the event depth of each stream service', () => {
  it('two services in one process refuse and accept events by their own streams.max-event-depth, also after a reload', async () => {
    const strict = await serviceWith(4);
    const loose = await serviceWith(20);
    expect(await push(strict.app, 4)).toEqual({
      status: 400,
      error: 'events[0].deep nests objects and arrays deeper than the limit of 4 levels (streams.max-event-depth)',
    });
    expect((await push(strict.app, 3)).status).toBe(200);
    expect((await push(loose.app, 10)).status).toBe(200);
    expect(await otlp(strict.app, 5)).toBe(400);
    expect(await otlp(loose.app, 10)).toBe(200);
    // A reload of one changes its limit and nobody else's.
    await loose.part.reload(streamSettingsOf(configOf(loose.dataDir, 8)));
    expect(await push(loose.app, 8)).toEqual({
      status: 400,
      error: 'events[0].deep nests objects and arrays deeper than the limit of 8 levels (streams.max-event-depth)',
    });
    expect((await push(strict.app, 4)).error).toContain('the limit of 4 levels');
    expect((await push(strict.app, 3)).status).toBe(200);
  });
});
