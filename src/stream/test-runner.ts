/**
 * `vigie test`: runs Mirabelle-style stream tests. Stream files hold `{:stream-name <config> ...}` and are read
 * with the rules of `serve` (src/stream/file-sync.ts); test files hold
 * `{:test-name {:input [events] :taps {:tap-name [expected emissions]} :target :stream?}}` (`:tap-results`, the
 * name before Mirabelle 0.14, is accepted too). A directory stands for its files as `serve` lists them.
 *
 * Each test gets a fresh engine in test mode (no time stamping, taps recorded, outputs and `:io` inert) with
 * every stream loaded; the inputs go to `:target`, or to the default streams. A test passes when no action
 * failed and every listed tap holds exactly the expected emissions (numbers within a relative 1e-9; taps
 * that are not listed are not checked).
 */
import { readFile } from 'node:fs/promises';
import { StreamConfigError } from './compiler.ts';
import { type EdnMap, ednToJs, type EdnValue, isEdnMap, isKeyword, jsToEdn, kw, parseEdn, printEdn } from './edn.ts';
import { StreamEngine } from './engine.ts';
import type { Emission, Event } from './event.ts';
import { type FileStream, readStreamPaths, StreamFileError, streamFilesAt } from './file-sync.ts';

export interface StreamTestOptions {
  streams: string[];
  tests: string[];
  json: boolean;
}

export interface StreamTestRun {
  output: string;
  exitCode: number;
}

interface TestCase {
  name: string;
  file: string;
  input: Event[];
  taps: Map<string, unknown[]>;
  target: string | null;
}

interface TestResult {
  name: string;
  passed: boolean;
  problems: string[];
  taps: Record<string, readonly Emission[]>;
}

class TestSetupError extends Error {}

const RELATIVE_TOLERANCE = 1e-9;

function expandFiles(paths: readonly string[]): string[] {
  return paths.flatMap((path) => {
    try {
      return streamFilesAt(path);
    } catch {
      throw new TestSetupError(`${path}: no such file or directory`);
    }
  });
}

/** Reads each test file as an EDN map keyed by keywords; the first file defining a name wins (Mirabelle's merge). */
async function readTests(paths: readonly string[]): Promise<Map<string, { file: string; value: EdnValue }>> {
  const merged = new Map<string, { file: string; value: EdnValue }>();
  for (const file of expandFiles(paths)) {
    let parsed: EdnValue;
    try {
      parsed = parseEdn(await readFile(file, 'utf8'));
    } catch (error) {
      throw new TestSetupError(`${file}: ${(error as Error).message}`);
    }
    if (!isEdnMap(parsed)) throw new TestSetupError(`${file}: expected a map of names to definitions`);
    for (const [key, value] of parsed) {
      if (!isKeyword(key)) throw new TestSetupError(`${file}: expected keyword names, got ${printEdn(key)}`);
      if (!merged.has(key.name)) merged.set(key.name, { file, value });
    }
  }
  return merged;
}

function readStreams(paths: readonly string[]): Map<string, FileStream> {
  try {
    return readStreamPaths(paths);
  } catch (error) {
    if (error instanceof StreamFileError) throw new TestSetupError(error.message);
    throw error;
  }
}

function testCase(name: string, file: string, value: EdnValue): TestCase {
  const fail = (problem: string): never => {
    throw new TestSetupError(`${file}: test ${name}: ${problem}`);
  };
  if (!isEdnMap(value)) return fail('expected a map with :input and :taps');
  const definition: EdnMap = value;
  const input = definition.get(kw('input')) ?? [];
  if (!Array.isArray(input) || !input.every(isEdnMap)) return fail(':input must be a vector of events (maps)');
  const rawTaps = definition.get(kw('taps')) ?? definition.get(kw('tap-results')) ?? new Map();
  if (!isEdnMap(rawTaps)) return fail(':taps must be a map of tap names to vectors of expected emissions');
  const taps = new Map<string, unknown[]>();
  for (const [tap, expected] of rawTaps) {
    if (!isKeyword(tap) || !Array.isArray(expected)) return fail(`:taps ${printEdn(tap)} must map a keyword to a vector`);
    taps.set(tap.name, expected.map(ednToJs));
  }
  const target = definition.get(kw('target'));
  if (target !== undefined && target !== null && !isKeyword(target)) fail(`:target must be a keyword, got ${printEdn(target)}`);
  return { name, file, input: input.map((event) => ednToJs(event) as Event), taps, target: isKeyword(target) ? target.name : null };
}

