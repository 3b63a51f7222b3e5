/**
 * The `vigie` command line: `serve`, `migrate`, `check-config`, `test`, `graph`, `token`. A command is one entry of
 * COMMANDS (src/cli/command.ts gives each `--help`, strict flags and the one-line usage errors, exit 2).
 */
import { mkdirSync } from 'node:fs';
import { ConfigError, loadConfig } from './config/load.ts';
import { type CommandSpec, oneOf, parseCommandLine, portOf, UsageError, usageOf } from './cli/command.ts';
import { tokenCommand } from './cli/token.ts';
import { closeDatabase, migrateDatabase, openDatabase } from './db/client.ts';
import { type DataDirLock, DataDirLockedError, lockDataDir } from './process/data-dir-lock.ts';
import { createLogger, handleSignals, type LogFormat, startService } from './process/lifecycle.ts';
import { createPartFactories } from './process/parts.ts';

declare const VIGIE_VERSION: string | undefined;

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
const LOG_FORMATS: readonly LogFormat[] = ['pretty', 'json'];

const COMMANDS: CommandSpec[] = [
  {
    name: 'serve',
    summary: 'run the service (embedded defaults without --config)',
    options: {
      config: { type: 'string', valueName: 'FILE', help: 'the YAML config file' },
      host: { type: 'string', valueName: 'HOST', help: 'listen on HOST (overrides http.host)' },
      port: { type: 'string', valueName: 'PORT', help: 'listen on PORT, 0 for any free one (overrides http.port)' },
      'data-dir': {
        type: 'string',
        valueName: 'DIR',
        help: 'keep the database and default streams in DIR (overrides data-dir)',
      },
      'log-level': { type: 'string', valueName: 'LEVEL', help: `${LOG_LEVELS.join('|')} (default info)` },
      'log-format': {
        type: 'string',
        valueName: 'FORMAT',
        help: 'pretty|json (default pretty on a terminal, json otherwise)',
      },
    },
    run: serve,
  },
  {
    name: 'migrate',
    summary: 'create or upgrade the database, then exit',
    options: {
      config: { type: 'string', valueName: 'FILE', help: 'the YAML config file (its data-dir holds the database)' },
    },
    run: migrate,
  },
  {
    name: 'check-config',
    summary: 'validate a config file and print what would run',
    positionals: { usage: 'FILE', min: 1, max: 1 },
    options: {},
    run: checkConfig,
  },
  {
    name: 'test',
    summary: 'run Mirabelle-style stream tests (docs/stream-language.md)',
    options: {
      streams: { type: 'string', multiple: true, valueName: 'PATH', help: 'a stream file or directory (repeatable)' },
      tests: { type: 'string', multiple: true, valueName: 'PATH', help: 'a test file or directory (repeatable)' },
      json: { type: 'boolean', help: 'print the results as JSON' },
    },
    run: streamTests,
  },
  {
    name: 'graph',
    summary: 'print the streams as a Graphviz DOT graph (default: the stream directories of the config)',
    // `--streams a b` and `--streams a --streams b` both work: the paths after the first are positionals.
    positionals: { usage: '[PATH...]', min: 0, max: Number.POSITIVE_INFINITY },
    options: {
      streams: { type: 'string', multiple: true, valueName: 'PATH', help: 'a stream file or directory (repeatable)' },
      config: { type: 'string', valueName: 'FILE', help: 'the YAML config file whose stream directories are drawn' },
    },
    run: streamGraph,
  },
  tokenCommand,
];

function overview(): string {
  const width = Math.max(...COMMANDS.map(({ name }) => name.length));
  return [
    'usage: vigie <command> [options]',
    '',
    'commands:',
    ...COMMANDS.map(({ name, summary }) => `  ${name.padEnd(width)}  ${summary}`),
    '',
    '`vigie <command> --help` lists its options; `vigie --version` prints the version.',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    console.error(overview());
    return 2;
  }
  if (name === 'help' || name === '--help' || name === '-h') {
    console.log(overview());
    return 0;
  }
  if (name === '--version' || name === 'version') {
    console.log(typeof VIGIE_VERSION === 'string' ? VIGIE_VERSION : 'unknown');
    return 0;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) {
    console.error(`vigie: unknown command ${JSON.stringify(name)}\n${overview()}`);
    return 2;
  }
  try {
    const parsed = parseCommandLine(command, rest);
    if (parsed === null) {
      console.log(usageOf(command));
      return 0;
    }
    return await command.run(parsed.values, parsed.positionals);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`vigie ${command.name}: ${error.message}\n${usageOf(command)}`);
    return 2;
  }
}

