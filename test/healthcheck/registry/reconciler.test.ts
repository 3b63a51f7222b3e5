/**
 * Restart-or-keep, decided in-process: the service, its registry and reconciler on a real SQLite database, with
 * fake timers, a scripted random source for the first-run spread, and prepared checks that record their runs
 * on the fake clock. "Kept" means the same RunningCheck object, the same scheduler handle, the same prepared
 * resources and runs on the same grid; "restarted" means a new object on a new grid, the old one closed and
 * silent.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../../src/common/config-error.ts';
import { type ConfigFile, parseConfigText, type VigieConfig } from '../../../src/config/load.ts';
import { closeDatabase, type Db, migrateDatabase, openDatabase } from '../../../src/db/client.ts';
import type { CheckDefinition, Prepared } from '../../../src/healthcheck/kinds/index.ts';
import { HealthcheckService } from '../../../src/healthcheck/service.ts';

/** The resources of one prepared check: when it ran (fake ms since the test began) and whether it was closed. */
interface Instance {
  name: string;
  port: number;
  runs: number[];
  closed: boolean;
}

let db: Db;
let t0: number;
let instances: Instance[];
let spread: number[];
let service: HealthcheckService | undefined;
/** Names whose preparation fails (a missing certificate, say). */
let unpreparable: Set<string>;

async function prepare(def: CheckDefinition): Promise<Prepared> {
  if (unpreparable.has(def.name)) throw new Error('cannot read cert.pem');
  const instance: Instance = { name: def.name, port: (def as { port?: number }).port ?? 0, runs: [], closed: false };
  instances.push(instance);
  return {
    run: () => {
      instance.runs.push(Date.now() - t0);
      return Promise.resolve();
    },
    close: () => {
      instance.closed = true;
      return Promise.resolve();
    },
  };
}

const tcp = (name: string, port = 80, interval = '1s') => ({
  name,
  target: '127.0.0.1',
  port,
  timeout: '500ms',
  interval,
});

function config(checks: Partial<ConfigFile>): VigieConfig {
  return parseConfigText(JSON.stringify(checks), '/etc/vigie.yaml');
}

async function start(initial: VigieConfig): Promise<HealthcheckService> {
  service = await HealthcheckService.create({
    config: initial,
    db,
    registry: new Registry(),
    logger: pino({ level: 'silent' }),
    now: () => Date.now() - t0,
    // The first-run spread of each added check, in order of addition: a restart draws a new phase.
    random: () => spread.shift() ?? 0,
    prepare,
  });
  service.start();
  return service;
}

function instancesOf(name: string): Instance[] {
  return instances.filter((instance) => instance.name === name);
}

beforeEach(() => {
  vi.useFakeTimers();
  t0 = Date.now();
  instances = [];
  unpreparable = new Set();
  db = openDatabase(join(mkdtempSync(join(tmpdir(), 'vigie-reconciler-')), 'vigie.db'));
  migrateDatabase(db);
});

afterEach(async () => {
  await service?.stop();
  service = undefined;
  closeDatabase(db);
  vi.useRealTimers();
});

