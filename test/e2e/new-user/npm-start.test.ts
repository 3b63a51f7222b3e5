/**
 * `npm start` runs the service as the process that receives the signals, so a service manager that sends SIGTERM
 * to what it started (npm) stops the service cleanly, and a terminal's Ctrl-C does too.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ROOT } from '../../../bin/build.mjs';
import { makeDataDir, readLines } from '../../helpers/server.ts';
import { startTcpTarget } from '../../helpers/targets.ts';
import { waitFor } from '../../helpers/wait.ts';

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
  const npm = spawn('npm', ['start', '--silent', '--', '--config', configFile, '--log-format', 'json'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const { pid, url } = await serving;
  expect((await fetch(`${url}/healthz`)).status).toBeLessThan(500);
  npm.kill('SIGTERM');
  const { code } = await exited;
  // npm exits with the status of the script it ran: 0 only when the node process exited 0 on its own.
  expect(code).toBe(0);
  expect(lines.some((line) => line.includes('vigie stopped'))).toBe(true);
  expect(alive(pid)).toBe(false);
}, 60_000);

/**
 * Ctrl-C in a terminal sends SIGINT to the whole foreground process group: npm and node get one each, and npm
 * forwards its own to node, so node sees two. The second must not cut the stop short: results still waiting for
 * `healthchecks.write-delay` and index changes since the last snapshot are written before the exit.
 */
it('Ctrl-C on `npm start` (SIGINT to its process group), three times in a row, loses no result and no index entry', async () => {
  const target = await startTcpTarget();
  const dataDir = makeDataDir();
  const configFile = join(dataDir, 'vigie.yaml');
  writeFileSync(
    configFile,
    stringify({
      'data-dir': dataDir,
      http: { host: '127.0.0.1', port: 0 },
      // Results wait 5 minutes before they are written: only a clean stop writes them.
      healthchecks: { 'write-delay': '5m' },
      'tcp-checks': [
        {
          name: 'ctrl-c',
          description: 'Ctrl-C test',
          target: target.host,
          port: target.port,
          interval: '1s',
          timeout: '1s',
        },
      ],
    }),
  );
  try {
    let lastTimestamp = 0;
    for (let round = 1; round <= 3; round++) {
      const npm = spawn('npm', ['start', '--silent', '--', '--config', configFile, '--log-format', 'json'], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        // Its own process group, as a terminal's foreground job.
        detached: true,
      });
      const lines: string[] = [];
      const serving = new Promise<{ url: string }>((resolve, reject) => {
        const onLine = (line: string) => {
          lines.push(line);
          if (line.includes('vigie is serving')) resolve(JSON.parse(line) as { url: string });
        };
        readLines(npm.stdout, onLine);
        readLines(npm.stderr, onLine);
        npm.once('exit', (code) => reject(new Error(`npm exited with ${code}: ${lines.join('\n')}`)));
      });
      const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      const { url } = await serving;
      // What the previous runs wrote at their stop is here.
      if (round > 1) {
        const history = (await (await fetch(`${url}/api/v1/result/ctrl-c/history?limit=100`)).json()) as {
          result: { 'healthcheck-timestamp': number }[];
        };
        expect(
          history.result.some((entry) => entry['healthcheck-timestamp'] === lastTimestamp),
          `round ${round}: the result of ${lastTimestamp} survived`,
        ).toBe(true);
        const search = await fetch(`${url}/api/v1/index/ctrl-c/search`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: Buffer.from('[:always-true]').toString('base64') }),
        });
        const hosts = ((await search.json()) as { events: { host: string }[] }).events
          .map((event) => event.host)
          .sort();
        expect(hosts).toEqual(Array.from({ length: round - 1 }, (_, i) => `run-${i + 1}`));
      } else {
        const created = await fetch(`${url}/api/v1/stream/ctrl-c`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            config: Buffer.from('{:actions {:action :index :params [[:host]]}}').toString('base64'),
          }),
        });
        expect(created.status).toBe(200);
      }
      const pushed = await fetch(`${url}/api/v1/stream/ctrl-c`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ host: `run-${round}`, time: Date.now() * 1e6 }] }),
      });
      expect(pushed.status).toBe(200);
      // A result taken in this run, newer than the previous runs' (it is only in memory until the stop).
      lastTimestamp = await waitFor(async () => {
        const response = await fetch(`${url}/api/v1/result/ctrl-c`);
        if (response.status !== 200) return false;
        const timestamp = ((await response.json()) as { 'healthcheck-timestamp': number })['healthcheck-timestamp'];
        return timestamp > lastTimestamp ? timestamp : false;
      });
      process.kill(-(npm.pid as number), 'SIGINT');
      expect(await exited, lines.join('\n')).toBe(0);
      expect(
        lines.some((line) => line.includes('vigie stopped')),
        lines.join('\n'),
      ).toBe(true);
    }
  } finally {
    await target.close();
  }
}, 120_000);