type Values = Record<string, string | boolean | string[] | undefined>;
const text = (values: Values, key: string): string | undefined => values[key] as string | undefined;

async function serve(values: Values): Promise<number> {
  const level = oneOf('log-level', text(values, 'log-level') ?? 'info', LOG_LEVELS);
  const format = oneOf(
    'log-format',
    text(values, 'log-format') ?? (process.stdout.isTTY ? 'pretty' : 'json'),
    LOG_FORMATS,
  );
  const port = text(values, 'port');
  const host = text(values, 'host');
  const dataDir = text(values, 'data-dir');
  if (host === '') throw new UsageError('--host: must not be empty');
  if (dataDir === '') throw new UsageError('--data-dir: must not be empty');
  const overrides = {
    ...(host !== undefined ? { host } : {}),
    ...(port !== undefined ? { port: portOf('port', port) } : {}),
    ...(dataDir !== undefined ? { dataDir } : {}),
  };
  const configFile = text(values, 'config') ?? null;
  const logger = createLogger(level, format);
  try {
    const service = await startService(configFile, logger, createPartFactories(), overrides);
    handleSignals(service, logger, configFile);
    return -1; // keep running
  } catch (error) {
    if (error instanceof ConfigError) console.error(`invalid configuration: ${error.message}`);
    else logger.fatal({ err: error }, `cannot start: ${(error as Error).message}`);
    return 1;
  }
}

/** Takes the data directory's lock as `serve` does: migrating under a running server is refused. */
async function migrate(values: Values): Promise<number> {
  const config = loadConfig(text(values, 'config') ?? null);
  mkdirSync(config.dataDir, { recursive: true });
  let lock: DataDirLock;
  try {
    lock = await lockDataDir(config.dataDir, (message) => console.error(message));
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error;
    console.error(`vigie migrate: ${error.message}`);
    return 1;
  }
  try {
    const db = openDatabase(config.databaseFile);
    migrateDatabase(db);
    closeDatabase(db);
  } finally {
    lock.release();
  }
  console.log(`database ${config.databaseFile} is up to date`);
  return 0;
}

async function checkConfig(_values: Values, [file]: string[]): Promise<number> {
  const { describeConfig } = await import('./config/describe.ts');
  const { checkStreamDirectories } = await import('./stream/catalog/file-check.ts');
  const config = loadConfig(file as string);
  console.log(describeConfig(config));
  const { warnings, errors } = checkStreamDirectories(config.streams.directories);
  for (const warning of warnings) console.log(`warning: ${warning}`);
  for (const error of errors) console.error(`invalid stream: ${error}`);
  return errors.length > 0 ? 1 : 0;
}

async function streamTests(values: Values): Promise<number> {
  const { runStreamTests } = await import('./stream/catalog/test-runner.ts');
  const result = await runStreamTests({
    streams: (values.streams as string[] | undefined) ?? [],
    tests: (values.tests as string[] | undefined) ?? [],
    json: values.json === true,
  });
  process.stdout.write(result.output.endsWith('\n') ? result.output : `${result.output}\n`);
  return result.exitCode;
}

async function streamGraph(values: Values, positionals: string[]): Promise<number> {
  const { GraphError, readStreamFiles, streamsToDot } = await import('./stream/lang/graph.ts');
  const given = [...((values.streams as string[] | undefined) ?? []), ...positionals];
  const paths = given.length > 0 ? given : loadConfig(text(values, 'config') ?? null).streams.directories;
  try {
    process.stdout.write(streamsToDot(await readStreamFiles(paths)));
    return 0;
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    console.error(error.message);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof ConfigError ? `invalid configuration: ${error.message}` : error);
    process.exitCode = 1;
  },
);
