import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { check } from '../run.ts';

/** Gone, or a zombie waiting for a reaper that is not us (PID 1 of a container may never reap it). */
function isDead(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

describe('command check', () => {
  it('succeeds when the command exits with 0, with its arguments and no shell', async () => {
    expect(await check('command', { command: 'true' })).toBe('success');
    expect(await check('command', { command: 'test', arguments: ['a b', '=', 'a b'] })).toBe('success');
    expect(await check('command', { command: 'test', arguments: ['$HOME', '=', 'a'] })).toMatch(
      /^The command failed with code=1/,
    );
  });

  it('fails with the exit code, stderr, then the first bytes of stdout', async () => {
    expect(
      await check('command', { command: 'sh', arguments: ['-c', 'echo disk at 91%; echo oops >&2; exit 3'] }),
    ).toBe('The command failed with code=3, stderr=oops\n: exit status 3, stdout=disk at 91%');
    const chatty = await check('command', {
      command: 'sh',
      arguments: ['-c', 'head -c 100000 /dev/zero | tr "\\0" y; exit 2'],
    });
    expect(chatty).toBe(`The command failed with code=2, stderr=: exit status 2, stdout=${'y'.repeat(4096)}`);
  });

  it('fails when the executable does not exist', async () => {
    expect(await check('command', { command: 'doesnotexistcmd' })).toBe(
      'The command failed, stderr=: spawn doesnotexistcmd ENOENT',
    );
  });

  it('reports a command killed by a signal', async () => {
    expect(await check('command', { command: 'sh', arguments: ['-c', 'echo bye >&2; kill -9 $$'] })).toBe(
      'The command failed with code=-1, stderr=bye\n: signal: SIGKILL',
    );
  });

  it('discards stdout and keeps only the first 64 KiB of stderr', async () => {
    expect(await check('command', { command: 'sh', arguments: ['-c', 'head -c 2000000 /dev/zero'] })).toBe('success');
    const message = await check('command', {
      command: 'sh',
      arguments: ['-c', 'head -c 200000 /dev/zero | tr "\\0" x >&2; exit 1'],
    });
    expect(message).toBe(`The command failed with code=1, stderr=${'x'.repeat(64 * 1024)}: exit status 1`);
  });

  it('kills the whole process group at the timeout', async () => {
    const started = performance.now();
    const message = await check('command', {
      command: 'sh',
      arguments: ['-c', 'sleep 30 & echo "$$ $!" >&2; sleep 30'],
      timeout: '300ms',
      interval: '1s',
    });
    expect(performance.now() - started).toBeLessThan(2000);
    const match =
      /^The command failed with code=-1, stderr=(\d+) (\d+)\n: killed \(with its process group\) at the timeout of 300ms$/.exec(
        message,
      );
    expect(match, message).not.toBeNull();
    const [shell, background] = [Number(match?.[1]), Number(match?.[2])];
    await vi.waitFor(() => {
      expect(isDead(shell)).toBe(true);
      expect(isDead(background)).toBe(true);
    });
  });

  it('lets the exit code decide when a leftover child keeps stderr open, and kills it at the timeout', async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), 'vigie-command-')), 'pid');
    const started = performance.now();
    const message = await check('command', {
      command: 'sh',
      arguments: ['-c', `sleep 30 & echo $! > ${pidFile}; exit 0`],
      timeout: '300ms',
      interval: '1s',
    });
    expect(message).toBe('success');
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    const leftover = Number(readFileSync(pidFile, 'utf8'));
    await vi.waitFor(() => expect(isDead(leftover)).toBe(true));
  });
});