describe('config reload', () => {
  it('keeps an unchanged check untouched, restarts a changed one on a new grid, and stops a removed one', async () => {
    spread = [0.5, 0.5, 0.5, 0.25];
    const s = await start(config({ 'tcp-checks': [tcp('keep'), tcp('change'), tcp('remove')] }));
    await vi.advanceTimersByTimeAsync(2000);
    expect(instancesOf('keep')[0]?.runs).toEqual([500, 1500]);
    const keep = s.registry.get('keep');
    const keepHandle = keep?.handle;
    const oldChange = s.registry.get('change');

    await s.reload(config({ 'tcp-checks': [tcp('keep'), tcp('change', 81)] }));
    expect(s.registry.get('keep')).toBe(keep);
    expect(s.registry.get('keep')?.handle).toBe(keepHandle);
    expect(s.registry.get('change')).not.toBe(oldChange);
    expect(s.registry.get('remove')).toBeUndefined();

    await vi.advanceTimersByTimeAsync(3000);
    expect(instancesOf('keep')).toHaveLength(1);
    expect(instancesOf('keep')[0]?.runs).toEqual([500, 1500, 2500, 3500, 4500]);
    const [before, after] = instancesOf('change');
    expect(before).toMatchObject({ port: 80, runs: [500, 1500], closed: true });
    expect(after).toMatchObject({ port: 81, runs: [2250, 3250, 4250], closed: false });
    expect(instancesOf('remove')[0]).toMatchObject({ runs: [500, 1500], closed: true });
    expect(s.results().map((result) => result.name)).toEqual(['change', 'keep']);
  });

  it('changes nothing when one check of the new set cannot be prepared, and releases the others it prepared', async () => {
    spread = [0.5, 0.5];
    const s = await start(config({ 'tcp-checks': [tcp('steady')] }));
    await vi.advanceTimersByTimeAsync(1000);
    const steady = s.registry.get('steady');
    unpreparable.add('broken');
    const reload = s.reload(config({ 'tcp-checks': [tcp('steady', 81), tcp('fresh'), tcp('broken')] }));
    await expect(reload).rejects.toThrow(ConfigError);
    await expect(reload).rejects.toThrow(
      '/etc/vigie.yaml: tcp-checks[2]: Fail to initialize healthcheck broken: cannot read cert.pem',
    );
    expect(s.registry.get('steady')).toBe(steady);
    expect(s.registry.get('fresh')).toBeUndefined();
    expect(instancesOf('fresh')[0]?.closed).toBe(true);
    expect(instancesOf('steady').map((instance) => instance.closed)).toEqual([false, true]);
    await vi.advanceTimersByTimeAsync(2000);
    expect(instancesOf('steady')[0]?.runs).toEqual([500, 1500, 2500]);
    expect(instancesOf('fresh')[0]?.runs).toEqual([]);
  });
});

describe('the API', () => {
  it('keeps a check posted again with the same definition, and replaces a changed one', async () => {
    spread = [0.5, 0.1];
    const s = await start(config({}));
    await s.create('tcp', tcp('api'));
    const first = s.registry.get('api');
    await vi.advanceTimersByTimeAsync(1200);
    await s.create('tcp', tcp('api'));
    expect(s.registry.get('api')).toBe(first);
    expect(instancesOf('api')).toHaveLength(1);
    await s.create('tcp', tcp('api', 81));
    expect(s.registry.get('api')).not.toBe(first);
    await vi.advanceTimersByTimeAsync(1000);
    const [old, replaced] = instancesOf('api');
    expect(old).toMatchObject({ runs: [500], closed: true });
    // Created at 1,200 ms with a 100 ms spread: due at 1,300 ms, started on the next 250 ms tick.
    expect(replaced).toMatchObject({ port: 81, runs: [1500], closed: false });
  });

  it('applies a bulk set through the reconciler: unchanged kept, changed restarted, missing removed, config checks untouched', async () => {
    spread = [0.5, 0.5, 0.5, 0.5, 0.3];
    const s = await start(config({ 'tcp-checks': [tcp('from-file')] }));
    await s.bulk({ 'tcp-checks': [tcp('a'), tcp('b'), tcp('c')] });
    const a = s.registry.get('a');
    const file = s.registry.get('from-file');
    await vi.advanceTimersByTimeAsync(1000);
    await s.bulk({ 'tcp-checks': [tcp('a'), tcp('b', 81)] });
    expect(s.registry.get('a')).toBe(a);
    expect(s.registry.get('from-file')).toBe(file);
    expect(s.registry.get('c')).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1000);
    expect(instancesOf('a')[0]?.runs).toEqual([500, 1500]);
    expect(instancesOf('b').map((instance) => [instance.runs, instance.closed])).toEqual([
      [[500], true],
      [[1500], false],
    ]);
    expect(instancesOf('c')[0]).toMatchObject({ runs: [500], closed: true });
    expect(instancesOf('from-file')[0]?.runs).toEqual([500, 1500]);
  });

  it('runs mutations one at a time: the later of two creates on one name wins, the earlier is released', async () => {
    spread = [0, 0];
    const s = await start(config({}));
    await Promise.all([s.create('tcp', tcp('race', 1)), s.create('tcp', tcp('race', 2))]);
    expect(s.registry.get('race')?.def).toMatchObject({ port: 2 });
    await vi.advanceTimersByTimeAsync(0);
    expect(instancesOf('race').map((instance) => [instance.port, instance.closed])).toEqual([
      [1, true],
      [2, false],
    ]);
  });
});
