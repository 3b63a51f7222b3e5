/**
 * `result-path` benchmark: the CPU one result costs on its way through the registry
 * (src/healthcheck/registry/registry.ts): the latest result, the result store's waiting results, the metrics, the
 * check's state, the exporters' sink. The run itself and the SQLite writes are left out: the writes happen later, in
 * groups, and are measured by `checks`. Both paths are measured at 12,000 checks: a run of this node (`recordRun`, what
 * the scheduler calls) and a result another node ran (`recordRemote`, what a cluster's consumer calls), each over
 * rounds of one result per check, 1 in 50 of them failing (so that states change now and then), the waiting results
 * written between two rounds (not measured). Figures: the median and best round in CPU µs (user + system) per result.
 *
 *   node --import tsx bench/result-path.ts [checks] [rounds]     bench/results/result-path.json
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { parseConfigText } from '../src/config/load.ts';
import { closeDatabase, migrateDatabase, openDatabase } from '../src/db/client.ts';
import { CheckFailure, type Prepared } from '../src/healthcheck/kinds/index.ts';
import type { CheckRegistry } from '../src/healthcheck/registry/registry.ts';
import type { RunningCheck } from '../src/healthcheck/scheduling/running-check.ts';
import type { CheckResult } from '../src/healthcheck/result-types.ts';
import { HealthcheckService } from '../src/healthcheck/service.ts';
import { round, writeResult } from './http-load.ts';

const CHECKS = Number(process.argv[2] ?? 12_000);
const ROUNDS = Number(process.argv[3] ?? 40);
const FAILING_ONE_IN = Number(process.argv[4] ?? 50);

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
const noop: Prepared = { run: () => Promise.resolve(), close: () => Promise.resolve() };
const service = await HealthcheckService.create({
  config: parseConfigText(JSON.stringify({ 'tcp-checks': checks }), '/etc/vigie.yaml'),
  db,
  registry: new Registry(),
  logger: pino({ level: 'silent' }),
  prepare: () => Promise.resolve(noop),
  onResult: [() => undefined],
});
const registry = service.registry;
/** The scheduler's callback, private to the registry. */
const recordRun = (registry as unknown as { recordRun(check: RunningCheck, failure: unknown, ms: number): void })
  .recordRun;
const flush = () => (registry as unknown as { repository: { flush(): void } }).repository.flush();
const running = [...registry.all()];
const failure = new CheckFailure('TCP connection failed on 127.0.0.1:1000: connect ECONNREFUSED 127.0.0.1:1000');

/** CPU µs (user + system: on a shared machine the wall clock counts other processes' turns) per result of each
 *  round. */
function measure(one: (check: RunningCheck, i: number, roundIndex: number) => void): number[] {
  const perResult: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < running.length; i++) one(running[i] as RunningCheck, i, r);
    const used = process.cpuUsage(cpu);
    perResult.push((used.user + used.system) / running.length);
    flush();
  }
  return perResult;
}

const failing = (i: number, r: number) => (i + r) % FAILING_ONE_IN === 0;
const local = measure((check, i, r) =>
  recordRun.call(registry as CheckRegistry, check, failing(i, r) ? failure : undefined, 5),
);
const remote = measure((check, i, r) => {
  const result: CheckResult = {
    name: check.def.name,
    summary: check.summary,
    labels: { team: `team-${i % 4}` },
    success: !failing(i, r),
    'healthcheck-timestamp': Math.floor(Date.now() / 1000),
    message: failing(i, r) ? failure.message : 'success',
    duration: 5,
    source: 'configuration',
    node: 'node-b',
  };
  registry.recordRemote(result);
});
await service.stop();
closeDatabase(db);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const figures = (perResult: number[]) => ({
  cpu_us_per_result_median: round(median(perResult)),
  cpu_us_per_result_best: round(Math.min(...perResult)),
});
writeResult('result-path', {
  checks: CHECKS,
  rounds: ROUNDS,
  failing_one_in: FAILING_ONE_IN,
  local: figures(local),
  remote: figures(remote),
});
