/**
 * The doors lint keeps (eslint.config.js, docs/architecture.md "What lint keeps"): an import through a closed door
 * is refused, with a message naming docs/architecture.md; one through an open door passes.
 */
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../bin/build.mjs';

const eslint = new ESLint({ cwd: ROOT });

/** The no-restricted-imports messages that `from` importing `target` (paths relative to the repository) gets. */
async function refusals(from: string, target: string): Promise<string[]> {
  const [result] = await eslint.lintText(`import type { X } from '${target}';\nexport type Y = X;\n`, {
    filePath: join(ROOT, from),
  });
  return (result?.messages ?? [])
    .filter((message) => message.ruleId === 'no-restricted-imports')
    .map((message) => message.message);
}

describe('the doors between the rooms', () => {
  it.each([
    ['src/common/x.ts', '../healthcheck/part.ts'],
    ['src/db/x.ts', '../stream/event.ts'],
    ['src/server/x.ts', '../cluster/part.ts'],
    ['src/server/x.ts', '../notify/settings.ts'],
    ['src/server/x.ts', '../process/lifecycle.ts'],
    ['src/server/x.ts', '../config/load.ts'],
    ['src/healthcheck/x.ts', '../stream/event.ts'],
    ['src/stream/x.ts', '../healthcheck/settings.ts'],
    ['src/stream/x.ts', '../config/load.ts'],
    ['src/cluster/x.ts', '../process/node-tuning.ts'],
    ['src/cluster/x.ts', '../config/load.ts'],
    ['src/notify/x.ts', '../process/parts.ts'],
    ['src/frontend/x.ts', '../config/load.ts'],
    ['src/config/x.ts', '../process/lifecycle.ts'],
  ])('%s may not import %s', async (from, target) => {
    const messages = await refusals(from, target);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('docs/architecture.md');
  });

  it.each([
    ['src/main.ts', './process/lifecycle.ts'],
    ['src/process/x.ts', '../config/load.ts'],
    ['src/process/x.ts', '../cluster/part.ts'],
    ['src/healthcheck/x.ts', '../server/part.ts'],
    ['src/stream/x.ts', '../notify/settings.ts'],
    ['src/config/x.ts', '../stream/settings.ts'],
  ])('%s may import %s', async (from, target) => {
    expect(await refusals(from, target)).toEqual([]);
  });
});
