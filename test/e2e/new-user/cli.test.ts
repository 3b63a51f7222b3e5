/**
 * Issue 14, item 5: every command has --help, bad flags and values are one line plus the usage (exit 2, no stack
 * trace), `vigie --version`, `serve --host/--port/--data-dir` override the config, `--log-format pretty|json`.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../../bin/build.mjs';
import { ensureBundle, makeDataDir, readLines, runCli, serviceEnv, serviceNodeFlags } from '../../helpers/server.ts';

describe('vigie CLI', () => {
  it('prints the version of package.json', async () => {
    const { code, stdout } = await runCli(['--version']);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(
      (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    );
  });

  it("`npm start` and `npm run vigie` start node as bin/vigie.js's first line does", () => {
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    const env = Object.entries(serviceEnv()).map(([key, value]) => `${key}=${value}`);
    const command = ['env', ...env, 'node', ...serviceNodeFlags(), 'bin/vigie.js'].join(' ');
    expect(env).toContain('MALLOC_MMAP_THRESHOLD_=131072');
    expect(serviceNodeFlags()).toContain('--max-semi-space-size=8');
    expect(scripts.start).toBe(`node bin/build.mjs && exec ${command} serve`);
    expect(scripts.vigie).toBe(command);
  });

  it.each(['serve', 'migrate', 'check-config', 'test', 'graph'])(
    '`%s --help` prints the usage and exits 0',
    async (command) => {
      const { code, stdout, stderr } = await runCli([command, '--help']);
      expect(code).toBe(0);
      expect(stderr).toBe('');
      expect(stdout).toMatch(new RegExp(`^usage: vigie ${command}`));
      expect(stdout).toContain('--help');
    },
  );

  it.each([
    [
      ['serve', '--log-level', 'foo'],
      'vigie serve: --log-level: "foo" is not one of trace, debug, info, warn, error, fatal, silent',
    ],
    [['serve', '--log-format', 'xml'], 'vigie serve: --log-format: "xml" is not one of pretty, json'],
    [['serve', '--prot', '1'], 'vigie serve: unknown option --prot (did you mean --port?)'],
    [['serve', '--port', '99999'], 'vigie serve: --port: "99999" is not a port (an integer from 0 to 65535)'],
    [['serve', '--config'], 'vigie serve: --config needs a value'],
    [['test', '--test', 'x'], 'vigie test: unknown option --test (did you mean --tests?)'],
    [['check-config'], 'vigie check-config: missing FILE'],
    [['migrate', 'extra'], 'vigie migrate: unexpected argument "extra"'],
  ])('%j is a one-line error with the usage, exit 2', async (args, message) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    const [first, second] = stderr.split('\n');
    expect(first).toBe(message);
    expect(second).toMatch(/^usage: vigie /);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('an unknown command lists the commands, exit 2', async () => {
    const { code, stderr } = await runCli(['srve']);
    expect(code).toBe(2);
    expect(stderr).toContain('vigie: unknown command "srve"');
    expect(stderr).toContain('check-config');
  });

  it('serve --host/--port/--data-dir run without a config file, logging in the pretty format', async () => {
    await ensureBundle();
    const dataDir = makeDataDir();
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'bin/vigie.js'),
        'serve',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--data-dir',
        dataDir,
        '--log-format',
        'pretty',
      ],
      {
        cwd: dataDir,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const lines: string[] = [];
    const serving = new Promise<string>((resolve, reject) => {
      readLines(child.stdout, (line) => {
        lines.push(line);
        if (line.includes('vigie is serving')) resolve(line);
      });
      readLines(child.stderr, (line) => lines.push(line));
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${lines.join('\n')}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const line = await serving;
    // `HH:MM:SS.mmm INFO  message key=value ...`, not JSON.
    expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}vigie is serving url=http:\/\/127\.0\.0\.1:\d+ /);
    const url = /url=(\S+)/.exec(line)?.[1] as string;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(existsSync(join(dataDir, 'vigie.db'))).toBe(true);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 30_000);
});
