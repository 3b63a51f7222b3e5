/**
 * The seam the alerts build on (src/healthcheck/states/check-states.ts), in-process: the service on a real SQLite
 * file, fed results through heartbeat reports (each report is a result, recorded at once). A listener added with
 * `onTransition` is told every change once, in order, with the first failure's message; pauses go through it too;
 * a service restarted on the same database restores each state without telling anything again; thresholds come
 * from the check, else from `healthchecks.defaults`, which a reload changes.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfigText, type VigieConfig } from '../../../src/config/load.ts';
import { closeDatabase, type Db, migrateDatabase, openDatabase } from '../../../src/db/client.ts';
import { HealthcheckService } from '../../../src/healthcheck/service.ts';
import type { Transition } from '../../../src/healthcheck/states/check-states.ts';

let db: Db;
let service: HealthcheckService | undefined;
let seen: string[];

function config(extra: Record<string, unknown> = {}): VigieConfig {
  return parseConfigText(
    JSON.stringify({
      'heartbeat-checks': [
        { name: 'job', interval: '1h' },
        { name: 'strict', interval: '1h', 'failure-threshold': 1, 'success-threshold': 1 },
      ],
      ...extra,
    }),
    '/etc/vigie.yaml',
  );
}

async function start(initial: VigieConfig = config()): Promise<HealthcheckService> {
  service = await HealthcheckService.create({
    config: initial,
    db,
    registry: new Registry(),
    logger: pino({ level: 'silent' }),
  });
  service.states.onTransition((check, transition: Transition) =>
    seen.push(`${check.def.name} ${transition.from}->${transition.to}: ${transition.message}`),
  );
  return service;
}

const report = (name: string, success: boolean, message = success ? 'ok' : 'boom') =>
  (service as HealthcheckService).reportHeartbeat(name, success, message);

beforeEach(() => {
  db = openDatabase(join(mkdtempSync(join(tmpdir(), 'vigie-states-')), 'vigie.db'));
  migrateDatabase(db);
  seen = [];
});
afterEach(async () => {
  await service?.stop();
  service = undefined;
  closeDatabase(db);
});

describe('the states seam', () => {
  it('tells every change once, in order, with the first failure message', async () => {
    await start();
    report('job', true);
    report('job', false, 'boom 1');
    report('job', false, 'boom 2');
    report('job', false, 'boom 3');
    report('job', false, 'boom 4');
    report('job', true);
    report('job', true);
    report('job', true);
    expect(seen).toEqual([
      'job pending->up: success',
      'job up->pending: boom 1',
      'job pending->down: boom 1',
      'job down->up: success',
    ]);
    expect(service?.stateApi.state('job')).toMatchObject({ name: 'job', state: 'up' });
  });

  it('takes the check thresholds, else healthchecks.defaults, which a reload changes', async () => {
    await start(config({ healthchecks: { defaults: { 'failure-threshold': 2 } } }));
    report('strict', false);
    report('job', false);
    report('job', false);
    expect(seen).toEqual(['strict pending->down: boom', 'job pending->down: boom']);
    report('strict', true);
    expect(seen.at(-1)).toBe('strict down->up: success');
    await service?.reload(config({ healthchecks: { defaults: { 'success-threshold': 1 } } }));
    report('job', true);
    expect(seen.at(-1)).toBe('job down->up: success');
  });

  it('tells pauses and resumes; a paused check records nothing', async () => {
    await start();
    report('job', true);
    const api = (service as HealthcheckService).stateApi;
    await api.pause('job', { reason: 'upgrade' }, 'token:ci');
    expect(seen.at(-1)).toBe('job up->paused: paused by token:ci: upgrade');
    const before = service?.result('job');
    report('job', false);
    expect(service?.result('job')).toBe(before);
    expect(api.state('job')).toMatchObject({ state: 'paused', pause: { by: 'token:ci', reason: 'upgrade' } });
    expect(await api.resume('job', 'basic:ops')).toBe(true);
    expect(seen.at(-1)).toBe('job paused->up: resumed by basic:ops');
    expect(await api.resume('job', 'basic:ops')).toBe(false);
  });

  it('restores each state after a restart, telling nothing again', async () => {
    await start();
    report('job', false, 'boom 1');
    report('job', false, 'boom 2');
    report('job', false, 'boom 3');
    report('strict', true);
    await (service as HealthcheckService).stateApi.pause('strict', {}, 'anonymous');
    const since = service?.stateApi.state('job')['state-since'];
    await service?.stop();
    seen = [];
    await start();
    expect(seen).toEqual([]);
    expect(service?.stateApi.state('job')).toMatchObject({ state: 'down', 'state-since': since });
    expect(service?.stateApi.state('strict')).toMatchObject({ state: 'paused', pause: { by: 'anonymous' } });
    // The streak goes on where it was: one success is not enough to come back.
    report('job', true);
    expect(seen).toEqual([]);
    report('job', true);
    expect(seen).toEqual(['job down->up: success']);
    const events = service?.stateApi.listEvents('job', {}).result.map((event) => `${event.previous}->${event.state}`);
    expect(events).toEqual(['pending->down', 'down->up']);
  });
});
