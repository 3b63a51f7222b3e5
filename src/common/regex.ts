/**
 * User-supplied regular expressions (stream `:regex` conditions, index search queries, HTTP check
 * `body-regexp`) run on RE2 semantics, in time linear in the input: a pattern such as `(a+)+$` cannot stall
 * the event loop, as it would with JavaScript's backtracking engine. Same syntax as Go's `regexp`, which the
 * original checks used: inline flags such as `(?i)` work, backreferences and lookaround are refused.
 *
 * Engine: re2js (pure JavaScript), chosen over the native `re2` binding by `bench/regex.ts` (docs/hardening.md):
 * it needs no compiler at install time and is as fast on the short values events carry.
 */
import type { RE2JS } from 're2js';
import { lazyModule } from './lazy-module.ts';

/**
 * re2js is loaded by the first pattern compiled, not at startup: a service whose checks and streams have no
 * regular expression never holds it (0.8 MB of heap; bench/JOURNAL.md, "Modules loaded when used").
 */
const re2js = lazyModule<{ RE2JS: typeof RE2JS }>('re2js');

/** A pattern the linear-time engine cannot run, or not a pattern at all; the message says which and why. */
export class RegexError extends Error {}

export interface LinearRegex {
  /** True when the pattern matches (the whole text for `compileRegex(_, 'whole')`, any part for 'search'). */
  test(text: string): boolean;
}

const UNSUPPORTED: readonly [RegExp, string][] = [
  [/\\[1-9]/, 'backreferences (\\1) are not supported: the linear-time engine (RE2) cannot run them'],
  [/\(\?<?[=!]/, 'lookaround ((?=, (?!, (?<=, (?<!) is not supported: the linear-time engine (RE2) cannot run it'],
];

/** Compiles `source`; throws RegexError naming the problem (unsupported construct or syntax error). */
export function compileRegex(source: string, mode: 'whole' | 'search'): LinearRegex {
  let compiled: RE2JS;
  try {
    compiled = re2js().RE2JS.compile(source);
  } catch (error) {
    const reason = UNSUPPORTED.find(([construct]) => construct.test(source));
    if (reason !== undefined) throw new RegexError(reason[1]);
    throw new RegexError((error as Error).message.replace(/^error parsing regexp: /i, ''));
  }
  return mode === 'whole' ? { test: (text) => compiled.testExact(text) } : { test: (text) => compiled.test(text) };
}
