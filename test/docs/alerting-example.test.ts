/** The alerting example shipped in docs/alerting.md passes its own `vigie test` file, run by the real CLI. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.ts';

it('docs/examples/alerting passes vigie test', () => {
  const dir = join(PACKAGE_ROOT, 'docs/examples/alerting');
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(PACKAGE_ROOT, 'src/main.ts'), 'test', '--streams', join(dir, 'streams.edn'), '--tests', join(dir, 'tests.edn')], {
    encoding: 'utf8',
  });
  expect(run.stdout).toContain('3 passed, 0 failed');
  expect(run.status).toBe(0);
}, 30_000);
