/**
 * `:regex` condition benchmark: which linear-time engine runs user patterns. 1,000,000 events through
 * `[:regex :service PATTERN]` for a plain and a `(?i)` pattern, with re2js (the engine src/regex.ts uses), the
 * native `re2` binding when it is installed (`npm install --no-save re2`, built from source by node-gyp), and
 * JavaScript's own RegExp for reference (backtracking: not safe, only the figure to beat). Then the hostile
 * pattern `(a+)+$` against 40 `a`s and a `!`, which RegExp would never finish. Writes bench/results/regex.json.
 *
 * `node --import tsx bench/regex.ts [events]`
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { RE2JS } from 're2js';
import { compileCondition } from '../src/stream/lang/condition.ts';
import { parseEdn } from '../src/stream/lang/edn.ts';
import type { Event } from '../src/stream/event.ts';

const EVENTS = Number(process.argv[2] ?? 1_000_000);
const PATTERNS = ['api-[0-9]+-(latency|errors)', '(?i)API-.*-LATENCY'];
const HOSTILE = { pattern: '(a+)+$', text: `${'a'.repeat(40)}!`, runs: 10_000 };

type Tester = (text: string) => boolean;
interface Engine {
  name: string;
  /** Whole-value match, as `:regex` does. */
  compile(pattern: string): Tester;
}

const re2js: Engine = {
  name: 're2js',
  compile: (pattern) => {
    const compiled = RE2JS.compile(pattern);
    return (text) => compiled.testExact(text);
  },
};

const regexp: Engine = {
  name: 'RegExp (backtracking, reference)',
  compile: (pattern) => {
    const insensitive = pattern.startsWith('(?i)');
    const compiled = new RegExp(`^(?:${insensitive ? pattern.slice(4) : pattern})$`, insensitive ? 'i' : '');
    return (text) => compiled.test(text);
  },
};

async function nativeRe2(): Promise<Engine | null> {
  try {
    const { default: RE2 } = (await import('re2' as string)) as {
      default: new (pattern: string, flags?: string) => { test(text: string): boolean };
    };
    return {
      name: 're2 (native)',
      compile: (pattern) => {
        // node-re2 takes the inline flags as RE2 does; anchor for a whole-value match.
        const compiled = new RE2(`^(?:${pattern})$`, 'u');
        return (text) => compiled.test(text);
      },
    };
  } catch {
    return null;
  }
}

function makeEvents(count: number): Event[] {
  const kinds = ['latency', 'errors', 'requests', 'LATENCY'];
  const events = new Array<Event>(count);
  for (let i = 0; i < count; i++)
    events[i] = { host: 'h', service: `api-${i % 1000}-${kinds[i % kinds.length]}`, metric: i };
  return events;
}

function timeIt(test: (event: Event) => boolean, events: readonly Event[]): { perSecond: number; matched: number } {
  let matched = 0;
  for (let i = 0; i < Math.min(100_000, events.length); i++) if (test(events[i] as Event)) matched++; // warm-up
  matched = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < events.length; i++) if (test(events[i] as Event)) matched++;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { perSecond: Math.round(events.length / seconds), matched };
}

const events = makeEvents(EVENTS);
const engines = [re2js, regexp, ...[await nativeRe2()].filter((engine): engine is Engine => engine !== null)];
const results: Record<string, unknown>[] = [];

for (const pattern of PATTERNS) {
  const condition = compileCondition(parseEdn(`[:regex :service ${JSON.stringify(pattern)}]`) as never);
  const viaCondition = timeIt(condition, events);
  console.log(`[:regex :service ${JSON.stringify(pattern)}] as compiled (re2js): ${viaCondition.perSecond} events/s`);
  results.push({ pattern, engine: 'condition (re2js)', eventsPerSecond: viaCondition.perSecond });
  let expected: number | null = null;
  for (const engine of engines) {
    const test = engine.compile(pattern);
    const { perSecond, matched } = timeIt((event) => typeof event.service === 'string' && test(event.service), events);
    if (expected !== null && matched !== expected)
      throw new Error(`${engine.name} matched ${matched}, others ${expected}`);
    expected = matched;
    console.log(`  ${engine.name}: ${perSecond} events/s (${matched} matched)`);
    results.push({ pattern, engine: engine.name, eventsPerSecond: perSecond });
  }
}

for (const engine of engines.filter((candidate) => candidate !== regexp)) {
  const test = engine.compile(HOSTILE.pattern);
  const started = process.hrtime.bigint();
  for (let i = 0; i < HOSTILE.runs; i++) test(HOSTILE.text);
  const microseconds = Number(process.hrtime.bigint() - started) / 1e3 / HOSTILE.runs;
  console.log(`hostile ${HOSTILE.pattern} on 40 a's and '!': ${engine.name} ${microseconds.toFixed(2)} µs per test`);
  results.push({ pattern: HOSTILE.pattern, engine: engine.name, microsecondsPerTest: microseconds });
}

const dir = join(import.meta.dirname, 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(
  join(dir, 'regex.json'),
  `${JSON.stringify({ events: EVENTS, results, cores: cpus().length, node: process.version })}\n`,
);
