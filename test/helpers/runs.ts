/**
 * A check's runs as a test sees them from outside: the `healthcheck_total` counter of /metrics. A test that proves
 * nothing happens (no second notification) first waits for the runs that would have caused it.
 */
import type { TestServer } from './server.ts';
import { waitFor } from './wait.ts';

export interface RunsOptions {
  /** Give up after this long (default 30 s). */
  timeoutMs?: number;
  /** Headers of the /metrics request: a service with authentication wants a `read` credential. */
  headers?: Record<string, string>;
}

/** Runs of the checks `name` picks (a name, or a pattern of names) since the process started, summed. */
async function runCount(
  server: TestServer,
  name: string | RegExp,
  headers: Record<string, string> = {},
): Promise<number> {
  const text = await (await server.request('/metrics', { headers })).text();
  const picks = typeof name === 'string' ? (check: string) => check === name : (check: string) => name.test(check);
  let runs = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('healthcheck_total{name="')) continue;
    const check = line.slice('healthcheck_total{name="'.length, line.indexOf('"', 'healthcheck_total{name="'.length));
    if (picks(check)) runs += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return runs;
}

/**
 * Resolves once the checks `name` picks have run `runs` more times (summed) than when called: their schedule had
 * its chance to change something, before the test asserts that nothing changed.
 */
export async function afterRuns(
  server: TestServer,
  name: string | RegExp,
  runs: number,
  { timeoutMs = 30_000, headers = {} }: RunsOptions = {},
): Promise<void> {
  const from = await runCount(server, name, headers);
  await waitFor(async () => (await runCount(server, name, headers)) >= from + runs, {
    timeoutMs,
    intervalMs: 100,
    message: `${runs} more runs of ${String(name)}`,
  });
}
