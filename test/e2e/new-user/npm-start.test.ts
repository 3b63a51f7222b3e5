/**
 * Issue 14, item 9: `npm start` runs the service as the process that receives the signals, so a service manager
 * that sends SIGTERM to what it started (npm) stops the service cleanly.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ROOT } from '../../../bin/build.mjs';
import { makeDataDir, readLines } from '../../helpers/server.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it('SIGTERM to `npm start` stops the node service, which exits 0', async () => {
  const dataDir = makeDataDir();
  const configFile = join(dataDir, 'vigie.yaml');
  writeFileSync(configFile, stringify({ 'data-dir': dataDir, http: { host: '127.0.0.1', port: 0 } }));
  const npm = spawn('npm', ['start', '--silent', '--', '--config', configFile, '--log-format', 'json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const serving = new Promise<{ pid: number; url: string }>((resolve, reject) => {
    const onLine = (line: string) => {
      lines.push(line);
      if (line.includes('vigie is serving')) resolve(JSON.parse(line) as { pid: number; url: string });
    };
    readLines(npm.stdout, onLine);
    readLines(npm.stderr, onLine);
    npm.once('exit', (code) => reject(new Error(`npm exited with ${code}: ${lines.join('\n')}`)));
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => npm.once('exit', (code, signal) => resolve({ code, signal })));
  const { pid, url } = await serving;
  expect((await fetch(`${url}/healthz`)).status).toBeLessThan(500);
  npm.kill('SIGTERM');
  const { code } = await exited;
  // npm exits with the status of the script it ran: 0 only when the node process exited 0 on its own.
  expect(code).toBe(0);
  expect(lines.some((line) => line.includes('vigie stopped'))).toBe(true);
  expect(alive(pid)).toBe(false);
}, 60_000);
