/** What the config tests share: the message of the ConfigError a config text is rejected with. */
import { expect } from 'vitest';
import { ConfigError, parseConfigText } from '../../src/config/load.ts';

/** Parses `text` as /etc/vigie.yaml and returns the ConfigError's message; fails the test if it loads. */
export function configErrorOf(text: string): string {
  try {
    parseConfigText(text, '/etc/vigie.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected the config to be rejected');
}
