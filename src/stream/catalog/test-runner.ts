/**
 * `vigie test`: runs Mirabelle-style stream tests. Stream files hold `{:stream-name <config> ...}` and are read
 * with the rules of `serve` (src/stream/catalog/file-sync.ts); test files hold
 * `{:test-name {:input [events] :taps {:tap-name [expected emissions]} :target :stream?}}` (`:tap-results`, the
 * name before Mirabelle 0.14, is accepted too). A directory stands for its files as `serve` lists them.
 *
 * Each test gets a fresh engine in test mode (no time stamping, taps recorded, outputs and `:io` inert) with
 * every stream loaded; the inputs go to `:target`, or to the default streams. A test passes when no action
 * failed and every listed tap holds exactly the expected emissions (numbers within a relative 1e-9; taps
 * that are not listed are not checked). A test that could check nothing fails, naming the key: an unknown key
 * (a typo such as `:inputs`), a missing or empty `:input`, a tap no loaded stream declares, a `:target` that
 * names no stream (docs/stream-language.md, testing streams).
 */
import { readFile } from 'node:fs/promises';
import { closestName } from '../../common/schema-errors.ts';
import { StreamConfigError } from '../engine/compiler.ts';
import {
  type EdnMap,
  ednToJs,
  type EdnValue,
  isEdnMap,
  isKeyword,
  jsToEdn,
  kw,
  parseEdn,
  printEdn,
} from '../lang/edn.ts';
import { StreamEngine } from '../engine/engine.ts';
import type { Emission, Event } from '../event.ts';
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

/** The keys a test may have; anything else is a typo that would make the test check nothing. */
const TEST_KEYS = ['input', 'taps', 'tap-results', 'target'];

/** What every loaded stream declares: its name and the names of its `:tap` actions. */
interface LoadedStreams {
  names: string[];
  taps: Set<string>;
}

/** Collects the `{:action :tap :params [:name]}` maps anywhere in a stream config. */
function collectTaps(value: EdnValue, into: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) collectTaps(item, into);
    return;
  }
  if (!isEdnMap(value)) return;
  const params = value.get(kw('params'));
  if (value.get(kw('action')) === kw('tap') && Array.isArray(params) && isKeyword(params[0])) into.add(params[0].name);
  for (const child of value.values()) collectTaps(child, into);
}

function loadedStreams(streams: ReadonlyMap<string, FileStream>): LoadedStreams {
  const taps = new Set<string>();
  for (const { config } of streams.values()) collectTaps(config, taps);
  return { names: [...streams.keys()], taps };
}

const didYouMean = (known: Iterable<string>, name: string): string => {
  const close = closestName(known, name);
  return close === undefined ? '' : ` (did you mean :${close}?)`;
};

/**
 * Reads one test, or the problems that make it unable to test anything: each names the key, and the test's name
 * is added by the report. Such a test fails (exit 1) rather than passing without having checked anything.
 */
function testCase(
  name: string,
  file: string,
  value: EdnValue,
  loaded: LoadedStreams,
): TestCase | { name: string; problems: string[] } {
  if (!isEdnMap(value))
    return { name, problems: [`${file}: expected a map with :input and :taps, got ${printEdn(value)}`] };
  const problems: string[] = [];
  for (const key of value.keys()) {
    const keyName = isKeyword(key) ? key.name : printEdn(key);
    if (!isKeyword(key) || !TEST_KEYS.includes(key.name))
      problems.push(
        `unknown key :${keyName}${didYouMean(TEST_KEYS, keyName)}; a test has ${TEST_KEYS.map((k) => `:${k}`).join(', ')}`,
      );
  }
  const input = value.get(kw('input'));
  if (input === undefined)
    problems.push(':input is missing: give the events to push, e.g. :input [{:host "a" :metric 1 :time 1}]');
  else if (!Array.isArray(input) || !input.every(isEdnMap))
    problems.push(`:input must be a vector of events (maps), got ${printEdn(input)}`);
  else if (input.length === 0) problems.push(':input is empty: a test pushes at least one event');
  const rawTaps = value.get(kw('taps')) ?? value.get(kw('tap-results')) ?? new Map();
  const taps = new Map<string, unknown[]>();
  if (!isEdnMap(rawTaps))
    problems.push(`:taps must be a map of tap names to vectors of expected emissions, got ${printEdn(rawTaps)}`);
  else {
    for (const [tap, expected] of rawTaps) {
      if (!isKeyword(tap) || !Array.isArray(expected))
        problems.push(`:taps ${printEdn(tap)} must map a keyword to a vector`);
      else if (!loaded.taps.has(tap.name))
        problems.push(
          `:taps :${tap.name}: no loaded stream has {:action :tap :params [:${tap.name}]}${didYouMean(loaded.taps, tap.name)}`,
        );
      else taps.set(tap.name, expected.map(ednToJs));
    }
  }
  const target = value.get(kw('target'));
  if (target !== undefined && target !== null && !isKeyword(target))
    problems.push(`:target must be a keyword, got ${printEdn(target)}`);
  else if (isKeyword(target) && !loaded.names.includes(target.name)) {
    problems.push(`:target :${target.name}: no loaded stream has that name${didYouMean(loaded.names, target.name)}`);
  }
  if (problems.length > 0) return { name, problems: problems.map((problem) => `${file}: ${problem}`) };
  return {
    name,
    file,
    input: (input as EdnMap[]).map((event) => ednToJs(event) as Event),
    taps,
    target: isKeyword(target) ? target.name : null,
  };
}

