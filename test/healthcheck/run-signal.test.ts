import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCheck, prepareCheck } from '../../src/healthcheck/kinds/index.ts';
import type { Prepared } from '../../src/healthcheck/kinds/types.ts';
import { runController } from '../../src/healthcheck/run-signal.ts';
import { type HttpTarget, startFullBacklogTarget, startHttpTarget } from '../helpers/targets.ts';

// A TCP or HTTP run is started on a signal of the scheduler's pool of controllers: it must take no `abort` listener
// of its own (Node's EventTarget allocates for each add and remove), yet end as a timeout when the signal aborts.
describe('runs on a run signal', () => {
  let hanging: Awaited<ReturnType<typeof startFullBacklogTarget>>;
  let silent: HttpTarget;
  beforeAll(async () => {
    hanging = await startFullBacklogTarget();
    silent = await startHttpTarget({ handler: () => undefined });
  });
  afterAll(async () => {
    await Promise.all([hanging.close(), silent.close()]);
  });

  async function runAborted(prepared: Prepared): Promise<{ listenersDuringRun: number; message: string }> {
    const controller = runController();
    const signal = controller.signal;
    const listenersBefore = getEventListeners(signal, 'abort').length;
    const run = prepared.run(signal).then(
      () => 'success',
      (error: Error) => error.message,
    );
    const listenersDuringRun = getEventListeners(signal, 'abort').length - listenersBefore;
    controller.abort();
    const message = await run;
    await prepared.close();
    return { listenersDuringRun, message };
  }

  it('a TCP run adds no abort listener, and ends as a timeout when the signal aborts', async () => {
    const def = parseCheck('tcp', {
      name: 't',
      target: '127.0.0.1',
      port: hanging.port,
      timeout: '3s',
      interval: '10s',
    });
    const { listenersDuringRun, message } = await runAborted(await prepareCheck(def));
    expect(listenersDuringRun).toBe(0);
    expect(message).toBe(`TCP connection failed on 127.0.0.1:${hanging.port}: timed out after 3s`);
  });

  it('an HTTP run adds no abort listener, and ends as a timeout when the signal aborts', async () => {
    const def = parseCheck('http', {
      name: 'h',
      target: '127.0.0.1',
      port: silent.port,
      path: '/',
      'valid-status': [200],
      timeout: '3s',
      interval: '10s',
    });
    const { listenersDuringRun, message } = await runAborted(await prepareCheck(def));
    expect(listenersDuringRun).toBe(0);
    expect(message).toBe(`HTTP request failed: Get "http://127.0.0.1:${silent.port}/": timed out after 3s`);
  });

  it('a run signal that aborted once no longer calls that run', async () => {
    const controller = runController();
    let calls = 0;
    const { onRunAbort, offRunAbort } = await import('../../src/healthcheck/run-signal.ts');
    const listener = { handleEvent: () => calls++ };
    onRunAbort(controller.signal, listener);
    offRunAbort(controller.signal, listener);
    controller.abort();
    expect(calls).toBe(0);
  });
});