/** Equality for tap comparison: structural, numbers within a relative tolerance. */
export function matchesExpected(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'number' && typeof actual === 'number') {
    if (expected === actual || (Number.isNaN(expected) && Number.isNaN(actual))) return true;
    return Math.abs(expected - actual) <= RELATIVE_TOLERANCE * Math.max(Math.abs(expected), Math.abs(actual));
  }
  if (expected === null || actual === null || typeof expected !== 'object' || typeof actual !== 'object') return expected === actual;
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && expected.length === actual.length && expected.every((item, i) => matchesExpected(item, actual[i]));
  }
  if (Array.isArray(actual)) return false;
  const present = (object: object): string[] => Object.keys(object).filter((key) => (object as Record<string, unknown>)[key] !== undefined);
  const expectedKeys = present(expected);
  if (expectedKeys.length !== present(actual).length) return false;
  return expectedKeys.every((key) => matchesExpected((expected as Record<string, unknown>)[key], (actual as Record<string, unknown>)[key]));
}

const edn = (value: unknown): string => printEdn(jsToEdn(value));

function runTest(test: TestCase, streams: ReadonlyMap<string, FileStream>): TestResult {
  const engine = new StreamEngine({ testMode: true });
  for (const [name, { config }] of streams) engine.add(name, config);
  const problems: string[] = [];
  if (test.target !== null && !engine.has(test.target)) problems.push(`unknown target stream :${test.target}`);
  else {
    const result = engine.push(test.target ?? 'default', test.input);
    for (const { stream, error } of result.errors) problems.push(`exception in stream :${stream}: ${error.message}`);
    if (result.errorCount > result.errors.length) problems.push(`... and ${result.errorCount - result.errors.length} more exceptions`);
  }
  const taps = engine.taps();
  for (const [tap, expected] of test.taps) {
    const actual = taps.get(tap) ?? [];
    if (!matchesExpected(expected, actual)) problems.push(`tap :${tap}\n    expected: ${edn(expected)}\n    actual:   ${edn(actual)}`);
  }
  return { name: test.name, passed: problems.length === 0, problems, taps: Object.fromEntries(taps) };
}

function report(results: readonly TestResult[], json: boolean): string {
  if (json) return JSON.stringify({ tests: results.map(({ name, passed, problems, taps }) => ({ name, passed, problems, taps })) });
  const lines: string[] = [];
  for (const result of results) {
    if (result.passed) continue;
    lines.push(`FAIL ${result.name}`);
    for (const problem of result.problems) lines.push(`  ${problem}`);
    lines.push('');
  }
  const passed = results.filter((result) => result.passed).length;
  lines.push(`${passed} passed, ${results.length - passed} failed`);
  return lines.join('\n');
}

/** Loads the stream and test files, runs every test, and returns the report and the exit code (0 when all
 *  passed, 1 when a test failed, 2 when the files cannot be loaded). */
export async function runStreamTests(options: StreamTestOptions): Promise<StreamTestRun> {
  try {
    if (options.tests.length === 0) throw new TestSetupError('no test files: give --tests PATH');
    const streams = readStreams(options.streams);
    // Compiling once up front reports config errors by file, before any test runs.
    const check = new StreamEngine({ testMode: true });
    for (const [name, { path, config }] of streams) {
      try {
        check.add(name, config);
      } catch (error) {
        if (error instanceof StreamConfigError) throw new TestSetupError(`${path}: stream ${name}: ${error.message}`);
        throw error;
      }
    }
    const tests = [...(await readTests(options.tests))].map(([name, { file, value }]) => testCase(name, file, value));
    const results = tests.map((test) => runTest(test, streams));
    return { output: report(results, options.json), exitCode: results.every((result) => result.passed) ? 0 : 1 };
  } catch (error) {
    if (!(error instanceof TestSetupError)) throw error;
    return { output: options.json ? JSON.stringify({ error: error.message }) : `error: ${error.message}`, exitCode: 2 };
  }
}
