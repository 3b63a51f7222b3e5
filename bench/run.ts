/**
 * `npm run bench`: runs every benchmark script in sequence, each in its own process (they start real servers and
 * must not share a CPU with each other), and prints a summary of the JSON each one writes in bench/results/.
 * `npm run bench -- engine checks` runs a subset. Each runs with TMPDIR at a directory of its own, removed when it
 * ends: the data directories, databases and configs of its servers (22 MB for 12,000 checks) do not pile up.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';

const ALL = [
  'engine',
  'regex',
  'cardinality',
  'snapshot',
  'heartbeat-flood',
  'state-checkpoint',
  'http-ingest',
  'journal',
  'remote-write',
  'otlp',
  'riemann-tcp',
  'index-search',
  'maintenance',
  'dashboard',
  'status-page',
  'checks',
  'result-path',
  'alert-path',
  'http-client',
  'exporters',
  'metrics-scrape',
  'idle',
  'cluster-idle',
  'cluster',
  'cluster-codec',
  'cluster-streams',
];
const selected = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ALL;
const here = import.meta.dirname;

console.log(`running ${selected.join(', ')} on ${cpus().length} cores`);
let failed = 0;
for (const name of selected) {
  const script = join(here, `${name}.ts`);
  if (!existsSync(script)) {
    console.error(`bench ${name}: no script ${script}`);
    failed++;
    continue;
  }
  console.log(`\n=== ${name} ===`);
  const temporary = mkdtempSync(join(tmpdir(), `vigie-bench-${name}-`));
  const result = spawnSync(process.execPath, ['--import', 'tsx', script], {
    stdio: 'inherit',
    env: { ...process.env, TMPDIR: temporary },
  });
  rmSync(temporary, { recursive: true, force: true });
  if (result.status !== 0) failed++;
}

console.log('\n=== summary ===');
for (const name of selected) {
  const file = join(here, 'results', `${name}.json`);
  if (existsSync(file)) console.log(`${name}: ${readFileSync(file, 'utf8').trim()}`);
}
process.exitCode = failed > 0 ? 1 : 0;
