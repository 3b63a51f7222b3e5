/**
 * Reading one value of the config file into what the parts receive, with a ConfigError naming the file and the
 * key when it cannot be read: shared by every part's settings (`<part>/settings.ts`) and the loader.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../common/config-error.ts';
import { DurationError, durationToMs, parseDuration } from '../common/duration.ts';

/** A positive duration, in ms (docs/configuration.md, "Durations"). */
export function durationMs(
  file: string | null,
  key: string,
  text: string,
  { zero = false }: { zero?: boolean } = {},
): number {
  try {
    const ns = parseDuration(text);
    if (ns < 0 || (ns === 0 && !zero))
      throw new DurationError(`must be ${zero ? 'zero or positive' : 'positive'}, got ${JSON.stringify(text)}`);
    return durationToMs(ns);
  } catch (error) {
    throw new ConfigError(file, key, (error as Error).message);
  }
}

/** The bytes of a file the config names (a certificate, a key). */
export function readConfigFile(file: string | null, key: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(file, key, `cannot read ${path}: ${(error as Error).message}`);
  }
}
