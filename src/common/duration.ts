/**
 * Go-style durations (`time.ParseDuration` / `Duration.String()`), the one duration syntax of Vigie:
 * check intervals and timeouts, config values and stream time params all go through here.
 * Values are held as nanoseconds in a JS number (exact up to 2^53 ns, about 104 days), bounded as Go's int64
 * nanoseconds are (docs/hardening.md, "Maintenance windows").
 */
import { type TSchema, Type } from '@sinclair/typebox';

const UNIT_NS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3, // U+00B5 MICRO SIGN
  μs: 1e3, // U+03BC GREEK SMALL LETTER MU
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

export class DurationError extends Error {}

/** Go's bound: a `time.Duration` is an int64 of nanoseconds, so at most 2562047h47m16.854775807s (about 292 years). */
const MAX_NS = (1n << 63n) - 1n;
const MAX_DURATION = '2562047h47m16.854775807s';

/**
 * Parses a Go duration string into nanoseconds; throws DurationError with Go's wording. Bounded as Go bounds it
 * (|d| <= 2^63-1 ns, exact: the sum is kept in a BigInt), so that no duration a Go service would refuse reaches a
 * timer or a date.
 */
export function parseDuration(text: string): number {
  const quoted = JSON.stringify(text);
  let rest = text;
  let negative = false;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = rest[0] === '-';
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw new DurationError(`time: invalid duration ${quoted}`);
  let total = 0n;
  const group = /^([0-9]*)(?:\.([0-9]*))?([^0-9.]*)/;
  while (rest !== '') {
    const match = group.exec(rest) as RegExpExecArray;
    // Leading zeros are no magnitude; past 19 digits any unit is out of range (and a BigInt of a long run of
    // digits would be costly).
    const whole = (match[1] as string).replace(/^0+/, '');
    const fraction = match[2];
    const unit = match[3] as string;
    if (match[1] === '' && (fraction === undefined || fraction === ''))
      throw new DurationError(`time: invalid duration ${quoted}`);
    if (unit === '') throw new DurationError(`time: missing unit in duration ${quoted}`);
    if (whole.length > 19) throw outOfRange(quoted);
    const scale = UNIT_NS[unit];
    if (scale === undefined)
      throw new DurationError(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    // As Go: the whole part exactly, the fraction through a float (nanosecond-exact for fractions of hours).
    total += BigInt(whole === '' ? 0 : whole) * BigInt(scale);
    if (fraction !== undefined && fraction !== '') total += BigInt(Math.trunc(Number(`0.${fraction}`) * scale));
    if (total > MAX_NS + 1n) throw outOfRange(quoted);
    rest = rest.slice(match[0].length);
  }
  // Go allows -2^63 ns, one more than 2^63-1.
  if (total > (negative ? MAX_NS + 1n : MAX_NS)) throw outOfRange(quoted);
  return Number(negative ? -total : total);
}

function outOfRange(quoted: string): DurationError {
  return new DurationError(`time: invalid duration ${quoted}: out of range (at most ${MAX_DURATION})`);
}

/**
 * Nanoseconds to whole milliseconds for timers: rounded up, so that a positive duration never becomes 0 ms (a
 * 500 µs timeout still waits) and a timer never fires before the duration has passed.
 */
export function durationToMs(ns: number): number {
  return Math.ceil(ns / 1e6);
}

/** Formats nanoseconds the way Go's `Duration.String()` does: `0s`, `500ms`, `1m30s`, `1h0m0s`. */
export function formatDuration(ns: number): string {
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  let rest = Math.abs(Math.round(ns));
  if (rest < 1e9) {
    if (rest < 1e3) return `${sign}${rest}ns`;
    if (rest < 1e6) return `${sign}${trimFraction(rest / 1e3)}µs`;
    return `${sign}${trimFraction(rest / 1e6)}ms`;
  }
  const hours = Math.floor(rest / 3600e9);
  rest -= hours * 3600e9;
  const minutes = Math.floor(rest / 60e9);
  rest -= minutes * 60e9;
  const seconds = trimFraction(rest / 1e9);
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}

function trimFraction(value: number): string {
  // Nine decimals cover nanosecond precision; Go never prints trailing zeros.
  return value.toFixed(9).replace(/\.?0+$/, '');
}

/** The schema of a Go duration string (`10s`, `1m30s`) in config and API bodies; the marker lets the error
 *  wording say "must be a duration string" when someone writes a bare integer. */
export const Duration = Type.String({ 'x-vigie-duration': true, minLength: 1 });

export function isDurationSchema(schema: TSchema): boolean {
  return (schema as Record<string, unknown>)['x-vigie-duration'] === true;
}