/** Equality for tap comparison: structural, numbers within a relative tolerance. */
export function matchesExpected(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'number' && typeof actual === 'number') {
    if (expected === actual || (Number.isNaN(expected) && Number.isNaN(actual))) return true;
    return Math.abs(expected - actual) <= RELATIVE_TOLERANCE * Math.max(Math.abs(expected), Math.abs(actual));
  }
  if (expected === null || actual === null || typeof expected !== 'object' || typeof actual !== 'object')
    return expected === actual;
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      expected.length === actual.length &&
      expected.every((item, i) => matchesExpected(item, actual[i]))
    );
  }
  if (Array.isArray(actual)) return false;
  const present = (object: object): string[] =>
    Object.keys(object).filter((key) => (object as Record<string, unknown>)[key] !== undefined);
  const expectedKeys = present(expected);
  if (expectedKeys.length !== present(actual).length) return false;
  return expectedKeys.every((key) =>
    matchesExpected((expected as Record<string, unknown>)[key], (actual as Record<string, unknown>)[key]),
  );
}

const edn = (value: unknown): string => printEdn(jsToEdn(value));

function runTest(test: TestCase, streams: ReadonlyMap<string, FileStream>): TestResult {
  const engine = new StreamEngine({ testMode: true });
  for (const [name, { config }] of streams) engine.add(name, config);
  const problems: string[] = [];
  const result = engine.push(test.target ?? 'default', test.input);
  for (const { stream, error } of result.errors) problems.push(`exception in stream :${stream}: ${error.message}`);
  if (result.errorCount > result.errors.length)
    problems.push(`... and ${result.errorCount - result.errors.length} more exceptions`);
  const taps = engine.taps();
  for (const [tap, expected] of test.taps) {
    const actual = taps.get(tap) ?? [];
    if (!matchesExpected(expected, actual))
      problems.push(`tap :${tap}\n    expected: ${edn(expected)}\n    actual:   ${edn(actual)}`);
  }
  return { name: test.name, passed: problems.length === 0, problems, taps: Object.fromEntries(taps) };
}

/** `warnings`: what the stream compiler flagged as likely mistakes (a bare-number duration under 1 ms). */
function report(results: readonly TestResult[], warnings: readonly string[], json: boolean): string {
  if (json) {
    const tests = results.map(({ name, passed, problems, taps }) => ({ name, passed, problems, taps }));
    return JSON.stringify(warnings.length > 0 ? { tests, warnings } : { tests });
  }
  const lines = warnings.map((warning) => `warning: ${warning}`);
  if (lines.length > 0) lines.push('');
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
    const warnings: string[] = [];
    for (const [name, { path, config }] of streams) {
      try {
        check.add(name, config);
      } catch (error) {
        if (error instanceof StreamConfigError) throw new TestSetupError(`${path}: stream ${name}: ${error.message}`);
        throw error;
      }
      for (const warning of check.get(name)?.warnings ?? []) warnings.push(`${path}: stream ${name}: ${warning}`);
    }
    const loaded = loadedStreams(streams);
    const tests = [...(await readTests(options.tests))].map(([name, { file, value }]) =>
      testCase(name, file, value, loaded),
    );
    const results = tests.map((test): TestResult =>
      'input' in test ? runTest(test, streams) : { name: test.name, passed: false, problems: test.problems, taps: {} },
    );
    return {
      output: report(results, warnings, options.json),
      exitCode: results.every((result) => result.passed) ? 0 : 1,
    };
  } catch (error) {
    if (!(error instanceof TestSetupError)) throw error;
    return { output: options.json ? JSON.stringify({ error: error.message }) : `error: ${error.message}`, exitCode: 2 };
  }
}
