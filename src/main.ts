/**
 * The `vigie` command line: `serve`, `migrate`, `check-config`, `test`, `graph`.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/load.ts';
import { closeDatabase, migrateDatabase, openDatabase } from './db/client.ts';
import { createLogger, handleSignals, startService } from './server/lifecycle.ts';
import { createPartFactories } from './parts.ts';

const USAGE = `usage:
  vigie serve [--config FILE] [--log-level LEVEL]   run the service (embedded defaults without --config)
  vigie migrate [--config FILE]                      create or upgrade the database, then exit
  vigie check-config FILE                            validate a config file and print what would run
  vigie test --streams PATH... --tests PATH... [--json]   run Mirabelle-style stream tests
  vigie graph [--streams PATH...] [--config FILE]    print the streams as a Graphviz DOT graph
                                                     (default: the stream directories of the config)`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'migrate':
      return migrate(rest);
    case 'check-config':
      return checkConfig(rest);
    case 'test':
      return streamTests(rest);
    case 'graph':
      return streamGraph(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      console.error(`unknown command ${JSON.stringify(command)}\n${USAGE}`);
      return 2;
  }
}

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, 'log-level': { type: 'string', default: 'info' } } });
  const logger = createLogger(values['log-level'] ?? 'info');
  try {
    const service = await startService(values.config ?? null, logger, createPartFactories());
    handleSignals(service, logger, values.config ?? null);
    return -1; // keep running
  } catch (error) {
    if (error instanceof ConfigError) console.error(`invalid configuration: ${error.message}`);
    else logger.fatal({ err: error }, `cannot start: ${(error as Error).message}`);
    return 1;
  }
}

function migrate(args: string[]): number {
  const { values } = parseArgs({ args, options: { config: { type: 'string' } } });
  const config = loadConfig(values.config ?? null);
  const db = openDatabase(config.databaseFile);
  migrateDatabase(db);
  closeDatabase(db);
  console.log(`database ${config.databaseFile} is up to date`);
  return 0;
}

async function checkConfig(args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true });
  const file = positionals[0];
  if (file === undefined) {
    console.error('usage: vigie check-config FILE');
    return 2;
  }
  const { describeConfig } = await import('./config/describe.ts');
  console.log(describeConfig(loadConfig(file)));
  return 0;
}

async function streamTests(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { streams: { type: 'string', multiple: true }, tests: { type: 'string', multiple: true }, json: { type: 'boolean', default: false } },
    allowPositionals: false,
  });
  const { runStreamTests } = await import('./stream/test-runner.ts');
  const result = await runStreamTests({ streams: values.streams ?? [], tests: values.tests ?? [], json: values.json ?? false });
  process.stdout.write(result.output.endsWith('\n') ? result.output : `${result.output}\n`);
  return result.exitCode;
}

async function streamGraph(args: string[]): Promise<number> {
  // `--streams a b` and `--streams a --streams b` both work: the paths after the first are positionals.
  const { values, positionals } = parseArgs({ args, options: { streams: { type: 'string', multiple: true }, config: { type: 'string' } }, allowPositionals: true });
  const { GraphError, readStreamFiles, streamsToDot } = await import('./stream/graph.ts');
  const paths = values.streams ? [...values.streams, ...positionals] : loadConfig(values.config ?? null).streams.directories;
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
