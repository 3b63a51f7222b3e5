import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { matchesExpected, runStreamTests } from '../../../src/stream/catalog/test-runner.ts';
import { ensureBundle } from '../../helpers/server.ts';

const fixtures = 'test/fixtures/streams';
const streams = [`${fixtures}/streams`];

describe('vigie test runner', () => {
  it('passes a test file whose taps match (lists as lists, numbers within 1e-9, integers equal to floats)', async () => {
    const result = await runStreamTests({ streams, tests: [`${fixtures}/tests/passing.edn`], json: false });
    expect(result).toEqual({ output: '4 passed, 0 failed', exitCode: 0 });
  });

  it('prints each failure with expected and actual EDN, and exits 1', async () => {
    const result = await runStreamTests({ streams, tests: [`${fixtures}/tests/failing.edn`], json: false });
    expect(result.exitCode).toBe(1);
    expect(result.output).toContain(
      'FAIL wrong-state\n  tap :critical\n    expected: [{:host "a", :metric 150, :time 1, :state "warning"}]\n    actual:   [{:host "a", :metric 150, :time 1, :state "critical"}]',
    );
    expect(result.output).toContain(
      'FAIL action-throws\n  exception in stream :counter: :increment needs a numeric :metric',
    );
    expect(result.output).toContain(
      'FAIL list-is-not-flat\n  tap :batch\n    expected: [{:host "x"}]\n    actual:   [[{:host "x"}]]',
    );
    expect(result.output.endsWith('0 passed, 3 failed')).toBe(true);
  });

  it('--json reports every test with every tap it recorded', async () => {
    const result = await runStreamTests({ streams, tests: [`${fixtures}/tests`], json: true });
    expect(result.exitCode).toBe(1);
    const report = JSON.parse(result.output) as {
      tests: { name: string; passed: boolean; taps: Record<string, unknown[]> }[];
    };
    expect(report.tests.map((test) => [test.name, test.passed])).toEqual([
      ['wrong-state', false],
      ['action-throws', false],
      ['list-is-not-flat', false],
      ['critical-above-100', true],
      ['routed-to-alerts', true],
      ['list-emission', true],
      ['rate-tolerance', true],
    ]);
    expect(report.tests.find((test) => test.name === 'list-emission')?.taps).toEqual({
      batch: [[{ host: 'x' }, { host: 'y' }]],
      flat: [{ host: 'x' }, { host: 'y' }],
    });
  });

  it('names the file and the stream of a config that does not compile', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vigie-stream-test-'));
    await writeFile(
      join(dir, 'bad.edn'),
      '{:bad {:actions {:action :where :params [[:= :host "a"]] :children [{:action :nope}]}}}',
    );
    const result = await runStreamTests({ streams: [dir], tests: [`${fixtures}/tests/passing.edn`], json: false });
    expect(result).toEqual({
      output: `error: ${join(dir, 'bad.edn')}: stream bad: Unknown action :nope at :actions > :where > :nope`,
      exitCode: 2,
    });
    await writeFile(join(dir, 'bad.edn'), '{:bad {:actions');
    expect((await runStreamTests({ streams: [dir], tests: [`${fixtures}/tests`], json: false })).output).toMatch(
      /bad\.edn: Invalid EDN at line 1, column 16: expected '}'/,
    );
  });

  it('compares numbers with a relative tolerance and structures exactly', () => {
    expect(matchesExpected(1, 1.0)).toBe(true);
    expect(matchesExpected(0.1 + 0.2, 0.3)).toBe(true);
    expect(matchesExpected(1, 1.001)).toBe(false);
    expect(matchesExpected({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(matchesExpected({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(matchesExpected([{ a: 1 }], [[{ a: 1 }]])).toBe(false);
  });

  it('runs as `vigie test` in a real process', async () => {
    await ensureBundle();
    const run = promisify(execFile);
    const ok = await run(process.execPath, [
      'bin/vigie.js',
      'test',
      '--streams',
      ...streams,
      '--tests',
      `${fixtures}/tests/passing.edn`,
    ]);
    expect(ok.stdout.trim()).toBe('4 passed, 0 failed');
    const failed = await run(process.execPath, [
      'bin/vigie.js',
      'test',
      '--streams',
      ...streams,
      '--tests',
      `${fixtures}/tests/failing.edn`,
    ]).catch((error: { code: number; stdout: string }) => error);
    expect('code' in failed ? failed.code : 0).toBe(1);
    expect(failed.stdout).toContain('0 passed, 3 failed');
  });
});
