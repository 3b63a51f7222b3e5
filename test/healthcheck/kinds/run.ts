/** Runs a definition once the way the scheduler does: prepare, run under a signal that fires at the timeout, close. */
import { type CheckDefinition, parseCheck, prepareCheck } from '../../../src/healthcheck/kinds/index.ts';
import type { KindName } from '../../../src/healthcheck/kinds/types.ts';

/** `success`, or the failure message (what a result's `message` holds). */
async function runOnce(def: CheckDefinition): Promise<string> {
  const prepared = await prepareCheck(def);
  try {
    await prepared.run(AbortSignal.timeout(def.timeoutNs / 1e6));
    return 'success';
  } catch (error) {
    return (error as Error).message;
  } finally {
    await prepared.close();
  }
}

/** Parses then runs; `raw` gets `name`, `timeout` and `interval` defaults. */
export function check(kind: KindName, raw: Record<string, unknown>): Promise<string> {
  return runOnce(parseCheck(kind, { name: 'test', timeout: '2s', interval: '10s', ...raw }));
}
