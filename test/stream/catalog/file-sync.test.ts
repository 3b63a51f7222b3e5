import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readStreamPaths, scanStreamDirectories, StreamFileError } from '../../../src/stream/catalog/file-sync.ts';
import { runStreamTests } from '../../../src/stream/catalog/test-runner.ts';

const tap = (name: string) => `{:actions {:action :tap :params [:${name}]}}`;

function streamDirectory(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigie-file-sync-'));
  writeFileSync(join(dir, 'b.edn'), `{:shared ${tap('from-b')} :only-b ${tap('b')}}`);
  writeFileSync(join(dir, 'a.conf'), `{:shared ${tap('from-a')}}`);
  // Hidden files, editor backups and sub-directories are not stream files, for `serve` and `vigie test` alike.
  writeFileSync(join(dir, '.hidden.edn'), `{:hidden ${tap('h')}}`);
  writeFileSync(join(dir, 'b.edn~'), `{:backup ${tap('x')}}`);
  mkdirSync(join(dir, 'nested'));
  writeFileSync(join(dir, 'nested', 'n.edn'), `{:nested ${tap('n')}}`);
  return dir;
}

describe('stream file reading rules', () => {
  it('reads a directory the same way for serve (scan) and for vigie test (paths)', () => {
    const dir = streamDirectory();
    const scanned = scanStreamDirectories([dir], new Map()).streams;
    const read = readStreamPaths([dir]);
    expect([...read.keys()].sort()).toEqual(['only-b', 'shared']);
    expect([...scanned.keys()].sort()).toEqual([...read.keys()].sort());
    // The first file in name order wins a name defined twice.
    expect(read.get('shared')?.path).toBe(join(dir, 'a.conf'));
    expect(scanned.get('shared')?.path).toBe(join(dir, 'a.conf'));
  });

  it('refuses for vigie test what serve refuses, naming the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigie-file-sync-'));
    const file = join(dir, 'bad.edn');
    writeFileSync(file, `{:bad/name! ${tap('x')}}`);
    expect(scanStreamDirectories([dir], new Map()).problems).toEqual([
      { path: file, problem: expect.stringMatching(/^invalid stream name "bad\/name!"/) },
    ]);
    expect(() => readStreamPaths([dir])).toThrow(StreamFileError);
    expect(() => readStreamPaths([dir])).toThrow(`${file}: invalid stream name "bad/name!"`);
    expect(() => readStreamPaths([join(dir, 'missing')])).toThrow(`${join(dir, 'missing')}: no such file or directory`);
  });

  it('vigie test runs the streams of a directory holding backups without reading them', async () => {
    const dir = streamDirectory();
    writeFileSync(join(dir, 'broken.edn~'), '{:broken');
    const tests = join(dir, 'tests');
    mkdirSync(tests);
    writeFileSync(join(tests, 't.edn'), '{:t {:target :only-b :input [{:host "h"}] :taps {:b [{:host "h"}]}}}');
    const result = await runStreamTests({ streams: [dir], tests: [tests], json: false });
    expect(result).toEqual({ output: '1 passed, 0 failed', exitCode: 0 });
  });
});
