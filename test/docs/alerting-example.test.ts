/** The alerting examples shipped in docs/alerting.md pass their own `vigie test` files, run by the real CLI. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.ts';

const dir = join(PACKAGE_ROOT, 'docs/examples/alerting');
const vigieTest = (streams: string, tests: string) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(PACKAGE_ROOT, 'src/main.ts'), 'test', '--streams', join(dir, streams), '--tests', join(dir, tests)], { encoding: 'utf8' });

it('docs/examples/alerting passes vigie test', () => {
  const run = vigieTest('streams.edn', 'tests.edn');
  expect(run.stdout).toContain('3 passed, 0 failed');
  expect(run.status).toBe(0);
}, 30_000);

it('the notification channels of docs/alerting.md pass vigie test', () => {
  const run = vigieTest('channels.edn', 'channels-tests.edn');
  expect(run.stdout).toContain('4 passed, 0 failed');
  expect(run.status).toBe(0);
}, 30_000);
