/**
 * `alert-path` benchmark: the CPU the alerts (src/healthcheck/alerts/) add at 12,000 checks. Rounds of one result
 * per check go through the registry as in `result-path`, with `failure-threshold: 1` and `success-threshold: 1` and 1
 * in 50 results failing, so that some 480 alerts open and close per round; each is told to a local webhook receiver
 * (in this process: its CPU counts too). A result that changes no state costs the alerts nothing (they listen to
 * transitions only), so the difference is the cost of the transitions, per transition. `before`: the service alone
 * (today's path); `after`: with the alerts attached, each round's alert work (records, notifications) awaited inside
 * the measure. Also the repeat sweep's CPU per pass over 12,000 checks with every one of them firing (the worst case;
 * it runs once a second). Figures in CPU µs (user + system) per result, median and best round.
 *
 *   node --import tsx bench/alert-path.ts [checks] [rounds]     bench/results/alert-path.json
 */
import { createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { parseConfigText } from '../src/config/load.ts';
import { closeDatabase, migrateDatabase, openDatabase } from '../src/db/client.ts';
import { SqliteRuntimeState } from '../src/db/runtime-state.ts';
import { createAlerts } from '../src/healthcheck/alerts/index.ts';
import { CheckFailure, type Prepared } from '../src/healthcheck/kinds/index.ts';
import type { CheckRegistry } from '../src/healthcheck/registry/registry.ts';
import type { RunningCheck } from '../src/healthcheck/scheduling/running-check.ts';
import { HealthcheckService } from '../src/healthcheck/service.ts';
import { round, writeResult } from './http-load.ts';

const CHECKS = Number(process.argv[2] ?? 12_000);
const ROUNDS = Number(process.argv[3] ?? 20);
const FAILING_ONE_IN = 50;

let received = 0;
const receiver = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    received++;
    response.end('ok');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

async function build(withAlerts: boolean) {
  const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'vigie-bench-')), 'vigie.db'));
  migrateDatabase(db);
  const checks = Array.from({ length: CHECKS }, (_, i) => ({
    name: `check-${i}`,
    target: '127.0.0.1',
    port: 1000 + (i % 20),
    timeout: '5s',
    interval: '10s',
    labels: { team: `team-${i % 4}` },
  }));
  const config = parseConfigText(
    JSON.stringify({
      healthchecks: { defaults: { 'failure-threshold': 1, 'success-threshold': 1 } },
      notifiers: { ops: { type: 'webhook', url: hook, retries: 0 } },
      alerting: { defaults: { notify: ['ops'] } },
      'tcp-checks': checks,
    }),
    '/etc/vigie.yaml',
  );
  const logger = pino({ level: 'silent' });
  const state = new SqliteRuntimeState(db, { skipped: () => undefined, listenerFailed: () => undefined });
  const noop: Prepared = { run: () => Promise.resolve(), close: () => Promise.resolve() };
  const service = await HealthcheckService.create({
    config,
    db,
    registry: new Registry(),
    logger,
    prepare: () => Promise.resolve(noop),
    onResult: [() => undefined],
    state,
  });
  const alerts = withAlerts
    ? createAlerts({
        service,
        state,
        alerting: config.healthchecks.alerting,
        notifiers: config.notifiers,
        listenUrl: 'http://127.0.0.1:9013',
        registry: new Registry(),
        logger,
      })
    : null;
  await alerts?.start();
  return { db, service, alerts };
}

const failure = new CheckFailure('TCP connection failed on 127.0.0.1:1000: connect ECONNREFUSED 127.0.0.1:1000');
const failing = (i: number, r: number) => (i + r) % FAILING_ONE_IN === 0 || (i + r - 1) % FAILING_ONE_IN === 0;

async function measure(withAlerts: boolean): Promise<{ perResult: number[]; sweepUs: number | null }> {
  const { db, service, alerts } = await build(withAlerts);
  const registry = service.registry;
  const recordRun = (registry as unknown as { recordRun(check: RunningCheck, failure: unknown, ms: number): void })
    .recordRun;
  const flush = () => (registry as unknown as { repository: { flush(): void } }).repository.flush();
  const running = [...registry.all()];
  const perResult: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < running.length; i++)
      recordRun.call(registry as CheckRegistry, running[i] as RunningCheck, failing(i, r) ? failure : undefined, 5);
    if (alerts) {
      // The flushes are timers of 0 ms: let them run, then wait for their sends.
      for (let k = 0; k < 3; k++) {
        await alerts.engine.settled();
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      await alerts.engine.settled();
    }
    const used = process.cpuUsage(cpu);
    perResult.push((used.user + used.system) / running.length);
    flush();
  }
  let sweepUs: number | null = null;
  if (alerts) {
    // Every check failing: every alert open, then the sweep's passes measured.
    for (let i = 0; i < running.length; i++)
      recordRun.call(registry as CheckRegistry, running[i] as RunningCheck, failure, 5);
    for (let k = 0; k < 5; k++) {
      await alerts.engine.settled();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const sweep = (alerts.engine as unknown as { sweep(): void }).sweep.bind(alerts.engine);
    const passes: number[] = [];
    for (let k = 0; k < 20; k++) {
      const cpu = process.cpuUsage();
      sweep();
      const used = process.cpuUsage(cpu);
      passes.push(used.user + used.system);
    }
    sweepUs = median(passes);
    await alerts.stop();
  }
  await service.stop();
  closeDatabase(db);
  return { perResult, sweepUs };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const figures = (perResult: number[]) => ({
  cpu_us_per_result_median: round(median(perResult)),
  cpu_us_per_result_best: round(Math.min(...perResult)),
});
const before = await measure(false);
const after = await measure(true);
receiver.close();
writeResult('alert-path', {
  checks: CHECKS,
  rounds: ROUNDS,
  failing_one_in: FAILING_ONE_IN,
  before: figures(before.perResult),
  after: figures(after.perResult),
  notifications_received: received,
  // Two results in 50 fail per round: each failing check opens an alert, the one that failed the round before closes.
  transitions_per_round: Math.round((CHECKS * 4) / FAILING_ONE_IN),
  cpu_us_per_transition: round(
    ((median(after.perResult) - median(before.perResult)) * CHECKS) / ((CHECKS * 4) / FAILING_ONE_IN),
  ),
  sweep_cpu_ms_all_firing: round((after.sweepUs ?? 0) / 1000),
});
