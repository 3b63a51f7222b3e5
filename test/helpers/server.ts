/**
 * Starts the real server as a child process on port 0 with a temporary data directory, for e2e tests and
 * benchmarks. It runs bin/vigie.js on the bundle, as `npx vigie` and `npm start` do (dist/ rebuilt once per
 * test process), and the process is real so that tests can send it signals and `kill -9` it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { stringify } from 'yaml';
import { build, ROOT } from '../../bin/build.mjs';

const BIN = join(ROOT, 'bin/vigie.js');
/**
 * The node flags that give a cluster node's young generation room to grow while stream partitions run on it, after
 * bin/vigie.js's own (docs/cluster.md, "Running a node"; src/process/node-tuning.ts).
 */
export const CLUSTER_YOUNG_GENERATION = ['--min-semi-space-size=8', '--max-semi-space-size=32'];

let bundle: Promise<string[]> | null = null;

/** Builds dist/ (the server bundle and the dashboard) with the project's one build (bin/build.mjs), once per
 *  test process. */
export async function ensureBundle(): Promise<void> {
  bundle ??= build();
  await bundle;
}

/**
 * Calls `onLine` with each whole line `stream` writes: a chunk can end mid-line, and the rest of that line
 * arrives with the next chunk. A last line with no newline is given when the stream ends.
 */
export function readLines(stream: Readable, onLine: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
  stream.on('end', () => {
    if (partial !== '') onLine(partial);
    partial = '';
  });
}

export interface StartOptions {
  /** Config merged over `{data-dir: <tmp>, http: {host: 127.0.0.1, port: 0}}`; a string is written verbatim. */
  config?: Record<string, unknown> | string;
  /** Reuse a data directory (restart tests). */
  dataDir?: string;
  logLevel?: string;
  env?: Record<string, string>;
  /** More `node` flags for the service process. */
  nodeArgs?: string[];
  /** Runs it as `npm start` and bin/vigie.js do, with the V8 flags and environment of bin/vigie.js's first line
   *  (benchmarks); tests run it on Node's defaults. */
  asService?: boolean;
  /** How long to wait for "vigie is serving" (20 s by default). */
  readyTimeoutMs?: number;
}

export interface TestServer {
  readonly url: string;
  readonly dataDir: string;
  readonly configFile: string;
  readonly process: ChildProcess;
  /** Every line the process wrote (stdout and stderr). */
  readonly logs: string[];
  /** fetch() relative to the server URL. */
  request(path: string, init?: RequestInit): Promise<Response>;
  /** Rewrites the config file (same merge rules as `config`). */
  writeConfig(config: Record<string, unknown> | string): void;
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill9(): Promise<void>;
  /** Waits until a log line matches. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

function shebangWords(): string[] {
  return (readFileSync(BIN, 'utf8').split('\n', 1)[0] ?? '').split(' ');
}

/** The V8 flags the service starts with: those of bin/vigie.js's first line (docs/performance.md). */
export function serviceNodeFlags(): string[] {
  return shebangWords().filter((word) => word.startsWith('--'));
}

/** The environment variables bin/vigie.js's first line sets (MALLOC_MMAP_THRESHOLD_, docs/performance.md). */
export function serviceEnv(): Record<string, string> {
  return Object.fromEntries(
    shebangWords().flatMap((word) =>
      /^[A-Z_]+=/.test(word) ? [[word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]] : [],
    ),
  );
}

/**
 * `node` arguments and environment that run `bin/vigie.js <args>` as `npm start` does: bin/vigie.js's first line
 * (its V8 flags and environment) is what a user's service starts with, and a spawn of `node` does not read it.
 */
export function serviceCommand(
  args: readonly string[],
  extraFlags: readonly string[] = [],
): { args: string[]; env: NodeJS.ProcessEnv } {
  return {
    args: [...serviceNodeFlags(), ...extraFlags, BIN, ...args],
    env: { ...process.env, ...serviceEnv() },
  };
}

export function makeDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'vigie-test-'));
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? makeDataDir();
  const configFile = join(dataDir, 'vigie.yaml');
  const writeConfig = (config: Record<string, unknown> | string) => {
    if (typeof config === 'string') {
      writeFileSync(configFile, config);
      return;
    }
    const http = { host: '127.0.0.1', port: 0, ...((config.http as object | undefined) ?? {}) };
    writeFileSync(configFile, stringify({ 'data-dir': dataDir, ...config, http }));
  };
  writeConfig(options.config ?? {});
  await ensureBundle();
  const flags = [...(options.asService === true ? serviceNodeFlags() : []), ...(options.nodeArgs ?? [])];
  const child = spawn(
    process.execPath,
    [...flags, BIN, 'serve', '--config', configFile, '--log-level', options.logLevel ?? 'info'],
    {
      cwd: dataDir,
      env: { ...process.env, ...(options.asService === true ? serviceEnv() : {}), ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const logs: string[] = [];
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const onLine = (line: string) => {
    if (line === '') return;
    logs.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.pattern.test(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  readLines(child.stdout, onLine);
  readLines(child.stderr, onLine);
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));

  const waitForLog = (pattern: RegExp, timeoutMs = 20_000) =>
    new Promise<string>((resolveLine, reject) => {
      const existing = logs.find((line) => pattern.test(line));
      if (existing) return resolveLine(existing);
      const timer = setTimeout(
        () => reject(new Error(`no log line matched ${pattern} within ${timeoutMs} ms; logs:\n${logs.join('\n')}`)),
        timeoutMs,
      );
      waiters.push({ pattern, resolve: (line) => (clearTimeout(timer), resolveLine(line)) });
      void exited.then((code) => {
        clearTimeout(timer);
        reject(
          new Error(`server exited with code ${code} before a log line matched ${pattern}; logs:\n${logs.join('\n')}`),
        );
      });
    });

  const ready = await waitForLog(/vigie is serving/, options.readyTimeoutMs);
  const url = (JSON.parse(ready) as { url: string }).url;
  return {
    url,
    dataDir,
    configFile,
    process: child,
    logs,
    request: (path, init) => fetch(`${url}${path}`, init),
    writeConfig,
    waitForLog,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return exited;
    },
    async kill9() {
      if (child.exitCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Runs the CLI to completion (e.g. `check-config`, `test`) and returns its output and exit code. */
export async function runCli(
  args: string[],
  options: { cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  await ensureBundle();
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolveExit) =>
    child.once('exit', (exitCode) => resolveExit(exitCode)),
  );
  return { code, stdout, stderr };
}
