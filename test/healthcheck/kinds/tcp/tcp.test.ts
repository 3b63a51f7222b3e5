import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, startFullBacklogTarget, startTcpTarget, type TcpTarget } from '../../../helpers/targets.ts';
import { parseCheck } from '../../../../src/healthcheck/kinds/index.ts';
import type { TcpDefinition } from '../../../../src/healthcheck/kinds/tcp/kind.ts';
import { TcpProbe } from '../../../../src/healthcheck/kinds/tcp/kind.ts';
import { tcpHandles } from '../../../../src/healthcheck/kinds/tcp/handle.ts';
import { check as checkThroughKind } from '../run.ts';

/** Runs once through net.connect, as a Node without `tcp_wrap` (or a host-name target) does. */
async function checkThroughSocket(_kind: 'tcp', raw: Record<string, unknown>): Promise<string> {
  const def = parseCheck('tcp', { name: 'test', timeout: '2s', interval: '10s', ...raw }) as TcpDefinition;
  try {
    await new TcpProbe(def, null).run(AbortSignal.timeout(def.timeoutNs / 1e6));
    return 'success';
  } catch (error) {
    return (error as Error).message;
  }
}

it("this Node's TCP handle is found, so that IP targets take the bare-handle path", () => {
  expect(tcpHandles).not.toBeNull();
});

// The same cases through both paths: the messages must not depend on which one a target takes.
describe.each([
  ['TCP handle', checkThroughKind],
  ['net.connect', checkThroughSocket],
] as const)('TCP check through %s', (_path, check) => {
  let open: TcpTarget;
  let open6: TcpTarget;
  let closed: number;
  beforeAll(async () => {
    open = await startTcpTarget();
    open6 = await startTcpTarget('::1');
    closed = await closedPort();
  });
  afterAll(async () => {
    await Promise.all([open.close(), open6.close()]);
  });

  it('succeeds when the port accepts a connection', async () => {
    const before = open.connections;
    expect(await check('tcp', { target: '127.0.0.1', port: open.port })).toBe('success');
    expect(open.connections).toBe(before + 1);
  });

  it('connects over IPv6 and from source-ip', async () => {
    expect(await check('tcp', { target: '::1', port: open6.port })).toBe('success');
    expect(await check('tcp', { target: '127.0.0.1', port: open.port, 'source-ip': '127.0.0.1' })).toBe('success');
  });

  it('reports a refused connection with the address and Node error', async () => {
    expect(await check('tcp', { target: '127.0.0.1', port: closed })).toBe(
      `TCP connection failed on 127.0.0.1:${closed}: connect ECONNREFUSED 127.0.0.1:${closed}`,
    );
    const closed6 = await closedPort('::1');
    expect(await check('tcp', { target: '::1', port: closed6 })).toBe(
      `TCP connection failed on [::1]:${closed6}: connect ECONNREFUSED ::1:${closed6}`,
    );
  });

  it('fails on a source-ip the machine does not have', async () => {
    // 192.0.2.1 (TEST-NET-1) is never assigned locally, so bind fails before any packet leaves.
    expect(await check('tcp', { target: '127.0.0.1', port: open.port, 'source-ip': '192.0.2.1' })).toMatch(
      new RegExp(`^TCP connection failed on 127\\.0\\.0\\.1:${open.port}: .*EADDRNOTAVAIL`),
    );
  });

  it('inverts the outcome with should-fail', async () => {
    expect(await check('tcp', { target: '127.0.0.1', port: closed, 'should-fail': true })).toBe('success');
    expect(await check('tcp', { target: '127.0.0.1', port: open.port, 'should-fail': true })).toBe(
      `TCP check is successful on 127.0.0.1:${open.port} but an error was expected`,
    );
  });

  it('times out when the connection hangs, and should-fail takes that as success', async () => {
    const full = await startFullBacklogTarget();
    try {
      const started = performance.now();
      expect(await check('tcp', { target: '127.0.0.1', port: full.port, timeout: '300ms', interval: '1s' })).toBe(
        `TCP connection failed on 127.0.0.1:${full.port}: timed out after 300ms`,
      );
      expect(performance.now() - started).toBeLessThan(1500);
      expect(
        await check('tcp', {
          target: '127.0.0.1',
          port: full.port,
          timeout: '300ms',
          interval: '1s',
          'should-fail': true,
        }),
      ).toBe('success');
    } finally {
      await full.close();
    }
  });
});
