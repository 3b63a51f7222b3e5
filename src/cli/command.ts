/**
 * One `vigie` command: its usage line, its flags (node:util parseArgs, strict) and what it runs. Every command
 * gets `--help`; a flag it does not know, a missing value or a bad one is a `UsageError`, which the entry point
 * prints as one line followed by the command's usage and exit status 2 (docs/cli.md).
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { closestName } from '../common/schema-errors.ts';

type OptionSpec = NonNullable<ParseArgsConfig['options']>[string] & { valueName?: string; help: string };

export interface CommandSpec {
  name: string;
  /** One line for `vigie --help`. */
  summary: string;
  /** What follows `vigie <name>` in the usage, e.g. `FILE`. */
  positionals?: { usage: string; min: number; max: number };
  options: Record<string, OptionSpec>;
  run(values: Record<string, string | boolean | string[] | undefined>, positionals: string[]): Promise<number>;
}

/** A command line the command cannot run: printed as one line plus the usage, exit 2. */
export class UsageError extends Error {}

export function usageOf(command: CommandSpec): string {
  const flags = Object.entries(command.options).map(([name, option]) => {
    const value = option.type === 'string' ? ` ${option.valueName ?? 'VALUE'}` : '';
    return { flag: `--${name}${value}${option.multiple ? '...' : ''}`, help: option.help };
  });
  flags.push({ flag: '--help', help: 'show this help' });
  const width = Math.max(...flags.map(({ flag }) => flag.length));
  const positionals = command.positionals ? ` ${command.positionals.usage}` : '';
  return [
    `usage: vigie ${command.name}${positionals} [options]`,
    `  ${command.summary}`,
    ...flags.map(({ flag, help }) => `  ${flag.padEnd(width)}  ${help}`),
  ].join('\n');
}

/** Parses `args` for `command`; `null` means `--help` was asked. */
export function parseCommandLine(
  command: CommandSpec,
  args: string[],
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } | null {
  const options: NonNullable<ParseArgsConfig['options']> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, { type, multiple, default: fallback, short }] of Object.entries(command.options)) {
    options[name] = {
      type,
      ...(multiple ? { multiple } : {}),
      ...(fallback !== undefined ? { default: fallback } : {}),
      ...(short ? { short } : {}),
    };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options, allowPositionals: command.positionals !== undefined, strict: true });
  } catch (error) {
    throw new UsageError(describeParseError(error as Error & { code?: string }, Object.keys(options)));
  }
  if (parsed.values.help === true) return null;
  const positionals = parsed.positionals;
  const expected = command.positionals;
  if (expected && positionals.length < expected.min) throw new UsageError(`missing ${expected.usage}`);
  if (expected && positionals.length > expected.max)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[expected.max])}`);
  return { values: parsed.values as Record<string, string | boolean | string[] | undefined>, positionals };
}

/** node:util's messages are long and suggest `--` escapes; ours name the flag and the fix. */
function describeParseError(error: Error & { code?: string }, known: string[]): string {
  const quoted = /'([^']+)'/.exec(error.message)?.[1] ?? '';
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const flag = quoted.replace(/^-+/, '');
      const close = closestName(known, flag);
      return `unknown option ${quoted}${close ? ` (did you mean --${close}?)` : ''}`;
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const flag = quoted.split(' ')[0] ?? quoted;
      return error.message.includes('argument missing') ? `${flag} needs a value` : `${flag} takes no value`;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${JSON.stringify(quoted)}`;
    default:
      return error.message;
  }
}

/** A flag's value among `allowed`, or a UsageError naming the flag, the value and the choices. */
export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`--${flag}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
}

/** A TCP port (0 picks a free one), or a UsageError. */
export function portOf(flag: string, value: string): number {
  const port = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(port) || port > 65535)
    throw new UsageError(`--${flag}: ${JSON.stringify(value)} is not a port (an integer from 0 to 65535)`);
  return port;
}
