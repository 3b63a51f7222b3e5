/**
 * Go-style durations (`time.ParseDuration` / `Duration.String()`), the one duration syntax of Vigie:
 * check intervals and timeouts, config values and stream time params all go through here.
 * Values are held as nanoseconds in a JS number (exact up to 2^53 ns, about 104 days).
 */
import { type TSchema, Type } from '@sinclair/typebox';

const UNIT_NS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  'µs': 1e3, // U+00B5 MICRO SIGN
  'μs': 1e3, // U+03BC GREEK SMALL LETTER MU
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

export class DurationError extends Error {}

/** Parses a Go duration string into nanoseconds; throws DurationError with Go's wording. */
export function parseDuration(text: string): number {
  const quoted = JSON.stringify(text);
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw new DurationError(`time: invalid duration ${quoted}`);
  let total = 0;
  const group = /^([0-9]*(?:\.[0-9]*)?)([^0-9.]*)/;
  while (rest !== '') {
    const match = group.exec(rest);
    const number = match?.[1] ?? '';
    const unit = match?.[2] ?? '';
    if (number === '' || number === '.') throw new DurationError(`time: invalid duration ${quoted}`);
    if (unit === '') throw new DurationError(`time: missing unit in duration ${quoted}`);
    const scale = UNIT_NS[unit];
    if (scale === undefined) throw new DurationError(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    total += Number(number) * scale;
    rest = rest.slice(number.length + unit.length);
  }
  return sign * Math.round(total);
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
