import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  CheckValidationError,
  checkSummary,
  checkToJson,
  parseCheck,
  prepareCheck,
} from '../../../../src/healthcheck/kinds/index.ts';
import { check } from '../run.ts';

const ROOT = join(import.meta.dirname, '../../../..');
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

/** Whether the kernel lets group `gid` open unprivileged ICMP datagram sockets. */
function pingGroupAllows(gid: number): boolean {
  const [low, high] = readFileSync('/proc/sys/net/ipv4/ping_group_range', 'utf8').trim().split(/\s+/).map(Number);
  return (low as number) <= gid && gid <= (high as number);
}

function rejection(raw: Record<string, unknown>): string {
  try {
    parseCheck('icmp', { name: 'c', timeout: '1s', interval: '10s', ...raw });
  } catch (error) {
    expect(error).toBeInstanceOf(CheckValidationError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('ICMP check', () => {
  // Root opens a raw socket; the kernel answers echo requests on loopback itself.
  it.skipIf(!isRoot)('gets an echo reply from 127.0.0.1, ::1 and localhost', async () => {
    expect(await check('icmp', { target: '127.0.0.1' })).toBe('success');
    expect(await check('icmp', { target: '::1' })).toBe('success');
    expect(await check('icmp', { target: 'localhost' })).toBe('success');
  });

  it.skipIf(!isRoot)('runs many checks at once on the shared socket, each getting its own reply', async () => {
    const prepared = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        prepareCheck(
          parseCheck('icmp', {
            name: `p${i}`,
            timeout: '2s',
            interval: '10s',
            target: i % 2 === 0 ? '127.0.0.1' : '::1',
          }),
        ),
      ),
    );
    try {
      for (let round = 0; round < 3; round++)
        await Promise.all(prepared.map((probe) => probe.run(AbortSignal.timeout(2000))));
    } finally {
      await Promise.all(prepared.map((probe) => probe.close()));
    }
  });

  it.skipIf(!isRoot)('fails at the timeout without a reply, and on a name that does not resolve', async () => {
    const prepared = await prepareCheck(
      parseCheck('icmp', { name: 't', timeout: '250ms', interval: '10s', target: '127.0.0.1' }),
    );
    try {
      await expect(prepared.run(AbortSignal.abort())).rejects.toThrow(
        'ICMP echo to 127.0.0.1: no reply, timed out after 250ms',
      );
    } finally {
      await prepared.close();
    }
    expect(await check('icmp', { target: 'nope.invalid' })).toMatch(
      /^ICMP echo to nope\.invalid failed: getaddrinfo (ENOTFOUND|EAI_AGAIN) nope\.invalid$/,
    );
  });

  // The service as an unprivileged user: the run says what would allow ICMP, unless ping_group_range lets it in.
  it.skipIf(!isRoot)('says what would allow it when the process may not open an ICMP socket', async (context) => {
    // The check out may sit where nobody cannot read it (a home directory): then there is nothing to run as nobody.
    try {
      execFileSync(
        process.execPath,
        ['-e', `require('fs').readFileSync(${JSON.stringify(join(ROOT, 'src/healthcheck/kinds/icmp/kind.ts'))})`],
        { uid: NOBODY, gid: NOBODY, stdio: 'ignore' },
      );
    } catch {
      context.skip('the checkout is not readable by nobody');
    }
    const script = [
      "import { parseCheck, prepareCheck } from './src/healthcheck/kinds/index.ts';",
      "const probe = await prepareCheck(parseCheck('icmp', { name: 'u', timeout: '2s', interval: '10s', target: '127.0.0.1' }));",
      "try { await probe.run(AbortSignal.timeout(2000)); console.log('success'); } catch (error) { console.log(error.message); } finally { await probe.close(); }",
    ].join('\n');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        cwd: ROOT,
        uid: NOBODY,
        gid: NOBODY,
        env: { PATH: process.env.PATH ?? '', HOME: '/tmp' },
      },
    );
    if (pingGroupAllows(NOBODY)) expect(stdout.trim()).toBe('success');
    else {
      expect(stdout.trim()).toMatch(
        /^ICMP is not permitted to this process \(.+\): run Vigie as root, give node the CAP_NET_RAW capability \(setcap cap_net_raw\+ep <node>\), or let its group open ping sockets \(sysctl net\.ipv4\.ping_group_range, e\.g\. "0 2147483647"\)$/,
      );
    }
  });

  it('validates its target and lists its fields', () => {
    expect(rejection({ target: '' })).toBe('target: must not be empty');
    expect(rejection({ target: 'http://10.0.0.1/x' })).toBe(
      'target: must be a host name or an IP address, not a URL: write "target": "10.0.0.1"',
    );
    expect(rejection({ target: '10.0.0.1', port: 80 })).toBe('unknown key "port"');
    const def = parseCheck('icmp', {
      name: 'c',
      timeout: '1s',
      interval: '10s',
      target: 'gw.internal',
      description: 'gateway',
    });
    expect(checkToJson(def)).toStrictEqual({
      name: 'c',
      description: 'gateway',
      interval: '10s',
      'one-off': false,
      source: '',
      target: 'gw.internal',
      timeout: '1s',
      kind: 'icmp',
    });
    expect(checkSummary(def)).toBe('ICMP healthcheck gateway on gw.internal');
  });
});
