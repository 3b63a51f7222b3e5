/**
 * Issue 14, item 1: `vigie test` (the real CLI, real files) fails a test that could check nothing, naming the
 * test and the key: an unknown key (with a did-you-mean), a missing or empty `:input`, a tap that no loaded stream
 * declares, a `:target` naming no stream. Exit 1; the well-formed test of the same file still runs and passes.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { runCli } from '../../helpers/server.ts';

const STREAMS = `{:alerts {:default true
           :actions {:action :where :params [[:> :metric 80]]
                     :children [{:action :tap :params [:critical]}]}}}`;

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'vigie-strict-tests-'));
  writeFileSync(join(dir, 'streams.edn'), STREAMS);
}, 60_000);

function testFile(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, body);
  return path;
}

it('passes a well-formed test, and fails it when the expectation is wrong', async () => {
  const good = testFile(
    'good.edn',
    '{:fires {:input [{:host "a" :metric 90 :time 1}] :taps {:critical [{:host "a" :metric 90 :time 1}]}}}',
  );
  expect(await runCli(['test', '--streams', join(dir, 'streams.edn'), '--tests', good])).toMatchObject({
    code: 0,
    stdout: '1 passed, 0 failed\n',
  });
  const wrong = testFile('wrong.edn', '{:fires {:input [{:host "a" :metric 90 :time 1}] :taps {:critical []}}}');
  const { code, stdout } = await runCli(['test', '--streams', join(dir, 'streams.edn'), '--tests', wrong]);
  expect(code).toBe(1);
  expect(stdout).toContain('FAIL fires\n  tap :critical');
}, 60_000);

it.each([
  [
    'a misspelled :taps',
    '{:typo {:input [{:metric 90 :time 1}] :tap-result {:critical []}}}',
    'typo',
    'unknown key :tap-result (did you mean :tap-results?)',
  ],
  [
    'a misspelled :input',
    '{:plural {:inputs [{:metric 90 :time 1}] :taps {:critical []}}}',
    'plural',
    'unknown key :inputs (did you mean :input?)',
  ],
  ['a missing :input', '{:nothing {:taps {:critical []}}}', 'nothing', ':input is missing'],
  ['an empty :input', '{:empty {:input [] :taps {:critical []}}}', 'empty', ':input is empty'],
  [
    'an undeclared tap',
    '{:ghost {:input [{:metric 90 :time 1}] :taps {:criticl []}}}',
    'ghost',
    ':taps :criticl: no loaded stream has {:action :tap :params [:criticl]} (did you mean :critical?)',
  ],
  [
    'a target naming no stream',
    '{:lost {:input [{:metric 90 :time 1}] :taps {:critical []} :target :alert}}',
    'lost',
    ':target :alert: no loaded stream has that name (did you mean :alerts?)',
  ],
])(
  '%s fails the test, naming it and the key, exit 1',
  async (_case, body, name, problem) => {
    const file = testFile(
      `${name}.edn`,
      `${body.slice(0, -1)}\n :ok {:input [{:metric 90 :time 1}] :taps {:critical [{:metric 90 :time 1}]}}}`,
    );
    const { code, stdout } = await runCli(['test', '--streams', join(dir, 'streams.edn'), '--tests', file]);
    expect(code).toBe(1);
    expect(stdout).toContain(`FAIL ${name}\n  ${file}: ${problem}`);
    expect(stdout).not.toContain('FAIL ok');
    expect(stdout.trimEnd().endsWith('1 passed, 1 failed')).toBe(true);
  },
  60_000,
);
